"""Split a shell command line into the simple commands it would run, or say it cannot (consent, issue 19).

Pure, no I/O. The consent rules (``protocol/consent.py``) are matched on each *part* a command line
runs, never on the whole string: ``git status; rm -rf ~`` is two parts, and a ``git`` rule allows only
the first. What this module returns:

- ``Parsed.parts``: every simple command that can run, with its argv (quotes removed), whether it runs
  under ``sudo``/``doas``, the environment assignments in front of it, its output redirections, and
  whether some of its words are only known at run time (``$X``, ``$(...)``, globs: ``Word.dynamic``).
  Commands inside ``$( )``, backticks, ``( )`` subshells, ``{ }`` groups, ``if``/``while``/``for``
  bodies, ``bash -c`` / ``sh -c`` / ``zsh -c`` payloads and ``find -exec`` are parts of their own.
  Wrappers that only run the rest (``env``, ``VAR=1``, ``nohup``, ``time``, ``command``, ``exec``,
  ``nice``, ``timeout``, ``stdbuf``, ``setsid``, ``xargs``, ``sudo``) are peeled off.
- ``Parsed.unknown``: a reason, when the line holds anything this parser does not follow (``eval``,
  ``case``, functions, arithmetic, process substitution, a heredoc fed to an interpreter, unbalanced
  quotes, invisible or control characters, a command name that is itself an expansion...). The caller
  must then FAIL CLOSED (ask the user); a wrong "allowed" is the one result that must never happen.

Why hand-written rather than a library: bashlex (the one maintained Python bash parser) is GPL-3,
and oh is MIT; and a full parser would still leave the decisions that matter here (what is a wrapper,
what runs a payload, what to refuse) to this module. This one only needs to find command boundaries
and the words of each command, and it refuses everything else.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import OhBaseError
from . import programs
from .programs import Launcher
from .programs import Options as _Spec

MAX_DEPTH = 8  # nested bash -c / $( ) levels followed; deeper is unknown
MAX_LEN = 64 * 1024
# `( ( ( ...`: each subshell level is a Python call; past this the line is unknown (asked), never a RecursionError
MAX_NEST = 64

_RESERVED_SKIP = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "]]"})
# Builtins that run code they are given (eval, trap, fc: history, compgen -C, bind -x, complete -C),
# define code (function, alias), change what a name runs (hash -p, enable -f) or evaluate arithmetic (let).
_UNFOLLOWED = frozenset(
    {
        "eval",
        "case",
        "esac",
        "function",
        "coproc",
        "let",
        "trap",
        "alias",
        "select",
        "((",
        "enable",
        "builtin",
        "fc",
        "compgen",
        "complete",
        "bind",
        "hash",
        "history",
    }
)
# Operators of [[ ]] that evaluate their operands as arithmetic (a[$(cmd)] in a variable runs cmd), and
# -v, which evaluates a subscript.
_ARITH_TEST = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"})
_ASSIGN = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_ASSIGN_AT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")  # the same, at a position
_NAME_BAD = re.compile(r"[{}*?\[\]~,=]")


class Unknown(OhBaseError):
    """The line holds something the parser does not follow: fail closed."""


@dataclass(frozen=True)
class Word:
    text: str  # the word with quotes removed (expansions kept as written)
    dynamic: bool = False  # known only at run time: $X, $(...), `...`, globs, $'...'
    assign: bool = False  # NAME=... / NAME[...]=... / NAME+=..., the name unquoted: bash assigns it


@dataclass(frozen=True)
class Part:
    """One simple command that would run."""

    words: tuple[Word, ...]
    sudo: bool = False  # runs as another user (sudo, doas)
    env: tuple[str, ...] = ()  # names assigned in front of it (VAR=1 cmd, env VAR=1 cmd)
    writes: tuple[str, ...] = ()  # output redirection targets (not /dev/null, not &N), as typed
    blind_writes: tuple[str, ...] = ()  # targets whose place is known only at run time ($X, globs, after cd)
    reads: tuple[str, ...] = ()  # input redirection sources (< f, <> f), as typed
    assigns: tuple[str, ...] = ()  # names it sets in the shell itself (x=1 alone, export, read, printf -v)
    assign_only: bool = False  # a command made only of assignments (its words are the assignments)
    runs_args: bool = False  # a program that runs a command given in its arguments (flock, chroot, watch...)
    stdin_code: bool = False  # an interpreter that reads its program from stdin (a pipe or heredoc)
    extra_args: bool = False  # xargs / find -exec: more arguments arrive at run time
    via: tuple[Word, ...] = ()  # the package runner's words when this is the program it runs (npx X, uv run X)
    after_cd: bool = False  # an earlier part of the same line changes directory (cd, pushd, popd)

    @property
    def argv(self) -> tuple[str, ...]:
        return tuple(w.text for w in self.words)

    @property
    def name(self) -> str:
        return self.words[0].text if self.words else ""

    def display(self) -> str:
        return ("sudo " if self.sudo else "") + " ".join(_quote(w.text) for w in self.words)


@dataclass(frozen=True)
class Parsed:
    parts: tuple[Part, ...] = ()
    unknown: str | None = None  # why the line cannot be followed (then ``parts`` is incomplete)
    moves: bool = False  # the line changes directory (cd, pushd, popd): later relative paths are blind


def _quote(text: str) -> str:
    if text and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


def parse(command: str) -> Parsed:
    """The parts of ``command``, or ``unknown`` with a reason (fail closed)."""
    try:
        parts = _parse(command, 0)
    except Unknown as exc:
        return Parsed((), str(exc))
    except RecursionError:  # a shape no bound above foresaw: unknown (fail closed), never a crash
        return Parsed((), "commands nested too deeply")
    return Parsed(tuple(parts), None, any(p.name.rsplit("/", 1)[-1] in _MOVERS for p in parts))


def _parse(command: str, depth: int) -> list[Part]:
    if depth > MAX_DEPTH:
        raise Unknown("commands nested too deeply")
    if len(command) > MAX_LEN:
        raise Unknown("command too long to check")
    for ch in command:
        cat = unicodedata.category(ch)
        if (cat in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp") and ch not in "\t\n") or ch == "\r":
            raise Unknown(f"the command holds an invisible or control character (U+{ord(ch):04X})")
    scanner = _Scanner(command, depth)
    raw = scanner.run()
    parts: list[Part] = []
    moved = False
    for cmd in raw:
        for part in _unwrap(cmd, depth):
            if moved:  # after a cd, a relative target is somewhere the gate cannot place before it runs
                part = replace(part, after_cd=True)
                rel = tuple(w for w in part.writes if not w.startswith(("/", "~")))
                if rel:
                    part = replace(
                        part,
                        writes=tuple(w for w in part.writes if w not in rel),
                        blind_writes=part.blind_writes + rel,
                    )
            parts.append(part)
            moved = moved or part.name.rsplit("/", 1)[-1] in _MOVERS
    return parts


_MOVERS = frozenset({"cd", "pushd", "popd"})


@dataclass
class _Raw:
    words: list[Word] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    blind_writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    heredoc: bool = False  # stdin from a heredoc / here-string
    piped_in: bool = False  # stdin from a pipe


class _Scanner:
    """Finds simple commands: words, operators, redirections; recurses into substitutions."""

    def __init__(self, text: str, depth: int) -> None:
        self.s = text
        self.i = 0
        self.depth = depth
        self.out: list[_Raw] = []
        self.heredocs: list[tuple[str, bool, bool, _Raw]] = []  # (delimiter, strip tabs, expand body, command)
        self.nest = 0  # open subshells `(`, counted across $( ) levels too (MAX_NEST)

    def run(self) -> list[_Raw]:
        self._list(None)
        return self.out

    # -- structure ------------------------------------------------------------------------------
    def _list(self, closer: str | None) -> None:
        cur = _Raw()
        skip_words = False  # inside `for x in ...` / the words of a `for` head: only substitutions matter
        piped = False
        while True:
            self._blanks()
            if self.i >= len(self.s):
                if closer is not None:
                    raise Unknown(f"unbalanced: no closing {closer!r}")
                self._finish(cur, skip_words)
                return
            c = self.s[self.i]
            if c == "#" and (self.i == 0 or self.s[self.i - 1] in " \t\n;&|()"):
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.i += 1
                continue
            if closer == ")" and c == ")":
                self.i += 1
                self._finish(cur, skip_words)
                return
            if c == ")":
                raise Unknown("unbalanced ')'")
            if c in ";&|\n":
                op = self._operator()
                if op in (";;", ";&", ";;&"):
                    raise Unknown("case statements are not followed")
                self._finish(cur, skip_words)
                cur, skip_words = _Raw(), False
                piped = op in ("|", "|&")
                cur.piped_in = piped
                if op == "\n":
                    self._heredoc_bodies()
                continue
            if c == "(":
                if cur.words:
                    raise Unknown("function definitions and '(' inside a command are not followed")
                if self.s.startswith("((", self.i):
                    raise Unknown("arithmetic commands (( )) are not followed")
                if self.nest >= MAX_NEST:
                    raise Unknown(f"subshells nested more than {MAX_NEST} deep")
                self.i += 1
                self.nest += 1
                self._list(")")
                self.nest -= 1
                continue
            if c in "<>" or (c.isdigit() and self._redirect_ahead()) or (c == "&" and self.s.startswith("&>", self.i)):
                self._redirect(cur)
                continue
            word = self._word()
            if not cur.words and not skip_words:
                if word.text in _UNFOLLOWED and not word.dynamic:
                    raise Unknown(f"'{word.text}' is not followed by the command checker")
                if word.text in ("for",) and not word.dynamic:
                    skip_words = True  # the loop head: its words are data (substitutions in them still count)
                    continue
                if word.text in _RESERVED_SKIP and not word.dynamic:
                    continue
                if word.text == "[[":
                    self._test_expr()  # a test: words are data; $( ) inside is recorded
                    skip_words = True
                    continue
            if skip_words:
                continue
            cur.words.append(word)

    def _test_expr(self) -> None:
        """The words of ``[[ ... ]]`` up to ``]]``: ``&&``, ``||``, ``<``, ``>``, ``( )`` are its own operators
        here, not the shell's; arithmetic comparisons and ``-v`` are refused (they evaluate code)."""
        s = self.s
        regex = False
        while True:
            self._blanks()
            if self.i >= len(s):
                raise Unknown("unbalanced: no closing ']]'")
            if s.startswith("]]", self.i) and (self.i + 2 >= len(s) or s[self.i + 2] in " \t\n;&|)"):
                self.i += 2
                return
            c = s[self.i]
            if c == "\n":
                raise Unknown("a newline inside [[ ]] is not followed")
            if c in "&|()<>!":
                if regex:
                    raise Unknown("a regular expression with ( ) | < > in [[ =~ ]] is not followed")
                self.i += 2 if s.startswith(("&&", "||"), self.i) else 1
                continue
            word = self._word()
            if regex and self.i < len(s) and s[self.i] not in " \t":
                raise Unknown("a regular expression with ( ) | < > in [[ =~ ]] is not followed")
            regex = word.text == "=~" and not word.dynamic
            if word.text in _ARITH_TEST and not word.dynamic:
                raise Unknown(f"[[ {word.text} ]] evaluates its operands as arithmetic (which can run commands)")

    def _finish(self, cur: _Raw, skipped: bool) -> None:
        if cur.words and not skipped:
            self.out.append(cur)
        elif (cur.writes or cur.blind_writes or cur.reads) and not skipped:  # a bare `> f` truncates a file
            self.out.append(_Raw([Word(":")], cur.writes, cur.blind_writes, cur.reads))

    def _blanks(self) -> None:
        while self.i < len(self.s):
            if self.s[self.i] in " \t":
                self.i += 1
            elif self.s.startswith("\\\n", self.i):
                self.i += 2
            else:
                return

    def _operator(self) -> str:
        for op in (";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|", "\n"):
            if self.s.startswith(op, self.i):
                self.i += len(op)
                return op
        raise Unknown("unexpected operator")  # pragma: no cover - the caller checked the first char

    def _redirect_ahead(self) -> bool:
        j = self.i
        while j < len(self.s) and self.s[j].isdigit():
            j += 1
        return j < len(self.s) and self.s[j] in "<>" and (self.i == 0 or self.s[self.i - 1] in " \t;&|()\n")

    def _redirect(self, cur: _Raw) -> None:
        while self.s[self.i].isdigit():
            self.i += 1
        for op in ("<<<", "<<-", "<<", "&>>", "&>", ">>", ">|", ">&", "<&", "<>", ">", "<"):
            if self.s.startswith(op, self.i):
                break
        self.i += len(op)
        if op in (">", "<") and self.i < len(self.s) and self.s[self.i] == "(":
            raise Unknown("process substitution <( ) / >( ) is not followed")
        self._blanks()
        if self.i >= len(self.s) or self.s[self.i] in ";&|\n()<>":
            raise Unknown("a redirection without a target")
        if op in ("<<", "<<-"):
            start = self.i
            target = self._word()
            raw = self.s[start : self.i]
            if "$" in raw or "`" in raw:  # bash's delimiter for <<$'E' is E: refuse rather than re-implement
                raise Unknown("a heredoc delimiter with $ or ` in it is not followed")
            quoted = any(q in raw for q in "'\"\\")
            self.heredocs.append((target.text, op == "<<-", not quoted, cur))
            cur.heredoc = True
            return
        target = self._word()
        if op == "<<<":
            cur.heredoc = True
            return
        if op in (">&", "<&") and re.fullmatch(r"[0-9]+-?|-", target.text):
            return
        if op in ("<", "<>"):
            cur.reads.append(target.text)  # what it opens counts too: < ~/.local/state/oh/sessions/x.json
        if op in ("<",):
            return
        if target.text == "/dev/null" and not target.dynamic:
            return
        if op in ("<&",):
            return
        if target.dynamic:  # `> $F`, `> *.txt`: where it writes is known only at run time
            cur.blind_writes.append(target.text)
        else:
            cur.writes.append(target.text)

    def _heredoc_bodies(self) -> None:
        pending, self.heredocs = self.heredocs, []
        for delim, strip, expand, _cmd in pending:
            while True:
                end = self.s.find("\n", self.i)
                line = self.s[self.i :] if end < 0 else self.s[self.i : end]
                self.i = len(self.s) if end < 0 else end + 1
                if (line.lstrip("\t") if strip else line) == delim:
                    break
                if expand and ("$(" in line or "`" in line or "${" in line or "$[" in line):
                    raise Unknown("a heredoc whose body runs command substitutions is not followed")
                if expand and line.endswith("\\"):
                    raise Unknown("a heredoc line continued with a backslash is not followed")
                if end < 0:
                    raise Unknown(f"unterminated heredoc (no line {delim!r})")

    # -- words ----------------------------------------------------------------------------------
    def _word(self) -> Word:
        buf: list[str] = []
        dynamic = False
        brace = False
        s = self.s
        assign = _ASSIGN_AT.match(s, self.i) is not None
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\n;&|<>()":
                break
            if c == "\\":
                if self.i + 1 >= len(s):
                    self.i += 1
                    break
                if s[self.i + 1] != "\n":
                    buf.append(s[self.i + 1])
                self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise Unknown("unbalanced single quote")
                buf.append(s[self.i + 1 : end])
                self.i = end + 1
            elif c == '"':
                self.i += 1
                text, dyn = self._double()
                buf.append(text)
                dynamic = dynamic or dyn
            elif c == "$":
                text, dyn = self._dollar()
                buf.append(text)
                dynamic = dynamic or dyn
            elif c == "`":
                buf.append(self._backtick())
                dynamic = True
            else:
                if c in "*?" or (c == "[" and _closes(s, self.i)) or (c == "~" and not buf):
                    dynamic = True  # globs and ~: the word changes at run time
                brace = brace or c == "{"
                buf.append(c)
                self.i += 1
        text = "".join(buf)
        if brace and re.search(r"\{[^{}]*(,|\.\.)", text):
            dynamic = True  # brace expansion: {rm,-rf,x} is three words at run time ({} alone is not)
        return Word(text, dynamic, assign)

    def _double(self) -> tuple[str, bool]:
        buf: list[str] = []
        dynamic = False
        s = self.s
        while True:
            if self.i >= len(s):
                raise Unknown("unbalanced double quote")
            c = s[self.i]
            if c == '"':
                self.i += 1
                return "".join(buf), dynamic
            if c == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    buf.append(s[self.i + 1])
                self.i += 2
            elif c == "$":
                text, dyn = self._dollar(in_double=True)
                buf.append(text)
                dynamic = dynamic or dyn
            elif c == "`":
                buf.append(self._backtick())
                dynamic = True
            else:
                buf.append(c)
                self.i += 1

    def _dollar(self, in_double: bool = False) -> tuple[str, bool]:
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if s.startswith("$((", i) or nxt == "[":
            raise Unknown("arithmetic expansion $(( )) / $[ ] is not followed")
        if nxt == "(":
            self.i = i + 2
            self._sub_list()
            return s[i : self.i], True
        if nxt == "{":
            end = s.find("}", i + 2)
            if end < 0:
                raise Unknown("unbalanced ${")
            inner = s[i + 2 : end]
            if any(x in inner for x in ("$", "`", "(", "{")):
                raise Unknown("nested expansions inside ${ } are not followed")
            _check_braced(inner)
            self.i = end + 1
            return s[i : self.i], True
        if nxt == "'" and not in_double:
            # ANSI-C quoting: its escapes can spell anything ($'\x72m' is rm); the word is dynamic
            j = i + 2
            while j < len(s) and s[j] != "'":
                j += 2 if s[j] == "\\" else 1
            if j >= len(s):
                raise Unknown("unbalanced $'")
            self.i = j + 1
            return s[i : self.i], True
        if nxt == '"' and not in_double:  # $"..." (locale translation): treat as a double-quoted string
            self.i = i + 1
            return "", False
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]").match(s, i + 1)
        if m:
            self.i = m.end()
            return s[i : self.i], True
        self.i = i + 1
        return "$", False

    def _sub_list(self) -> None:
        """The body of ``$( ... )`` up to its ``)``: parsed as commands of their own."""
        if self.depth + 1 > MAX_DEPTH:
            raise Unknown("commands nested too deeply")
        inner = _Scanner(self.s, self.depth + 1)
        inner.i, inner.nest = self.i, self.nest
        inner._list(")")
        if inner.heredocs:
            raise Unknown("a heredoc inside $( ) is not followed")
        self.out.extend(inner.out)
        self.i = inner.i

    def _backtick(self) -> str:
        s = self.s
        j = self.i + 1
        body: list[str] = []
        while j < len(s) and s[j] != "`":
            if s[j] == "\\" and j + 1 < len(s) and s[j + 1] in "`$\\":
                body.append(s[j + 1])
                j += 2
            else:
                body.append(s[j])
                j += 1
        if j >= len(s):
            raise Unknown("unbalanced backtick")
        inner = _Scanner("".join(body), self.depth + 1)
        inner.nest = self.nest
        if self.depth + 1 > MAX_DEPTH:
            raise Unknown("commands nested too deeply")
        self.out.extend(inner.run())
        text = s[self.i : j + 1]
        self.i = j + 1
        return text


_PLAIN_PARAM = re.compile(r"\A(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])")


def _check_braced(inner: str) -> None:
    """Refuse the ${ } forms that evaluate code: a subscript or an offset (arithmetic: a[$(cmd)] inside a
    variable runs cmd), ${!x} (indirection: the same), ${x@P} (prompt expansion runs $( )), and ${x=v} /
    ${x:=v} (assigns a variable)."""
    if inner.startswith("#") and len(inner) > 1:
        inner = inner[1:]
    if inner.startswith("!"):
        raise Unknown("indirect expansion ${!x} is not followed")
    m = _PLAIN_PARAM.match(inner)
    if m is None:
        raise Unknown(f"the expansion ${{{inner[:40]}}} is not followed")
    rest = inner[m.end() :]
    if rest.startswith("["):
        sub, _, rest = rest[1:].partition("]")
        if not re.fullmatch(r"[0-9]+|[@*]", sub):
            raise Unknown("an array subscript is arithmetic (it can run commands): not followed")
    if rest.startswith(":") and not rest.startswith((":-", ":+", ":?", ":=")):
        raise Unknown("a ${x:offset} is arithmetic (it can run commands): not followed")
    if rest.startswith(("=", ":=")):
        raise Unknown("${x=value} assigns a variable: not followed")
    if rest.startswith("@") and rest[1:2] not in ("Q", "U", "u", "L", "a", "K", "k", "A", "E"):
        raise Unknown(f"${{x{rest[:2]}}} is not followed (@P expands a prompt, which runs commands)")


# ------------------------------------------------------------------------------------ options
def _long(name: str, spec: _Spec) -> tuple[str, str]:
    """The full long option a (possibly abbreviated) name stands for, and its class."""
    table = [(n, "flag") for n in spec.long_flags] + [(n, "req") for n in spec.long_req]
    table += [(n, "opt") for n in spec.long_opt]
    exact = [t for t in table if t[0] == name]
    if exact:
        return exact[0]
    hits = [t for t in table if t[0].startswith(name)]
    if len(hits) != 1:
        raise Unknown(f"option --{name} is not known to the command checker")
    return hits[0]


def _options(words: list[Word], spec: _Spec) -> tuple[list[tuple[str, str | None]], list[Word]]:
    """Read the options in front of a wrapper's command: ((option, value), ...), the words left.
    An option only known at run time, or one the spec does not list, is refused (fail closed)."""
    opts: list[tuple[str, str | None]] = []
    rest = list(words)
    while rest:
        w = rest[0]
        t = w.text
        if w.dynamic and t[:1] in "$`-*?[{~":  # `$X` or a glob may turn into an option at run time
            raise Unknown(f"the option {t!r} is only known at run time")
        if t == "--":
            rest.pop(0)
            break
        if not (t.startswith("-") or (spec.plus and t.startswith("+") and len(t) > 1)) or t == "-":
            break
        rest.pop(0)
        if t.startswith("--"):
            name, eq, value = t[2:].partition("=")
            full, cls = _long(name, spec)
            if cls == "req" and not eq:
                if not rest:
                    raise Unknown(f"option --{full} without its value")
                value = rest.pop(0).text
            elif cls == "flag" and eq:
                raise Unknown(f"option --{full} takes no value")
            opts.append(("--" + full, value if (eq or cls == "req") else None))
            continue
        j = 1
        while j < len(t):
            c = t[j]
            if c in spec.flags:
                opts.append(("-" + c, None))
                j += 1
            elif c in spec.req or c in spec.opt:
                attached: str | None = t[j + 1 :] or None
                if attached is None and c in spec.req:
                    if not rest:
                        raise Unknown(f"option -{c} without its value")
                    attached = rest.pop(0).text
                opts.append(("-" + c, attached))
                break
            else:
                raise Unknown(f"option -{c} is not known to the command checker")
    return opts, rest


# bash/sh/zsh: -o/-O take a value; --rcfile/--init-file run a file (refused below)
_SHELL = _Spec(
    plus=True,
    flags="abcefhiklmnprstuvxBCDEHPT",
    req="oO",
    long_flags=(
        "debugger",
        "dump-po-strings",
        "dump-strings",
        "help",
        "login",
        "noediting",
        "noprofile",
        "norc",
        "posix",
        "pretty-print",
        "restricted",
        "verbose",
        "version",
    ),
    long_req=("rcfile", "init-file"),
)
# Builtins that assign the variables they name (their arguments are assignments or variable names).
_DECLARERS = frozenset({"declare", "typeset", "local", "export", "readonly"})
_NAMERS = frozenset({"read", "mapfile", "readarray", "printf", "getopts", "unset", "wait", "test", "["})
_VAR_SUBSCRIPT = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\[([^\]]*)\]")


@dataclass
class _Unwrap:
    """What the wrappers peeled so far add to the command they run."""

    sudo: bool = False
    env: list[str] = field(default_factory=list)
    extra: bool = False
    writes: list[str] = field(default_factory=list)


def _wrapper(base: str, words: list[Word], st: _Unwrap) -> list[Word] | None:
    """The words a wrapper runs (its options peeled), None if ``base`` is no wrapper, [] if it runs nothing."""
    wrap = programs.lookup(base).wrapper
    if wrap is None:
        return None
    rest = words[1:]
    if wrap.number_first and rest and re.fullmatch(r"-[0-9]+|--[0-9]+", rest[0].text):
        rest = rest[1:]  # the old `nice -10 cmd`
    opts, rest = _options(rest, wrap.options)
    names = {o for o, _ in opts}
    if wrap.as_user:
        if names & {"-s", "-i", "-e", "--shell", "--login", "--edit"}:
            raise Unknown(f"{base} -s / -i / -e (a root shell or editor) is not followed")  # pragma: no cover
        st.sudo = True
        if not rest:
            raise Unknown(f"{base} without a command is not followed")
    if wrap.sets_env:
        rest = _env_words(names, rest, st)
    if names & set(wrap.runs_nothing_with):
        return []  # a lookup (command -v) or another process (ionice -p): runs nothing
    st.writes += [v for o, v in opts if o in wrap.output_options and v]
    rest = rest[wrap.skip_words :]  # timeout DURATION
    if wrap.feeds_input:
        st.extra = True
        return rest or [Word("echo")]
    return rest


def _env_words(names: set[str], rest: list[Word], st: _Unwrap) -> list[Word]:
    """env's NAME=value words (to the command's environment) and the command after them."""
    if names & {"-S", "--split-string"}:
        raise Unknown("env -S (a split command string) is not followed")
    if rest and rest[0].text == "-" and not rest[0].dynamic:
        rest = rest[1:]  # `env - cmd` is `env -i cmd`
    while rest and rest[0].assign:
        st.env.append(_assigned_name(rest.pop(0).text))
    if rest and rest[0].dynamic:
        raise Unknown(f"env runs {rest[0].text!r}, only known at run time")
    return rest


def _assigned_name(text: str) -> str:
    m = _VAR_SUBSCRIPT.match(text)
    if m is not None and not re.fullmatch(r"[0-9]+", m.group(1)):
        raise Unknown("an assignment to an array element evaluates its subscript (it can run commands)")
    return text.split("=", 1)[0].split("[", 1)[0].rstrip("+")


def _unwrap(raw: _Raw, depth: int) -> list[Part]:
    words = list(raw.words)
    st = _Unwrap()
    while words:
        assigns: list[Word] = []
        while words and words[0].assign:
            assigns.append(words.pop(0))
        names = [_assigned_name(a.text) for a in assigns]
        if not words:
            if not assigns:
                break
            # only assignments: they stay in the shell (PATH=..., PROMPT_COMMAND=..., OPTIND=x): a part of its own
            return [_part(raw, st, tuple(assigns), assigns=tuple(names), assign_only=True)]
        st.env += names
        w = words[0]
        if w.dynamic or not w.text:
            raise Unknown(f"the command name {w.text!r} is only known at run time")
        base = w.text.rsplit("/", 1)[-1]
        if programs.lookup(base).role == "shell":
            inner = _shell_payload(words, depth)
            if inner is not None:
                return _payload_parts(inner, raw, st, base)
        rest = _wrapper(base, words, st)
        if rest is None:
            break
        if not rest:
            return [_part(raw, st, tuple(words[:1]))] if raw.writes or raw.blind_writes or st.writes else []
        words = rest
    if not words:
        return [_part(raw, st, (Word(":"),))] if raw.writes or raw.blind_writes else []
    return _simple(words, raw, st, depth)


def _part(raw: _Raw, st: _Unwrap, words: tuple[Word, ...], **kw: Any) -> Part:
    return Part(
        words,
        st.sudo,
        tuple(st.env),
        tuple(raw.writes) + tuple(st.writes),
        tuple(raw.blind_writes),
        tuple(raw.reads),
        extra_args=st.extra,
        **kw,
    )


def _payload_parts(inner: list[Part], raw: _Raw, st: _Unwrap, base: str) -> list[Part]:
    out = [
        replace(p, sudo=p.sudo or st.sudo, env=tuple(st.env) + p.env, extra_args=p.extra_args or st.extra)
        for p in inner
    ]
    if raw.writes or raw.blind_writes:  # the shell's own redirections apply to the payload's output
        out.append(_part(raw, st, (Word(base),)))
    return out


def _simple(words: list[Word], raw: _Raw, st: _Unwrap, depth: int) -> list[Part]:
    """The part for a command that is no wrapper (plus what find -exec runs)."""
    head = words[0]
    base = head.text.rsplit("/", 1)[-1]
    if head.text != "[" and _NAME_BAD.search(head.text):
        raise Unknown(f"the command name {head.text!r} is expanded by the shell")
    if base in _UNFOLLOWED:
        raise Unknown(f"'{base}' is not followed by the command checker")
    assigns = _builtin_assigns(base, words) if "/" not in head.text else ()
    if base in ("set", "shopt") and _turns_history_on(words[1:]):
        raise Unknown(f"{base} turning the shell's history on (then `!!` runs text the gate never saw)")
    if base in ("set", "shopt") and _turns_keyword_on(words[1:]):
        raise Unknown(f"{base} -k: later `cmd NAME=value` words become environment (`git status GIT_DIR=x`)")
    if base in (".", "source") and len(words) > 1 and _STDIN_FILE.fullmatch(words[1].text):
        raise Unknown(f"{base} reading its commands from standard input is not followed")
    rec = programs.lookup(base)
    interp = rec.role in ("shell", "interpreter")
    stdin_code = False
    if interp:
        args = [x.text for x in words[1:]]
        from_stdin = rec.role == "shell" and _shell_reads_stdin(words)
        has_program = not from_stdin and (
            any(not a.startswith("-") for a in args) or any(a in ("-c", "-e", "-m", "--eval", "-E", "-r") for a in args)
        )
        if raw.heredoc and not has_program:
            raise Unknown(f"{base} reading its program from a heredoc is not followed")
        stdin_code = bool(raw.piped_in and not has_program) or (from_stdin and raw.piped_in)
    out = [_part(raw, st, tuple(words), assigns=assigns, runs_args=rec.role == "runner")]
    if stdin_code:
        out[0] = replace(out[0], stdin_code=True)
    if rec.exec_options:
        out.extend(_find_exec(words, rec.exec_options, st.sudo, depth))
    if rec.launcher is not None:
        out.extend(_package_parts(base, rec.launcher, words, st, depth))
    return out


def _builtin_assigns(base: str, words: list[Word]) -> tuple[str, ...]:
    """The variables a builtin sets in the shell; refuses what evaluates code (declare -i/-n, a subscript,
    mapfile -C)."""
    args = words[1:]
    if base in _DECLARERS:
        names = []
        for w in args:
            t = w.text
            if t.startswith(("-", "+")) and not w.dynamic:
                if any(c in t[1:] for c in "inaA") and t != "--":
                    raise Unknown(f"{base} {t} makes values evaluated (integers, references, arrays): not followed")
                continue
            if w.dynamic and "=" not in t:
                raise Unknown(f"{base} {t!r}: a name only known at run time")
            names.append(_assigned_name(t if "=" in t else t + "="))
        return tuple(names)
    if base in _NAMERS:
        if base in ("mapfile", "readarray") and any(w.text.startswith("-") and "C" in w.text for w in args):
            raise Unknown(f"{base} -C runs a callback: not followed")
        for w in args:
            m = _VAR_SUBSCRIPT.match(w.text)
            if m is not None and not re.fullmatch(r"[0-9]+|[@*]", m.group(1)):
                raise Unknown(f"{base} {w.text!r}: a subscript is arithmetic (it can run commands)")
        return tuple(w.text for w in args if not w.dynamic and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w.text))
    return ()


def _turns_history_on(args: list[Word]) -> bool:
    """set -o history / -H / -o histexpand, shopt -o -s history (an option spelled at run time counts)."""
    for i, w in enumerate(args):
        t = w.text
        if w.dynamic and t[:1] in "$`-+":
            return True
        if t.startswith("-") and not t.startswith("--") and "H" in t:
            return True
        if t.startswith("hist") or (t in ("-o", "+o") and i + 1 < len(args) and args[i + 1].dynamic):
            return True
    return False


def _turns_keyword_on(args: list[Word]) -> bool:
    """set -k / -o keyword, shopt -o -s keyword: every NAME=value argument of a later command goes into its
    environment, so a rule's "data" argument becomes PATH, GIT_CONFIG_PARAMETERS... (redteam)."""
    for w in args:
        t = w.text
        if t == "--":
            return False
        if t.startswith("-") and not t.startswith("--") and "k" in t and not w.dynamic:
            return True
        if t.startswith("keyw"):  # set -o keyword, shopt -o -s keyword
            return True
    return False


_STDIN_FILE = re.compile(r"-|/+dev/+stdin|/+dev/+fd/+0|/+proc/+(?:self|thread-self|[0-9]+)/+fd/+0")


def _shell_reads_stdin(words: list[Word]) -> bool:
    """``sh``, ``sh -s``, ``sh -``, ``sh /dev/stdin``, ``sh /dev/fd/0``: the program comes from stdin."""
    try:
        opts, rest = _options(words[1:], _SHELL)
    except Unknown:
        return True
    if any(o == "-s" for o, _ in opts) or not rest:
        return True
    first = rest[0].text
    return _STDIN_FILE.fullmatch(first) is not None


def _shell_payload(words: list[Word], depth: int) -> list[Part] | None:
    """The parts of ``bash -c 'cmd'`` (options like -l, -e, -o x, -O x in front), else None."""
    opts, rest = _options(words[1:], _SHELL)
    names = {o for o, _ in opts}
    if names & {"--rcfile", "--init-file"}:
        raise Unknown("a shell with --rcfile / --init-file runs that file: not followed")
    if "-c" not in names:
        return None
    if not rest:
        raise Unknown("sh -c without a command")
    if rest[0].dynamic:
        raise Unknown(f"{words[0].text} -c with a payload only known at run time is not followed")
    return _parse(rest[0].text, depth + 1)


def _find_exec(words: list[Word], exec_options: tuple[str, ...], sudo: bool, depth: int) -> list[Part]:
    out: list[Part] = []
    i = 1
    while i < len(words):
        if words[i].text in exec_options:
            j = i + 1
            inner: list[Word] = []
            while j < len(words) and words[j].text not in (";", "+"):
                inner.append(words[j])
                j += 1
            if not inner:
                raise Unknown("find -exec without a command")
            if inner[0].dynamic:
                raise Unknown("find -exec with a command only known at run time")
            sub = _unwrap(_Raw(inner), depth + 1)
            out.extend(replace(p, sudo=p.sudo or sudo, extra_args=True) for p in sub)
            i = j
        i += 1
    return out


def _closes(s: str, i: int) -> bool:
    """Whether the ``[`` at ``i`` has a ``]`` later in the same word (then it is a glob bracket)."""
    m = re.compile(r"[^\s;&|<>()]*").match(s, i + 1)
    return m is not None and "]" in m.group(0)


# ------------------------------------------------------------------------------- package runners
# npm's own parser (nopt) and npx's front loop (bin/npx-cli.js), for the options listed: booleans, and
# options taking a value. `-p` is --package for npx only; npx-cli resolves npm's shorthands first.
_NPM_BOOL = frozenset(
    (
        "yes offline prefer-offline prefer-online workspaces include-workspace-root ignore-scripts "
        "foreground-scripts legacy-peer-deps no-install quiet version help silent verbose global force json "
        "dry-run audit fund progress"
    ).split()
)
_NPM_VALUE = frozenset("package call workspace prefix registry cache userconfig loglevel".split())
_NPM_SHORT = {
    "y": "yes",
    "q": "quiet",
    "v": "version",
    "h": "help",
    "s": "silent",
    "d": "verbose",
    "dd": "verbose",
    "ddd": "verbose",
    "c": "call",
    "w": "workspace",
    "ws": "workspaces",
    "g": "global",
    "f": "force",
}


def _npm_key(text: str, npx: bool) -> tuple[str, bool]:
    """(npm's name for an option word, whether its value is attached with =); unknown ones are refused."""
    key, eq, _ = text.lstrip("-").partition("=")
    key = "package" if npx and key == "p" else _NPM_SHORT.get(key, key)
    if key in _NPM_BOOL or key in _NPM_VALUE or key == "no":
        return key, bool(eq)
    if key.startswith("no-") and key[3:] in _NPM_BOOL:
        return key, bool(eq)
    raise Unknown(f"npm option {text!r} is not known to the command checker")


def _npx_split(words: list[Word]) -> list[Word]:
    """Where npx-cli puts its `--`: before the first word it takes as positional. Any option that is not one
    of npm's booleans takes the next word as its value when that word does not start with `-` (`--no rm x`)."""
    i = 0
    while i < len(words):
        t = words[i].text
        if words[i].dynamic and t[:1] in "$`-*?[{~":
            raise Unknown(f"the option {t!r} is only known at run time")
        if t == "--":
            return words
        if not t.startswith("-"):
            return [*words[:i], Word("--"), *words[i:]]
        key, eq = _npm_key(t, True)
        nxt = words[i + 1].text if i + 1 < len(words) else "-"
        if not eq and key not in _NPM_BOOL and (key in _NPM_VALUE or not nxt.startswith("-")):
            i += 1
        i += 1
    return words


def _nopt(words: list[Word], npx: bool) -> tuple[list[Word], dict[str, list[str]]]:
    """npm's option parser: options anywhere before `--` (what it takes is not passed on), the positional
    words in order; after `--` everything is positional."""
    pos: list[Word] = []
    opts: dict[str, list[str]] = {}
    rest = list(words)
    while rest:
        w = rest.pop(0)
        t = w.text
        if w.dynamic and t[:1] in "$`-*?[{~":
            raise Unknown(f"the option {t!r} is only known at run time")
        if t == "--":
            pos += rest
            break
        if not t.startswith("-") or t == "-":
            pos.append(w)
            continue
        key, eq = _npm_key(t, npx)
        if key in _NPM_VALUE and not eq:
            if not rest or rest[0].text.startswith("-"):
                raise Unknown(f"npm option {t!r} without its value")
            opts.setdefault(key, []).append(rest.pop(0).text)
        else:
            opts.setdefault(key, []).append(t.partition("=")[2])
            if not eq and rest and rest[0].text in ("true", "false"):
                rest.pop(0)  # nopt: a boolean takes a following `true`/`false` (`npm exec --yes true rm x` runs rm)
            elif not eq and rest and rest[0].dynamic:
                raise Unknown(f"npm option {t!r} before a word only known at run time (it may be its value)")
    return pos, opts


def _npm_run(base: str, ln: Launcher, args: list[Word]) -> tuple[list[Word], str | None] | None:
    """npx / npm exec / npm x: (the command, a --call string)."""
    if ln.exec_subcommands:
        try:
            pos, opts = _nopt(args, False)
        except Unknown:
            if any(w.text in ln.exec_subcommands for w in args):
                raise
            return None
        if not pos or pos[0].text not in ln.exec_subcommands:
            return None
        pos = pos[1:]
    else:
        pos, opts = _nopt(_npx_split(args), True)
    call = opts.get("call", [None])[-1]
    if not pos and call is None:
        raise Unknown(f"{base} exec without a command opens a shell")
    if pos and "package" not in opts:
        pos = [Word(_bin_name(pos[0].text), pos[0].dynamic), *pos[1:]]  # npx cowsay@1 hi runs cowsay
    return pos, call


def _bin_name(spec: str) -> str:
    """The program a package spec runs: `cowsay@1.2` -> cowsay, `@scope/x@2` -> @scope/x, `ruff>=0.1` -> ruff."""
    head, at, _ = spec[1:].partition("@") if spec.startswith("@") else spec.partition("@")
    name = ("@" + head if spec.startswith("@") else head) if at else spec
    return re.split(r"[\[=<>!~;]", name, maxsplit=1)[0] or spec


def _runner_command(base: str, ln: Launcher, args: list[Word]) -> tuple[list[Word], str | None] | None:
    """What a package runner runs: (its argv, a shell string it runs), or None when it runs nothing."""
    if ln.nopt:
        return _npm_run(base, ln, args)
    if ln.direct is not None:
        opts, rest = _options(args, ln.direct)
        return _named_program(base, ln, rest, opts, fetched=True)
    glob, subs = ln.globals, dict(ln.subcommands)
    try:
        opts, rest = _options(args, glob) if glob is not None else ([], list(args))
    except Unknown:
        if any(w.text in {k.split()[0] for k in subs} for w in args):
            raise
        return None
    if len(rest) > 1 and rest[0].text == "tool" and glob is not None:  # `uv tool -q run`: globals go anywhere
        between, after = _options(rest[1:], glob)
        opts, rest = opts + between, [rest[0], *after]
    words = [w.text for w in rest]
    for sub, spec in subs.items():
        n = len(sub.split())
        if words[:n] == sub.split() and not any(w.dynamic for w in rest[:n]):
            more, rest = _options(rest[n:], spec)
            return _named_program(base, ln, rest, opts + more, fetched=sub in ln.fetched)
    if rest and rest[0].dynamic:
        raise Unknown(f"{base} {rest[0].text!r}: a subcommand only known at run time")
    if ln.own_commands and rest and rest[0].text not in ln.own_commands:
        return _named_program(base, ln, rest, opts, fetched=False)  # `pnpm jest`: a script or the project's program
    return None


def _named_program(
    base: str, ln: Launcher, rest: list[Word], opts: list[tuple[str, str | None]], fetched: bool
) -> tuple[list[Word], str | None]:
    names = {o for o, _ in opts}
    call = next((v for o, v in opts if o in ln.command_options and v is not None), None)
    if ln.after_dashdash:  # mise exec TOOL@VERSION... -- COMMAND
        i = next((k for k, w in enumerate(rest) if w.text == "--" and not w.dynamic), None)
        rest = [] if i is None else rest[i + 1 :]
    elif rest and rest[0].text == "--" and not rest[0].dynamic:
        rest = rest[1:]
    if names & set(ln.shell_mode):
        if any(w.dynamic for w in rest):
            raise Unknown(f"{base} --shell-mode with words only known at run time")
        call, rest = " ".join(w.text for w in rest), []  # shell mode: the words are a shell command
    if ln.shell_words and rest and any(re.search(r"[\s;&|<>()$`\\\"'*?]", w.text) for w in rest):
        raise Unknown(f"{base} exec runs its words in a shell: not followed with shell syntax in them")
    if not rest and call is None:
        raise Unknown(f"{base} without a command to run is not followed")
    if rest and ln.env_scripts:
        if rest[0].text.startswith(("+", "-")):
            raise Unknown(f"{base} run with a matrix selection is not followed")
        name = rest[0].text.rsplit(":", 1)[-1] if "/" not in rest[0].text else rest[0].text
        rest = [Word(name, rest[0].dynamic), *rest[1:]]
    if rest and fetched and not names & {"--from", "--spec", "--package", "-p"}:
        rest = [Word(_bin_name(rest[0].text), rest[0].dynamic), *rest[1:]]
    if rest:  # the program word is never an assignment to the runner (`uv run A=1` runs a program `A=1`)
        rest = [replace(rest[0], assign=False), *rest[1:]]
    if rest and names & set(ln.module_options):
        rest = [Word("python"), Word("-m"), *rest]
    return rest, call


def _package_parts(base: str, ln: Launcher, words: list[Word], st: _Unwrap, depth: int) -> list[Part]:
    """The parts a package runner runs (its own part is made by the caller)."""
    got = _runner_command(base, ln, words[1:])
    if got is None:
        return []
    argv, call = got
    if depth + 1 > MAX_DEPTH:  # `npx npx npx ...`: followed iteratively by nothing, so bounded like `bash -c`
        raise Unknown(f"package runners nested more than {MAX_DEPTH} deep")
    inner: list[Part] = []
    if call is not None:
        inner += _parse(call, depth + 1)
    if argv:
        if argv[0].dynamic:
            raise Unknown(f"{base} runs {argv[0].text!r}, only known at run time")
        inner += _unwrap(_Raw(list(argv)), depth + 1)
    return [
        replace(
            p,
            sudo=p.sudo or st.sudo,
            env=tuple(st.env) + p.env,
            extra_args=p.extra_args or st.extra,
            via=p.via or tuple(words),
        )
        for p in inner
    ]
