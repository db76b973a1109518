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
from dataclasses import dataclass, field

MAX_DEPTH = 8  # nested bash -c / $( ) levels followed; deeper is unknown
MAX_LEN = 64 * 1024

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox-sh"})
INTERPRETERS = SHELLS | frozenset(
    {
        "fish",
        "csh",
        "tcsh",
        "python",
        "python2",
        "python3",
        "pypy",
        "pypy3",
        "node",
        "nodejs",
        "deno",
        "bun",
        "perl",
        "ruby",
        "php",
        "lua",
        "luajit",
        "tclsh",
        "Rscript",
        "osascript",
        "pwsh",
        "powershell",
        "irb",
        "jshell",
    }
)
_RESERVED_SKIP = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "]]"})
_UNFOLLOWED = frozenset(
    {"eval", "case", "esac", "function", "coproc", "let", "trap", "alias", "select", "((", "enable", "builtin"}
)
_ASSIGN = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_NAME_BAD = re.compile(r"[{}*?\[\]~,=]")


class Unknown(Exception):
    """The line holds something the parser does not follow: fail closed."""


@dataclass(frozen=True)
class Word:
    text: str  # the word with quotes removed (expansions kept as written)
    dynamic: bool = False  # known only at run time: $X, $(...), `...`, globs, $'...'


@dataclass(frozen=True)
class Part:
    """One simple command that would run."""

    words: tuple[Word, ...]
    sudo: bool = False  # runs as another user (sudo, doas)
    env: tuple[str, ...] = ()  # names assigned in front of it (VAR=1 cmd, env VAR=1 cmd)
    writes: tuple[str, ...] = ()  # output redirection targets (not /dev/null, not &N)
    stdin_code: bool = False  # an interpreter that reads its program from stdin (a pipe or heredoc)
    extra_args: bool = False  # xargs / find -exec: more arguments arrive at run time

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


def _quote(text: str) -> str:
    if text and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


def parse(command: str) -> Parsed:
    """The parts of ``command``, or ``unknown`` with a reason (fail closed)."""
    try:
        return Parsed(tuple(_parse(command, 0)))
    except Unknown as exc:
        return Parsed((), str(exc))


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
    for cmd in raw:
        parts.extend(_unwrap(cmd, depth))
    return parts


@dataclass
class _Raw:
    words: list[Word] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
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
                self.i += 1
                self._list(")")
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
                if word.text == "[[" and not word.dynamic:
                    skip_words = True  # a test: words are data; $( ) inside was recorded already
                    continue
            if skip_words:
                continue
            cur.words.append(word)

    def _finish(self, cur: _Raw, skipped: bool) -> None:
        if cur.words and not skipped:
            self.out.append(cur)
        elif cur.writes and not skipped:  # a bare redirection (`> f`) truncates a file
            self.out.append(_Raw([Word(":")], cur.writes))

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
            quoted = any(q in self.s[start : self.i] for q in "'\"\\")
            self.heredocs.append((target.text, op == "<<-", not quoted, cur))
            cur.heredoc = True
            return
        target = self._word()
        if op == "<<<":
            cur.heredoc = True
            return
        if op in (">&", "<&") and re.fullmatch(r"[0-9]+-?|-", target.text):
            return
        if op in ("<",):
            return
        if target.text == "/dev/null" and not target.dynamic:
            return
        if op in ("<&",):
            return
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
                if expand and ("$(" in line or "`" in line or "${" in line):
                    raise Unknown("a heredoc whose body runs command substitutions is not followed")
                if end < 0:
                    raise Unknown(f"unterminated heredoc (no line {delim!r})")

    # -- words ----------------------------------------------------------------------------------
    def _word(self) -> Word:
        buf: list[str] = []
        dynamic = False
        brace = False
        s = self.s
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
                if c in "*?[" or (c == "~" and not buf):
                    dynamic = True  # globs and ~: the word changes at run time
                brace = brace or c == "{"
                buf.append(c)
                self.i += 1
        text = "".join(buf)
        if brace and text not in ("{", "}"):
            dynamic = True  # brace expansion: {rm,-rf,x} is three words at run time
        return Word(text, dynamic)

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
        inner.i = self.i
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
        if self.depth + 1 > MAX_DEPTH:
            raise Unknown("commands nested too deeply")
        self.out.extend(inner.run())
        text = s[self.i : j + 1]
        self.i = j + 1
        return text


# ------------------------------------------------------------------------------------ wrappers
# option letters that take a value, per wrapper
_SUDO_ARGS = set("ugUhpCDrtTR")
_ENV_ARGS = {"-u", "--unset", "-C", "--chdir"}
_TIMEOUT_ARGS = {"-s", "--signal", "-k", "--kill-after"}
_XARGS_ARGS = set("IdEeLlnPsa")
_NICE_ARGS = {"-n", "--adjustment"}
_DANGEROUS_FIND = {"-exec", "-execdir", "-ok", "-okdir"}


def _unwrap(raw: _Raw, depth: int) -> list[Part]:
    words = list(raw.words)
    sudo = False
    env: list[str] = []
    extra = False
    out: list[Part] = []
    while words:
        w = words[0]
        if not w.dynamic and _ASSIGN.match(w.text):
            env.append(w.text.split("=", 1)[0].split("[", 1)[0].rstrip("+"))
            words.pop(0)
            continue
        name = w.text
        if w.dynamic or not name:
            raise Unknown(f"the command name {name!r} is only known at run time")
        base = name.rsplit("/", 1)[-1]
        if base in ("sudo", "doas"):
            sudo = True
            for x in words[1:]:
                if not x.text.startswith("-") or x.text == "--":
                    break
                if x.text in ("-s", "-i", "--shell", "--login", "-e", "--edit") or (
                    x.text[:2] != "--" and any(f in x.text[1:] for f in "sie")
                ):
                    raise Unknown("sudo -s / -i / -e (a root shell or editor) is not followed")
            words = _skip_options(
                words[1:],
                _SUDO_ARGS,
                long_args=(
                    "--user",
                    "--group",
                    "--host",
                    "--prompt",
                    "--chdir",
                    "--role",
                    "--type",
                    "--close-from",
                    "--other-user",
                ),
            )
            if not words:
                raise Unknown("sudo without a command is not followed")
            continue
        if base == "env":
            rest = words[1:]
            while rest and rest[0].text.startswith("-") and rest[0].text not in ("-",):
                opt = rest.pop(0).text
                if opt in ("-S", "--split-string") or opt.startswith("-S") or opt.startswith("--split-string"):
                    raise Unknown("env -S (a split command string) is not followed")
                if opt == "--":
                    break
                if opt in _ENV_ARGS:
                    if not rest:
                        raise Unknown("env option without its value")
                    rest.pop(0)
            if not rest or all(not x.dynamic and _ASSIGN.match(x.text) for x in rest):
                break  # `env` alone prints the environment: a command of its own
            words = rest
            continue
        if base in ("nohup", "setsid"):
            words = [x for x in words[1:]]
            if words and words[0].text in ("-f", "--fork", "-w", "--wait"):
                words.pop(0)
            if not words:
                break
            continue
        if base == "time" or base == "exec":
            rest = words[1:]
            while rest and rest[0].text.startswith("-") and not rest[0].dynamic:
                opt = rest.pop(0).text
                if base == "exec" and opt == "-a" and rest:
                    rest.pop(0)
            if not rest:
                break
            words = rest
            continue
        if base == "command":
            rest = words[1:]
            if rest and rest[0].text in ("-v", "-V"):
                break  # a lookup, runs nothing
            while rest and rest[0].text in ("-p", "--"):
                rest.pop(0)
            if not rest:
                break
            words = rest
            continue
        if base == "nice" or base == "ionice" or base == "stdbuf":
            rest = words[1:]
            while rest and rest[0].text.startswith("-") and not rest[0].dynamic:
                opt = rest.pop(0).text
                if (
                    opt in _NICE_ARGS
                    or (base == "ionice" and opt in ("-c", "-n", "-p", "-t"))
                    or (base == "stdbuf" and opt in ("-i", "-o", "-e"))
                ):
                    if rest:
                        rest.pop(0)
            if not rest:
                break
            words = rest
            continue
        if base == "timeout":
            rest = words[1:]
            while rest and rest[0].text.startswith("-") and not rest[0].dynamic:
                opt = rest.pop(0).text
                if opt in _TIMEOUT_ARGS and rest:
                    rest.pop(0)
            if len(rest) < 2:
                break
            words = rest[1:]  # past the duration
            continue
        if base == "xargs":
            rest = words[1:]
            while rest and rest[0].text.startswith("-") and not rest[0].dynamic:
                opt = rest.pop(0).text
                if opt == "--":
                    break
                if opt.startswith("--"):
                    if "=" not in opt and opt in (
                        "--arg-file",
                        "--delimiter",
                        "--eof",
                        "--replace",
                        "--max-lines",
                        "--max-args",
                        "--max-procs",
                        "--max-chars",
                        "--process-slot-var",
                    ):
                        if rest:
                            rest.pop(0)
                    continue
                if len(opt) == 2 and opt[1] in _XARGS_ARGS and rest:
                    rest.pop(0)
            extra = True
            if not rest:
                words = [Word("echo")]
                break
            words = rest
            continue
        if base in SHELLS:
            payload = _shell_payload(words)
            if payload is not None:
                if payload.dynamic:
                    raise Unknown(f"{base} -c with a payload only known at run time is not followed")
                inner = _parse(payload.text, depth + 1)
                for p in inner:
                    out.append(
                        Part(p.words, p.sudo or sudo, tuple(env) + p.env, p.writes, p.stdin_code, p.extra_args or extra)
                    )
                if raw.writes:  # the shell's own redirections apply to the payload's output
                    out.append(Part((Word(base),), sudo, tuple(env), tuple(raw.writes)))
                return out
        break
    if not words:
        if raw.writes:
            return [Part((Word(":"),), sudo, tuple(env), tuple(raw.writes))]
        return out  # only assignments: nothing runs (their $( ) parts were recorded already)
    head = words[0]
    if head.dynamic:
        raise Unknown(f"the command name {head.text!r} is only known at run time")
    base = head.text.rsplit("/", 1)[-1]
    if _NAME_BAD.search(head.text):
        raise Unknown(f"the command name {head.text!r} is expanded by the shell")
    if base in _UNFOLLOWED or base in ("source", "."):
        if base not in ("source", "."):
            raise Unknown(f"'{base}' is not followed by the command checker")
    interp = base in INTERPRETERS or re.fullmatch(r"python[0-9.]*", base) is not None
    stdin_code = False
    if interp:
        args = [x.text for x in words[1:]]
        has_program = any(not a.startswith("-") for a in args) or any(
            a in ("-c", "-e", "-m", "--eval", "-E", "-r") for a in args
        )
        if raw.heredoc or (raw.piped_in and not has_program) or not args:
            stdin_code = bool(raw.heredoc or raw.piped_in)
            if raw.heredoc and not has_program:
                raise Unknown(f"{base} reading its program from a heredoc is not followed")
    out.append(Part(tuple(words), sudo, tuple(env), tuple(raw.writes), stdin_code, extra))
    if base == "find":
        out.extend(_find_exec(words, sudo, depth))
    return out


def _skip_options(words: list[Word], with_arg: set[str], long_args: tuple[str, ...]) -> list[Word]:
    rest = list(words)
    while rest and rest[0].text.startswith("-") and not rest[0].dynamic:
        opt = rest.pop(0).text
        if opt == "--":
            break
        if opt.startswith("--"):
            if "=" not in opt and opt in long_args and rest:
                rest.pop(0)
            continue
        if opt[-1] in with_arg and rest:
            rest.pop(0)
    return rest


def _shell_payload(words: list[Word]) -> Word | None:
    """The -c payload of ``bash -c 'cmd'`` (options like -l, -e, -o x allowed in front), else None."""
    rest = words[1:]
    saw_c = False
    while rest:
        w = rest[0]
        t = w.text
        if w.dynamic and not saw_c:
            return None
        if t == "--":
            rest.pop(0)
            break
        if t.startswith("--"):
            rest.pop(0)
            continue
        if t[:1] in "-+" and len(t) > 1:
            rest.pop(0)
            if "c" in t[1:] and t[0] == "-":
                saw_c = True
            if "o" in t[1:] and rest:
                rest.pop(0)
            continue
        break
    if not saw_c:
        return None
    if not rest:
        raise Unknown("sh -c without a command")
    return rest[0]


def _find_exec(words: list[Word], sudo: bool, depth: int) -> list[Part]:
    out: list[Part] = []
    i = 1
    while i < len(words):
        if words[i].text in _DANGEROUS_FIND:
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
            out.extend(Part(p.words, p.sudo or sudo, p.env, p.writes, p.stdin_code, True) for p in sub)
            i = j
        i += 1
    return out
