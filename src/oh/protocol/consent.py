"""Consent (issue 19), the pure part: policy levels, rules, and the decision for one action.

No I/O. The runtime gate (``runtimes/consent.py``) asks ``decide()`` about each action and then lets
it run (``allow``), waits for the user (``ask``), or refuses it (``deny``: error ``REJECTED``).

Levels (the user's default; rules refine it):

- ``never``    never ask (rules still deny or ask);
- ``risky``    ask for risky actions: built-in risky commands (``is_risky``), changes to sensitive
               paths (``.git/``, ``.vscode/``, ``.oh/``, outside the workspace), and any action whose
               ``security_risk`` is ``HIGH``;
- ``commands`` ask for every command (and input typed into a running one), not for file changes;
- ``changes``  ask for every file change (write / edit; review mode is how it asks), not for commands;
- ``all``      ask for every command, change and read.

Rules, each ``KIND: PATTERN`` in one of three lists (``consent_allow``, ``consent_ask``,
``consent_deny``): ``run: git status`` (exact), ``run: npm test *`` (``*`` last = any further
arguments; a ``*`` elsewhere = one argument), ``write: src/**`` (write and edit; gitignore-like globs:
relative = the workspace, ``~/`` = home, or absolute), ``read: ~/.ssh/**``, ``risk: HIGH``
(``security_risk``; only for ask and deny: the agent picks its own risk, so it can never allow).

Command rules match each PART of the parsed command (``protocol/shellparse.py``): every part must be
allowed; deny beats ask beats allow; a line the parser cannot follow asks (fail closed). An allow rule
matches only the exact program name (``./git`` is not ``git``) with words known before run time;
deny and ask rules also match a path's basename and a Unicode look-alike (then they ask).
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from ..errors import CliError
from . import kinds, programs, shellparse
from .shellparse import Part

LEVELS = ("never", "risky", "commands", "changes", "all")
VERDICTS = ("allow", "ask", "deny")
RULE_KINDS = ("run", "write", "read", "risk", "unsandboxed", "network")  # unsandboxed, network: decide_unsandboxed
RISKS = ("LOW", "MEDIUM", "HIGH", "UNKNOWN")
MAX_RULES = 1000
MAX_RULE = 500

# Variable names that change what runs, what is loaded or what bash evaluates: one assigned in front of a
# part (PATH=/tmp/evil git status), in the action's ``env``, or alone (it then stays in the agent's shell:
# PROMPT_COMMAND=..., OPTIND=x with x='a[$(cmd)]') is never allowed by an allow rule, and is risky.
# Bash evaluates the prompts (PS0-PS4, PROMPT_COMMAND), BASH_ENV/ENV (a file run by every bash), the
# arithmetic specials (OPTIND, RANDOM, SRANDOM, HISTCMD, MAILCHECK, ... evaluate a[$(cmd)]), BASH_CMDS /
# BASH_ALIASES (what a name runs), and the rest pick programs, libraries or files (PATH, LD_*, GIT_*, ...).
DANGEROUS_ENV = re.compile(
    r"\A(PATH|CDPATH|HOME|LD_[A-Z_0-9]*|DYLD_[A-Z_]*|BASH_ENV|ENV|IFS|PS[0-4]|PROMPT_COMMAND|PROMPT_DIRTRIM|"
    r"SHELLOPTS|BASHOPTS|BASH_[A-Z_]+|HIST[A-Z_]*|OPTIND|RANDOM|SRANDOM|MAILCHECK|MAIL|MAILPATH|TMOUT|FUNCNEST|"
    r"GLOBIGNORE|EXECIGNORE|FIGNORE|INPUTRC|HOSTFILE|TIMEFORMAT|POSIXLY_CORRECT|SHELL|TERMINFO[A-Z_]*|"
    r"COMP_[A-Z_]+|READLINE_[A-Z_]+|TEXTDOMAINDIR|GCONV_PATH|LOCPATH|NLSPATH|GIT_[A-Z_0-9]*|XDG_[A-Z_]+|"
    r"[A-Z_]*_COMMAND|PAGER|MANPAGER|EDITOR|VISUAL|BROWSER|PYTHON[A-Z_]*|NODE_[A-Z_]+|NPM_CONFIG_[A-Z_]+|"
    r"PERL5?[A-Z_]*|RUBY[A-Z_]*|GEM_[A-Z_]+|BUNDLE_[A-Z_]+|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|"
    r"CLASSPATH|GOFLAGS|GOPATH|CARGO_[A-Z_]+|RUSTC_WRAPPER|RUSTFLAGS|CC|CXX|LESSOPEN|LESSCLOSE|"
    r"SSH_ASKPASS|SUDO_ASKPASS|GNUPGHOME|SSL_CERT_[A-Z_]+|[A-Z_]*_PROXY|[a-z_]*_proxy|OH_[A-Z_]*|"
    # build tools and package managers read options that name programs, plugins or scripts to run:
    # MAKEFLAGS=SHELL=./x make, npm_config_script_shell=./x npm test, PYTEST_ADDOPTS='-p plugin' pytest
    r"(?i:npm_config_[a-z_0-9]*)|YARN_[A-Z_]+|PNPM_[A-Z_]+|COREPACK_[A-Z_]+|PYTEST_[A-Z_]+|TOX_[A-Z_]+|"
    r"MAKEFLAGS|MFLAGS|GNUMAKEFLAGS|MAKEFILES|MAKE|RUSTC|RUSTDOC|RUSTC_[A-Z_]+|RUSTDOCFLAGS|"
    r"GO(?:FLAGS|ROOT|PATH|TOOLCHAIN|PROXY|PRIVATE|NOSUMDB|INSECURE|BIN|ENV|EXPERIMENT|WORK|MODCACHE)|"
    r"[A-Z_]*_OPTS|LUA_[A-Z_0-9]*|VIMINIT|EXINIT|MYVIMRC|VIMRUNTIME|EMACS[A-Z_]*|UV_[A-Z_]+|PIP_[A-Z_]+|"
    r"POETRY_[A-Z_]+|HATCH_[A-Z_]+|CONDA_[A-Z_]+|VIRTUAL_ENV|DOTNET_[A-Z_]+|COMPOSER_[A-Z_]*|PHPRC|"
    r"PHP_INI_SCAN_DIR|DENO_[A-Z_]+|BUN_[A-Z_]+|ELECTRON_RUN_AS_NODE|LD|AR|AS|CPP|[A-Z]*FLAGS|"
    r"PKG_CONFIG_[A-Z_]*|CMAKE_[A-Z_]*|TCLLIBPATH|R_[A-Z_]+|FCEDIT|[A-Z_]*_EDITOR|SHELL_[A-Z_]*|"
    # options and programs other tools read from the environment (redteam): TAR_OPTIONS='--to-command=sh'
    # tar, LESS='+!cmd' less, SYSTEMD_PAGER=cmd systemctl, MANOPT='-P cmd' man, RSYNC_RSH=cmd rsync
    r"TAR_OPTIONS|LESS|LESSKEY[A-Z_]*|LESSEDIT|[A-Z_]*PAGER[A-Z_]*|[A-Z_]*BROWSER|SYSTEMD_[A-Z_]+|MANOPT|"
    r"MANROFFOPT|GROFF_[A-Z_]+|RSYNC_[A-Z_]+|CVS_RSH|WGETRC|CURL_HOME|AWKPATH|AWKLIBPATH|ZIPOPT|UNZIP|"
    r"UNZIPOPT|GZIP|BZIP2?|XZ_OPT|XZ_DEFAULTS|ZSTD_[A-Z_]+|PARALLEL[A-Z_]*|SUDO_[A-Z_]+|DOCKER_[A-Z_]+)\Z"
)

# oh's deciding commands, however oh is started (`oh`, `python -m oh`, `uv run oh`, the module path):
# asked at every level but `never`, even when an allow rule matches (no self-approval).
OH_DECIDING = frozenset(sub[0] for sub in programs.lookup("oh").risky_subcommands)
_OH_PROGRAM = re.compile(r"\A(?:.*/)?oh(?:/__main__\.py|/cli\.py)?\Z|\Aoh\.(?:cli|__main__)\Z")
_OH_IMPORT = re.compile(r"\b(?:import|from)\s+oh\b|__import__\s*\(|importlib|runpy|\boh\.(?:cli|commands|launcher)\b")
# git options that run or load code from elsewhere (git -c core.fsmonitor=cmd status runs cmd)
MAX_SHOW = 64 * 1024  # a command longer than this cannot be shown whole: refused, not asked
SENSITIVE_DIRS = (".git", ".vscode", ".oh", ".idea", ".devcontainer", ".github")  # changes here can run code
NESTED_SENSITIVE = (".git", ".oh")  # also below the top (a nested repository's hooks and config)


class RuleError(CliError, ValueError):
    """A rule that cannot be read; the message says how to write it."""


@dataclass(frozen=True)
class Rule:
    verdict: str  # allow | ask | deny
    kind: str  # run | write | read | risk | unsandboxed | network
    pattern: str
    words: tuple[str, ...] = ()  # run: the pattern's words
    # unsandboxed / network: the files the command writes (``> PATH``) and reads by redirection (``< PATH``);
    # an allow rule covers a command only when these are exactly its own (docs/security.md §8, §11.1)
    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return f"{self.kind}: {self.pattern}"


def parse_rule(text: Any, verdict: str) -> Rule:
    if verdict not in VERDICTS:
        raise RuleError(f"a rule list must be allow, ask or deny (got {verdict!r})")
    if not isinstance(text, str):
        raise RuleError(f"a rule must be a string like 'run: git status *' (got {text!r})")
    if len(text) > MAX_RULE:
        raise RuleError(f"a rule is at most {MAX_RULE} characters long")
    kind, sep, pattern = text.partition(":")
    kind, pattern = kind.strip().lower(), pattern.strip()
    if not sep or kind not in RULE_KINDS or not pattern:
        raise RuleError(
            f"rule {text!r}: write KIND: PATTERN with KIND one of run, write, read, risk, unsandboxed, "
            "network (e.g. 'run: npm test *', 'write: src/**', 'risk: HIGH', 'network: npm ci', "
            "'unsandboxed: make install')"
        )
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in pattern):
        raise RuleError(f"rule {text!r} holds a control or invisible character")
    if kind == "risk":
        level = pattern.upper()
        if level not in RISKS:
            raise RuleError(f"rule {text!r}: risk must be one of {', '.join(RISKS)}")
        if verdict == "allow":
            raise RuleError(
                f"rule {text!r}: security_risk can only ask or deny (the agent chooses its own risk, so it "
                "must never be what allows an action)"
            )
        return Rule(verdict, kind, level)
    if kind in ("run", "unsandboxed", "network"):
        try:
            words, writes, reads = _command_words(pattern) if kind != "run" else (tuple(shlex.split(pattern)), (), ())
        except ValueError as exc:
            raise RuleError(f"rule {text!r}: {exc}") from None
        if not words or words[0] == "*":
            raise RuleError(f"rule {text!r}: a command rule starts with the program's name (e.g. 'run: git status *')")
        shown = " ".join(shellparse._quote(w) if w != "*" else "*" for w in words)
        shown += "".join(f" > {_quote_path(t)}" for t in writes) + "".join(f" < {_quote_path(t)}" for t in reads)
        return Rule(verdict, kind, shown, words, writes, reads)
    return Rule(verdict, kind, pattern)


def _quote_path(path: str) -> str:
    """A rule's ``> PATH`` as written back: ``~/`` stays unquoted (it is the home, as in a redirection)."""
    return "~/" + shellparse._quote(path[2:]) if path.startswith("~/") and len(path) > 2 else shellparse._quote(path)


def _command_words(pattern: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """An ``unsandboxed:`` / ``network:`` pattern: (the command's words, the files it writes ``> PATH``, the files
    it reads ``< PATH``). An operator with no path after it stays a word, as before redirections were rule syntax."""
    lex = shlex.shlex(pattern, posix=True, punctuation_chars="<>")
    lex.whitespace_split = True
    tokens = list(lex)
    words: list[str] = []
    writes: list[str] = []
    reads: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok and set(tok) <= set("<>") and i + 1 < len(tokens) and not set(tokens[i + 1]) <= set("<>"):
            (writes if ">" in tok else reads).append(tokens[i + 1])
            i += 2
            continue
        words.append(tok)
        i += 1
    return tuple(words), tuple(dict.fromkeys(writes)), tuple(dict.fromkeys(reads))


def parse_rules(allow: Iterable[Any] = (), ask: Iterable[Any] = (), deny: Iterable[Any] = ()) -> tuple[Rule, ...]:
    out = []
    for verdict, items in (("deny", deny), ("ask", ask), ("allow", allow)):
        for item in items or ():
            out.append(parse_rule(item, verdict))
    if len(out) > MAX_RULES:
        raise RuleError(f"at most {MAX_RULES} consent rules")
    return tuple(out)


@dataclass(frozen=True)
class Policy:
    level: str = "never"
    rules: tuple[Rule, ...] = ()
    workspace: str = "/"
    home: str = ""
    protected: tuple[str, ...] = ()  # oh's own directories (sessions, config: the decider secret)

    def with_rule(self, rule: Rule) -> "Policy":
        if rule in self.rules:
            return self
        return Policy(self.level, self.rules + (rule,), self.workspace, self.home, self.protected)

    def without_rule(self, rule: Rule) -> "Policy":
        return Policy(self.level, tuple(r for r in self.rules if r != rule), self.workspace, self.home, self.protected)


@dataclass(frozen=True)
class Decision:
    verdict: str  # allow | ask | deny
    reason: str  # why, for the user and the agent
    rule: str | None = None  # the rule that decided ("deny run: rm *"), if one did
    suggest: tuple[str, ...] = ()  # the rules "always allow" would add (allow lists)
    parts: tuple[str, ...] = ()  # the parts of a command, as shown to the user
    risky: bool = False
    refused: bool = False  # deny not by a rule but because it cannot be asked (too long to show)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "rule": self.rule,
            "suggest": list(self.suggest),
            "parts": list(self.parts),
        }


def validate_level(level: Any) -> str:
    text = str(level).strip().lower()
    if text not in LEVELS:
        raise RuleError(f"consent must be one of {', '.join(LEVELS)} (got {level!r})")
    return text


# --------------------------------------------------------------------------------------- matching
def _lookalike(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _match_part(rule: Rule, part: Part) -> str:
    """'yes' | 'loose' | 'maybe' | 'no': whether a run rule matches a part. 'loose' (the same program
    by a path, or under sudo) denies and asks but never allows; 'maybe' (a word known only at run time,
    a look-alike, a variable that changes what runs) asks for deny and ask rules, never allows."""
    argv = list(part.argv)
    dyn = [w.dynamic for w in part.words]
    pat = list(rule.words)
    maybe = False
    loose = False
    if pat[0] == "sudo":
        if not part.sudo:
            return "no"
        pat = pat[1:]
        if not pat:
            return "yes"
    elif part.sudo:
        loose = True  # `sudo rm` is not `rm` for an allow rule; it is for deny and ask
    if not pat:
        return "no"
    rest_any = pat[-1] == "*"
    if rest_any:
        pat = pat[:-1]
    else:
        if part.extra_args:
            maybe = True  # xargs / find -exec add arguments at run time
        if len(argv) != len(pat):
            if not any(dyn[len(pat) :]) and len(argv) > len(pat) or len(argv) < len(pat):
                return "no"
            maybe = True
    if len(argv) < len(pat):
        return "no"
    for i, p in enumerate(pat):
        w = argv[i]
        if p == "*":
            continue
        if i == 0:
            base = w.rsplit("/", 1)[-1]
            if w == p:
                continue
            if base == p:
                loose = True
                continue
            if _lookalike(base) == _lookalike(p):
                maybe = True
                continue
            return "no"
        if dyn[i]:
            maybe = True  # `git $X` could be `git push`
            continue
        if w == p:
            continue
        if _lookalike(w) == _lookalike(p):
            maybe = True
            continue
        return "no"
    if any(DANGEROUS_ENV.match(e) for e in part.env + part.assigns) or runs_oh(part):
        maybe = True  # PATH=./tools git status is not the git the rule means; oh's deciding commands never
    if base_git_loads(part):
        maybe = True
    return "maybe" if maybe else "loose" if loose else "yes"


def base_git_loads(part: Part) -> bool:
    """git -c core.fsmonitor=cmd status, git --git-dir=elsewhere ...: code from elsewhere."""
    return programs.loads_elsewhere(programs.lookup(part.name.rsplit("/", 1)[-1]), part.argv[1:])


def _match_rule(rule: Rule, part: Part) -> str:
    """``_match_part``, plus: a deny or ask rule also names a program a runner (flock, chroot...) runs."""
    m = _match_part(rule, part)
    if m == "no" and rule.verdict != "allow" and part.runs_args and rule.words[0] != "sudo":
        if any(a.rsplit("/", 1)[-1] == rule.words[0] for a in part.argv[1:]):
            return "maybe"
    return m


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"(?:/.*)?\Z", re.DOTALL)


def _abs_pattern(pattern: str, policy: Policy) -> str:
    if pattern.startswith("~/") and policy.home:
        return os.path.join(policy.home, pattern[2:])
    if pattern.startswith("/"):
        return pattern
    return os.path.join(policy.workspace, pattern)


def path_matches(pattern: str, path: str, policy: Policy, fold: bool = False) -> bool:
    """Whether a path rule matches ``path`` (absolute, normalized or resolved by the caller). ``fold``: also
    in another case (deny and ask rules: on a case-insensitive file system `.ENV` is `.env`)."""
    full = os.path.normpath(re.sub(r"\A/+", "/", _abs_pattern(pattern, policy)))
    path = os.path.normpath(re.sub(r"\A/+", "/", path))
    if fold:
        full, path = full.casefold(), path.casefold()
    tokens = _glob_tokens(full)
    if sum(t[0] != "L" and t[0] != "Q" for t in tokens) <= 1:  # one wildcard: the regex cannot backtrack badly
        return _glob_regex(full).match(path) is not None
    if len(path) > MAX_MATCH_PATH:  # no kernel opens it; deny/ask rules (fold) match it, allow rules do not
        return fold
    return _glob_nfa(tokens, path)


MAX_MATCH_PATH = 4096  # PATH_MAX: a longer path cannot be opened (ENAMETOOLONG); bounds _glob_nfa's work


@functools.lru_cache(maxsize=1024)
def _glob_tokens(pattern: str) -> tuple[tuple[str, str], ...]:
    """``**/`` = D/ (any directories, or none), ``**`` = D (anything), ``*`` = S (within a name), ``?`` = Q,
    else L (a literal character)."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        for text, kind in (("**/", "D/"), ("**", "D"), ("*", "S"), ("?", "Q")):
            if pattern.startswith(text, i):
                out.append((kind, ""))
                i += len(text)
                break
        else:
            out.append(("L", pattern[i]))
            i += 1
    return tuple(out)


def _glob_nfa(tokens: tuple[tuple[str, str], ...], path: str) -> bool:
    """What ``_glob_regex(pattern).match(path)`` answers, in O(len(path) x len(pattern)): the regex backtracks
    exponentially on a rule like ``write: *a*a*a...b`` against an agent's ``aaaa...`` path (a hang in the
    backend's event loop). State 2i: before token i; 2i+1: inside the ``.*`` of a ``**/`` at token i."""
    end = 2 * len(tokens)

    def closure(states: set[int]) -> set[int]:
        for i in range(len(tokens)):  # skips only go forward: one ordered pass reaches the fixed point
            if 2 * i in states and tokens[i][0] != "L" and tokens[i][0] != "Q":
                states.add(2 * i + 2)
        return states

    states = closure({0})
    for pos, c in enumerate(path):
        if end in states and c == "/":
            return True  # the rest is below a matched directory: (?:/.*)?
        nxt: set[int] = set()
        for st in states:
            i, inside = divmod(st, 2)
            if i == len(tokens):
                continue
            kind, lit = tokens[i]
            if inside or kind == "D/":
                nxt.add(2 * i + 1)
                if c == "/":
                    nxt.add(2 * i + 2)
            elif kind == "L" and c == lit or kind == "Q" and c != "/":
                nxt.add(2 * i + 2)
            elif kind == "D" or kind == "S" and c != "/":
                nxt.add(st)
        if not nxt:
            return False
        states = closure(nxt)
        del pos
    return end in states


def is_risky(part: Part, policy: Policy | None = None, where: "Where | None" = None) -> str | None:
    """Why a part is risky (built-in notion), or None."""
    base = part.name.rsplit("/", 1)[-1]
    argv = part.argv
    if part.sudo:
        return "runs as another user (sudo)"
    if part.assign_only:
        bad = [n for n in part.assigns if DANGEROUS_ENV.match(n)]
        return f"sets {', '.join(bad)} in the shell (bash evaluates it or it changes what runs)" if bad else None
    by_name = programs.risky(base, argv[1:])
    if by_name is not None:
        return by_name
    why = _runs_code_elsewhere(part)
    if why is not None:
        return why
    if part.extra_args and programs.lookup(base).input_args_risky:
        return f"{base} with arguments from its input"
    if policy is not None:
        return _touches(part, policy, where or Where(policy.workspace))
    return None


def _runs_code_elsewhere(part: Part) -> str | None:
    """What makes a part run something its name does not say: a program from stdin, a variable that
    changes what runs, a runner (flock, chroot...), git options that load code, oh's deciding commands."""
    base = part.name.rsplit("/", 1)[-1]
    if part.stdin_code:
        return f"{base} runs a program it reads from its input (e.g. curl ... | sh)"
    bad = [e for e in part.env + part.assigns if DANGEROUS_ENV.match(e)]
    if bad:
        return "sets a variable that changes what runs (" + ", ".join(bad) + ")"
    if part.runs_args:
        return f"{base} runs a command given in its arguments"
    if base_git_loads(part):
        return f"{base} with options that load configuration or programs from elsewhere (-c, --git-dir, ...)"
    if runs_oh(part):
        return "runs oh's own deciding commands (only you decide with those)"
    rec = programs.lookup(base)
    inline = rec.inline(base, list(part.argv[1:])) if rec.inline else None
    if inline is not None:
        return inline
    code = rec.code(base, list(part.argv[1:])) if rec.code else []
    if any(w.dynamic and w.text in code for w in part.words[1:]):
        return f"{base}'s inline code is only known at run time"
    return _program_runs(part)


def _git_dash_c(argv: tuple[str, ...]) -> list[str]:
    """The values of git's global ``-C DIR`` options (in front of the subcommand)."""
    rec = programs.lookup(argv[0].rsplit("/", 1)[-1])
    out: list[str] = []
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] in (rec.global_values or ()) and i + 1 < len(argv):
            if argv[i] in rec.directory_options:
                out.append(argv[i + 1])
            i += 2
            continue
        i += 1
    return out


def runs_oh(part: Part) -> bool:
    """Whether a part runs one of oh's deciding commands, however oh is invoked."""
    argv = part.argv
    base = part.name.rsplit("/", 1)[-1]
    for i, w in enumerate(argv):
        if _OH_PROGRAM.match(w) and any(x in OH_DECIDING for x in argv[i + 1 :]):
            return True
    return programs.lookup(base).runs_python and any(_OH_IMPORT.search(w) or w in ("-moh",) for w in argv[1:])


@dataclass(frozen=True)
class Where:
    """Where an action's paths are, as the I/O layer resolved them (``os.path.realpath``, as the kernel will
    open them): ``base`` is the directory relative paths start from (the action's ``cwd``, else the
    shell's current directory, else the agent's working directory); ``paths`` maps each word of
    ``places()`` to what it resolves to (several for a glob). Without an entry a path is only normalized."""

    base: str
    paths: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cwd: str | None = None  # the action's cwd, resolved
    base_unknown: bool = False  # an earlier command moved the shell and the runtime cannot say where to
    # the repository git would use started from each directory of ``git_starts()`` ("" = ``base``): what
    # git's discovery finds (a ``.git`` entry, or a directory that is itself a git directory), None = none
    git_dirs: Mapping[str, str | None] = field(default_factory=dict)
    linked: frozenset[str] = frozenset()  # resolved places that are regular files with more than one hard link
    unresolved: tuple[str, ...] = ()  # words of ``places()`` the I/O layer could not resolve within its bounds


def git_starts(kind: str, args: dict[str, Any]) -> tuple[str, ...]:
    """The directories git starts its repository discovery from, for each ``git`` part of a run: "" (where
    the command runs) and each ``git -C DIR``. The I/O layer fills ``Where.git_dirs`` for them."""
    command = str(args.get("command", ""))
    if kind != "run" or args.get("is_input") or len(command) > MAX_SHOW:
        return ()
    out = []
    for part in shellparse.parse(command).parts:
        if programs.lookup(part.name.rsplit("/", 1)[-1]).directory_options:
            out += ["", *_git_dash_c(part.argv)]
    return tuple(dict.fromkeys(out))[:16]


def _git_elsewhere(part: Part, where: "Where") -> str | None:
    """Why the repository a git part would use is not one the gate guards: git's discovery accepts any
    directory holding HEAD, objects/ and refs/ as a repository, so files written under an allowed path
    (``docs/HEAD``, ``docs/config`` with core.fsmonitor) make ``git status`` there run a program."""
    if not programs.lookup(part.name.rsplit("/", 1)[-1]).directory_options or not where.git_dirs:
        return None
    starts = _git_dash_c(part.argv)
    if part.after_cd or where.base_unknown:
        return "git after a cd: the repository it uses is not known before it runs"
    if len(starts) > 1 or any(w.dynamic and w.text in starts for w in part.words):
        return "git with a -C known only at run time (or several): the repository it uses is not known"
    start = starts[0] if starts else ""
    if start not in where.git_dirs:
        return "git starting from a directory the gate did not look at"
    found = where.git_dirs[start]
    if found is not None and os.path.basename(found.rstrip("/")) != ".git":
        return (
            f"git would use {found} as its repository (a directory holding HEAD, objects/ and refs/, not a .git): "
            "its config can run programs"
        )
    return None


def places(kind: str, args: dict[str, Any]) -> tuple[str, ...]:
    """The words of an action that may name files: the I/O layer resolves them (``Where.paths``)."""
    if kind != "run":
        path = args.get("path")
        return (path,) if isinstance(path, str) and path else ()
    command = str(args.get("command", ""))
    if args.get("is_input") or len(command) > MAX_SHOW:
        return ()
    out: list[str] = []
    for part in shellparse.parse(command).parts:
        out += list(part.writes) + list(_implied_writes(part)) + list(part.reads)
        out += [w.text for w in part.words[1:] if not w.dynamic or not re.search(r"[$`]", w.text)]
    return tuple(dict.fromkeys(out))[:256]


def normalize(path: str, base: str, policy: Policy) -> str:
    """A path as the kernel reads it, without following symlinks: from ``base``, ``~/`` = home, ``..`` and
    ``//`` collapsed (``//ws/.env`` is ``/ws/.env``)."""
    p = _expand(path, policy)
    if not p.startswith("/"):
        p = os.path.join(base, p)
    return os.path.normpath(re.sub(r"\A/+", "/", p))


def _places(typed: str, policy: Policy, where: "Where") -> tuple[str, ...]:
    got = where.paths.get(typed)
    return tuple(got) if got else (normalize(typed, where.base, policy),)


def _implied_writes(part: Part) -> tuple[str, ...]:
    """Files a program writes through its arguments (an allow rule names the program, not these); a ``~``
    or ``~/`` word is placed like a redirection's (it is the home the policy knows)."""
    return tuple(t for t in _implied_targets(part) if t not in _dynamic_words(part) or _tilde_only(t))


def _implied_blind(part: Part) -> str | None:
    """A file a program writes through its arguments that is only known at run time (``cp x $HOME/.bashrc``,
    ``tee ~+/f``, ``cp x /tmp/*``): placed nowhere, so it is asked like a redirection to ``$F``."""
    dynamic = _dynamic_words(part)
    return next((t for t in _implied_targets(part) if t in dynamic and not _tilde_only(t)), None)


def _dynamic_words(part: Part) -> frozenset[str]:
    return frozenset(w.text for w in part.words[1:] if w.dynamic)


def _tilde_only(word: str) -> bool:
    """``~`` or ``~/...`` with nothing else bash expands: ``normalize`` places it in the policy's home."""
    return (word == "~" or word.startswith("~/")) and not re.search(r"[$`*?\[{]", word)


def _implied_targets(part: Part) -> tuple[str, ...]:
    base = part.name.rsplit("/", 1)[-1]
    rec = programs.lookup(base)
    return rec.writes(base, [w.text for w in part.words[1:]]) if rec.writes else ()


def _touches(part: Part, policy: Policy, where: "Where") -> str | None:
    """Why a part touches a place only the user decides about (oh's files; a write into .git/, .vscode/...,
    outside the workspace, or somewhere only known at run time), or None."""
    base = part.name.rsplit("/", 1)[-1]
    for w in part.words + tuple(shellparse.Word(r, bool(re.search(r"[$`*?]", r))) for r in part.reads):
        if w.dynamic and re.search(r"[$`]", w.text) and _SUSPECT.search(w.text):
            return f"`{w.text}` may name oh's own files (it is only known at run time)"
        places = _places(w.text, policy, where) if not w.dynamic or not re.search(r"[$`]", w.text) else ()
        if _touches_protected(w.text, policy) or any(_protected(p, policy) for p in places):
            return "touches oh's own files (sessions, tokens, config): only you decide with those"
        if re.match(r"~[^/+]", w.text):  # ~user/..., ~-/... (OLDPWD): where it points is known at run time
            return f"`{w.text}` may name oh's own files (a ~name path is only known at run time)"
        if programs.lookup(base).role != "lister" and any(_holds_protected(p, policy) for p in places):
            return f"`{w.text}` is a directory that holds oh's own files: a program given it may read them all"
    git_why = _git_elsewhere(part, where)
    if git_why is not None:
        return git_why
    blind_write = part.blind_writes[0] if part.blind_writes else _implied_blind(part)
    if blind_write is not None:
        return f"writes {blind_write}, a file known only at run time"
    linked = _linked_write(part, policy, where)
    if linked is not None:
        return f"writes through a hard link: {linked}"
    blind = _program_blind(part)
    if blind is not None:
        return blind
    if where.base_unknown:
        rel = next((t for t in part.writes if not t.startswith(("/", "~"))), None)
        if rel is not None:
            return f"writes {rel} relative to a directory an earlier cd chose (not known before it runs)"
    for target in part.writes + _implied_writes(part):
        for real in _places(target, policy, where):
            why = _sensitive_path(real, policy)
            if why is not None:
                return f"writes {target} ({why})"
    return None


# A word only known at run time that may point at oh's state: $HOME/..., $XDG_..., $OH_..., /proc/...
_SUSPECT = re.compile(r"HOME|XDG_|OH_|PPID|/proc|\$\$|~|\.local|\.config|oh/")


def _expand(word: str, policy: Policy) -> str:
    if (word == "~" or word.startswith("~/")) and policy.home:
        return policy.home + word[1:]
    return word


def _protected(path: str, policy: Policy) -> bool:
    return any(x and (path == x or path.startswith(x.rstrip("/") + "/")) for x in policy.protected)


# What a process's /proc entry gives (environment, command line, open files, memory, its root and cwd),
# and the file descriptors of the program reading it (/dev/fd/3...): never resolved here, always asked.
_PROC = re.compile(r"/proc/+(?:self|thread-self|[0-9]+|[^/]*[*?\[][^/]*)(?:/|\Z)|/dev/+fd/+(?:[3-9]|[0-9]{2,})")


def _holds_protected(path: str, policy: Policy) -> bool:
    """Whether ``path`` is a directory above one of oh's own (``~``, ``~/.local``, ``/``)."""
    p = path.rstrip("/") + "/"
    return any(x and x.rstrip("/").startswith(p) for x in policy.protected)


def _touches_protected(word: str, policy: Policy) -> bool:
    w = _expand(word, policy)
    return (
        any(p and p in w for p in policy.protected)
        or "oh/sessions" in w
        or "OH_HOME" in w
        or _PROC.search(w) is not None
    )


def _sensitive_path(path: str, policy: Policy) -> str | None:
    """Why a change to ``path`` (absolute, resolved) is risky, or None."""
    p = normalize(path, policy.workspace, policy)
    ws = os.path.normpath(policy.workspace)
    if _protected(p, policy):
        return "one of oh's own files"
    if p != ws and not p.startswith(ws.rstrip("/") + "/"):
        return "outside the workspace"
    rel = os.path.relpath(p, ws).split(os.sep)
    folded = [x.casefold() for x in rel]  # .GIT is .git on a case-insensitive file system (macOS, Windows)
    if folded and folded[0] in SENSITIVE_DIRS:
        return f"inside {rel[0]}/ (settings, hooks or tasks there can run code)"
    nested = next((x for x in folded[:-1] if x in NESTED_SENSITIVE), None) or (
        rel[-1] if folded[-1] == ".git" else None
    )
    if nested is not None:
        return f"inside a {nested}/ directory (hooks and config there can run code)"
    return None


def _suggest_run(part: Part) -> str:
    words = list(part.argv)
    out = [words[0]]
    if (
        programs.lookup(words[0]).subcommands
        and len(words) > 1
        and re.fullmatch(r"[A-Za-z][A-Za-z0-9_.:-]*", words[1])
        and not part.words[1].dynamic
    ):
        out.append(words[1])
    if part.sudo:
        out.insert(0, "sudo")
    return "run: " + " ".join(shellparse._quote(w) for w in out) + " *"


# --------------------------------------------------------------------------------------- decide
CONTROL_KEYS = frozenset({"C-c", "C-d", "C-z", "C-\\", "\x03", "\x04", "\x1a", "\x1c"})
_REVEALS = ("read", "command", "change")


def decide(
    policy: Policy,
    kind: str,
    args: dict[str, Any],
    security_risk: str | None = None,
    where: Where | None = None,
) -> Decision:
    """The verdict for one action. ``where``: its paths as the I/O layer resolved them (``places``); without
    it paths are normalized from the workspace (tests, and callers with no file system)."""
    where = where or Where(policy.workspace)
    risk = str(security_risk).upper() if isinstance(security_risk, str) else None
    risk_rules = [r for r in policy.rules if r.kind == "risk" and risk is not None and r.pattern == risk]
    for verdict in ("deny", "ask"):
        hit = next((r for r in risk_rules if r.verdict == verdict), None)
        if hit is not None:
            return Decision(
                verdict, f"the agent rated this action {risk} (rule {verdict} {hit.text})", f"{verdict} {hit.text}"
            )
    high = policy.level == "risky" and risk == "HIGH"
    quiet = policy.level == "never" and all(r.verdict == "allow" for r in policy.rules) and not high
    if where.unresolved and not quiet:  # fail closed: never allowed on paths the gate could not see
        return Decision("ask", f"oh cannot tell which files {where.unresolved[0][:200]!r} names, so it is asked")
    cls = kinds.consent_class(kind, args)  # the kind table's class: an unknown kind is asked, never allowed
    if cls == "unknown":
        return Decision("ask", f"{kind!r} is an action oh cannot classify, so it is asked")
    if kind == "run":
        return _decide_run(policy, args, high, where)
    path = args.get("path")
    if cls == "change":
        asks = policy.level in ("changes", "all")
        decided = _decide_path(policy, "write", str(path or ""), high, asks, where)
        if asks and args.get("force") is True and decided.verdict != "deny":
            return Decision("ask", FORCE_REASON, decided.rule, (), decided.parts)  # an allow rule never covers it
        return decided
    if cls == "read":  # read rules apply to every kind that reveals a path's content
        if isinstance(path, str) and path:
            return _decide_path(policy, "read", path, high, policy.level == "all", where, sensitive=False)
        if policy.level == "all":  # the editors' selection, symbols: no path to match rules against
            return Decision("ask", f"policy all: every {kind} (it shows content to the agent) is asked")
    if cls == "command" and policy.level in ("commands", "all"):
        return Decision("ask", f"policy {policy.level}: {kind} runs the project's commands, so it is asked")
    if high:
        return Decision("ask", "the agent rated this action HIGH risk")
    return Decision("allow", f"policy {policy.level}: {kind} is {'nothing to ask' if cls == 'none' else 'not asked'}")


# issue 37: `force: true` is the way past the stale-write check (docs/protocol.md §3.18); under `changes` and `all`
# it is asked on its own (never a proposal, never an allow rule), saying what it may overwrite.
FORCE_REASON = (
    "it is sent with force: true: it overwrites the file even if another agent (or you) changed it since this "
    "agent last read it, skipping oh's stale-write check"
)


def _decide_path(
    policy: Policy, rule_kind: str, typed: str, high: bool, asks: bool, where: Where, sensitive: bool = True
) -> Decision:
    """A read or a change of one file: rules match where the file really is (``Where``), deny and ask
    rules also where it is written to be."""
    verb = "change" if rule_kind == "write" else "read"
    shown = normalize(typed, where.base, policy) if typed else ""
    real = _places(typed, policy, where) if typed else ()
    rules_ = [r for r in policy.rules if r.kind == rule_kind and typed]
    for verdict in ("deny", "ask", "allow"):
        if verdict == "allow":
            hit = next(
                (r for r in rules_ if r.verdict == "allow" and all(path_matches(r.pattern, p, policy) for p in real)),
                None,
            )
        else:
            hit = next(
                (
                    r
                    for r in rules_
                    if r.verdict == verdict and any(path_matches(r.pattern, p, policy, True) for p in (shown, *real))
                ),
                None,
            )
        if hit is None:
            continue
        if verdict == "allow" and high:
            return Decision("ask", "the agent rated this action HIGH risk", suggest=())
        if verdict == "allow" and (why := _place_asks(real, policy, sensitive)) is not None:
            return Decision("ask", f"a rule allows this {verb}, but {typed} is {why}", risky=True)
        does = {"deny": "denies", "ask": "asks before", "allow": "allows"}[verdict]
        return Decision(verdict, f"a rule {does} this {verb} ({verdict} {hit.text})", f"{verdict} {hit.text}")
    main = real[0] if real else shown
    rel = os.path.relpath(main, policy.workspace) if main.startswith(policy.workspace.rstrip("/") + "/") else main
    suggest = (f"{rule_kind}: {rel}",)
    if high:
        return Decision("ask", "the agent rated this action HIGH risk", suggest=suggest, risky=True)
    why = _place_asks(real, policy, sensitive)
    if why is not None and policy.level != "never":
        return Decision("ask", f"a {verb} of {typed}: {why}", risky=True)  # no "always" for these places
    if asks:
        return Decision("ask", f"policy {policy.level}: every {verb} is asked", suggest=suggest)
    return Decision("allow", f"policy {policy.level}")


def _place_asks(real: tuple[str, ...], policy: Policy, sensitive: bool) -> str | None:
    """Why a file's real place is asked whatever the rules say: oh's own files; for a change also .git/,
    .vscode/, ... and outside the workspace."""
    for p in real:
        if _protected(p, policy):
            return "one of oh's own files (only you decide with those)"
        why = _sensitive_path(p, policy) if sensitive else None
        if why is not None:
            return f"a sensitive place ({why}; resolved: {p})"
    return None


def _decide_run(policy: Policy, args: dict[str, Any], high: bool, where: Where) -> Decision:
    command = str(args.get("command", ""))
    asks_commands = policy.level in ("commands", "all")
    run_rules = [r for r in policy.rules if r.kind == "run"]
    if args.get("is_input"):
        text = command.strip()
        if not text or text in CONTROL_KEYS or (policy.level not in ("commands", "all") and not high):
            return Decision("allow", "input to a running command")
        return Decision("ask", f"policy {policy.level}: text typed into a running command is asked (it may be a shell)")
    if not command.strip():
        return Decision("allow", "no new command")
    quiet = policy.level == "never" and not any(r.verdict != "allow" for r in run_rules) and not high
    size = len(command.encode("utf-8", "surrogatepass"))
    if size > MAX_SHOW and not quiet:
        return Decision(
            "deny",
            f"command too long to show for consent ({size} bytes > {MAX_SHOW}); split it or write a script file "
            "(a `write` action) and run that",
            refused=True,
        )
    parsed = shellparse.parse(command)
    if parsed.unknown is not None:
        if quiet:
            return Decision("allow", "policy never")
        return Decision(
            "ask", f"the command could not be checked part by part ({parsed.unknown}), so it is asked", parts=(command,)
        )
    env = tuple(k for k in (args.get("env") or {}) if isinstance(k, str))
    parts = [replace(p, env=p.env + env) for p in parsed.parts] if env else list(parsed.parts)
    shown = tuple(p.display() for p in parts)
    cwd_why = _cwd_asks(policy, where)
    if cwd_why is not None and not quiet:
        return Decision("ask", cwd_why, parts=shown, risky=True)
    verdict, reason, rule = "allow", f"policy {policy.level}", None
    suggest: list[str] = []
    risky_any = False
    for part in parts:
        matches = [(r, _match_rule(r, part)) for r in run_rules]
        deny = next((r for r, m in matches if r.verdict == "deny" and m in ("yes", "loose")), None)
        if deny is not None:
            return Decision(
                "deny", f"a rule denies `{part.display()}` (deny {deny.text})", f"deny {deny.text}", parts=shown
            )
        by_path = _write_rules(policy, part, where)
        if by_path is not None and by_path[0] == "deny":
            return Decision("deny", by_path[1], by_path[2], parts=shown)
        part_verdict, part_reason, part_rule, part_risky, coverable = by_path or _part_verdict(
            policy, part, matches, high, asks_commands, where
        )
        risky_any = risky_any or part_risky
        if part_verdict == "ask":
            if verdict != "ask":
                verdict, reason, rule = "ask", part_reason, part_rule
            s = _suggest_run(part)
            if s not in suggest and coverable:
                suggest.append(s)
    if verdict == "allow" and parts and all(_allowing(run_rules, p) for p in parts):
        reason = "allowed by rules: " + "; ".join(_allowing(run_rules, p) or "" for p in parts)
    return Decision(verdict, reason, rule, tuple(suggest), shown, risky_any)


def _write_rules(policy: Policy, part: Part, where: Where) -> tuple[str, str, str | None, bool, bool] | None:
    """Deny and ask ``write:`` rules hold for the files a command writes too (redirections, tee, cp...),
    matched where they are written to be and where they really are."""
    rules_ = [r for r in policy.rules if r.kind == "write" and r.verdict != "allow"]
    if not rules_:
        return None
    blind_write = part.blind_writes[0] if part.blind_writes else _implied_blind(part)
    if blind_write is not None:
        return (
            "ask",
            f"`{part.display()}` writes {blind_write} (known only at run time) and write rules deny or ask",
            None,
            True,
            False,
        )
    hidden = _program_runs(part) or _program_blind(part)
    if hidden is None:
        hidden = _linked_write(part, policy, where)
    if hidden is not None:
        return "ask", f"`{part.display()}`: {hidden}, and write rules deny or ask", None, True, False
    for target in part.writes + _implied_writes(part):
        candidates = (normalize(target, where.base, policy), *_places(target, policy, where))
        for verdict in ("deny", "ask"):
            hit = next(
                (
                    r
                    for r in rules_
                    if r.verdict == verdict and any(path_matches(r.pattern, p, policy, True) for p in candidates)
                ),
                None,
            )
            if hit is not None:
                does = "denies" if verdict == "deny" else "asks before"
                return (
                    verdict,
                    f"a rule {does} this change: `{part.display()}` writes {target} ({verdict} {hit.text})",
                    f"{verdict} {hit.text}",
                    False,
                    False,
                )
    return None


def _linked_write(part: Part, policy: Policy, where: Where) -> str | None:
    """A write into an existing file with other hard links writes the file under all its names (one may be
    a denied path, or in .git/): where it really writes is not known."""
    for target in part.writes + _implied_writes(part):
        if any(p in where.linked for p in _places(target, policy, where)):
            return f"{target} has other hard links (another name of it may be anywhere)"
    return None


def _allowing(run_rules: list[Rule], part: Part) -> str | None:
    rule = next((r for r in run_rules if r.verdict == "allow" and _match_part(r, part) == "yes"), None)
    rule = rule or _allowed_via([(r, "") for r in run_rules], part)
    return rule.text if rule is not None else None


def _allowed_via(matches: list[tuple[Rule, str]], part: Part) -> Rule | None:
    """An allow rule naming the whole package-runner line (``run: uv run pytest *``) covers the program it
    runs, unless that program is risky by itself: ``run: npx *`` does not allow ``npx rm -rf x``."""
    if not part.via:
        return None
    line = replace(part, words=part.via, via=())
    for rule, _ in matches:
        if rule.verdict == "allow" and _match_part(rule, line) == "yes" and is_risky(part) is None:
            return rule
    return None


def _cwd_asks(policy: Policy, where: Where) -> str | None:
    if where.cwd is None or policy.level == "never":
        return None
    if _protected(where.cwd, policy):
        return f"the command would run in oh's own files ({where.cwd}): only you decide with those"
    return None


def _part_verdict(
    policy: Policy, part: Part, matches: list[tuple[Rule, str]], high: bool, asks_commands: bool, where: Where
) -> tuple[str, str, str | None, bool, bool]:
    """(verdict, reason, rule, risky, an allow rule could cover it) for one part no deny rule names."""
    maybe_deny = next((r for r, m in matches if r.verdict == "deny" and m == "maybe"), None)
    ask = next((r for r, m in matches if r.verdict == "ask" and m != "no"), None)
    allow = next((r for r, m in matches if r.verdict == "allow" and m == "yes"), None) or _allowed_via(matches, part)
    if maybe_deny is not None:
        why = f"`{part.display()}` may be what a deny rule names (deny {maybe_deny.text}); asked rather than guessed"
        return "ask", why, None, True, False
    if ask is not None:
        return "ask", f"a rule asks before `{part.display()}` (ask {ask.text})", f"ask {ask.text}", False, False
    # what no allow rule covers: oh's files and deciding commands, a variable that changes what runs,
    # writes into .git/, .vscode/, outside the workspace or to a place known only at run time
    hard = _touches(part, policy, where) or _hard_risk(part)
    if hard is not None and policy.level != "never":
        return "ask", f"`{part.display()}`: {hard}", None, True, False
    if part.assign_only:
        return "allow", "", None, False, False  # a plain variable: data, not a command
    if allow is not None and asks_commands and (late := _late_path(part, policy)) is not None:
        why = f"`{part.display()}`: `{late}` is only known at run time and may name any file, oh's own included"
        return "ask", why, None, True, False
    if allow is not None:
        if high:
            return "ask", "the agent rated this command HIGH risk", None, False, False
        return "allow", "", None, False, False
    risky = is_risky(part, policy, where)
    if risky is not None and policy.level != "never":
        return "ask", f"`{part.display()}`: {risky}", None, True, True
    if asks_commands:
        return "ask", f"policy {policy.level}: every command is asked", None, risky is not None, True
    if high:
        return "ask", "the agent rated this command HIGH risk", None, risky is not None, True
    return "allow", "", None, risky is not None, False


def _late_path(part: Part, policy: Policy) -> str | None:
    """Under the levels that ask every command, an allow rule covers a program given a word that is known
    only at run time ($X, $(...)) only if the program never opens it: `cat $a$b` may read oh's session file
    (or a path a read/write rule guards) whatever the pieces look like, `echo $a$b` only prints it."""
    guarded = policy.protected or any(r.kind in ("read", "write") and r.verdict != "allow" for r in policy.rules)
    if not guarded or not programs.lookup(part.name.rsplit("/", 1)[-1]).opens_args:
        return None
    return next((w.text for w in part.words[1:] if w.dynamic and re.search(r"[$`]", w.text)), None)


def _hard_risk(part: Part) -> str | None:
    bad = [n for n in part.env + part.assigns if DANGEROUS_ENV.match(n)]
    if bad:
        return f"sets {', '.join(bad)} (bash evaluates it, or it changes what runs): no allow rule covers that"
    if runs_oh(part):
        return "runs oh's own deciding commands (only you decide with those)"
    if base_git_loads(part):
        return "git with options that load configuration or programs from elsewhere (-c, --git-dir, ...)"
    return _program_runs(part)


def _program_runs(part: Part) -> str | None:
    """A program that runs commands or writes files through its script or options (sed e/w, tar
    --to-command): no allow rule for the program covers that."""
    base = part.name.rsplit("/", 1)[-1]
    rec = programs.lookup(base)
    if any(w.dynamic for w in part.words[1:]) and rec.dynamic_runs:
        return f"{part.name} with arguments known only at run time (they may run or write something)"
    return rec.runs(base, [w.text for w in part.words[1:]]) if rec.runs else None


def _program_blind(part: Part) -> str | None:
    """Why the files a program writes are only known at run time (tar -x, unzip), or None."""
    base = part.name.rsplit("/", 1)[-1]
    rec = programs.lookup(base)
    return rec.blind(base, [w.text for w in part.words[1:]]) if rec.blind else None


# ----------------------------------------------------------------------------- leaving the sandbox
def decide_unsandboxed(
    policy: Policy, args: dict[str, Any], security_risk: str | None = None, where: Where | None = None
) -> Decision:
    """A ``run`` asking for more than the agent's sandbox gives (protocol/sandbox.py): ``args.sandbox`` "off"
    (outside it) or "network" (the same sandbox with the network on). Asked at every level (``never``
    included) with the agent's reason, unless allow rules name every part of the command and the command
    would be allowed anyway: ``unsandboxed:`` rules for "off"; ``network:`` or ``unsandboxed:`` rules for
    "network" (leaving entirely covers the network). Deny rules (``run:`` or those kinds) still deny.
    "Always allow" suggests the exact command, never a wildcard: escalations are rare."""
    base = decide(policy, "run", args, security_risk, where)
    if base.verdict == "deny":
        return base
    network = args.get("sandbox") == "network"
    kinds = ("network", "unsandboxed") if network else ("unsandboxed",)
    command = str(args.get("command", ""))
    reason = " ".join(str(args.get("reason") or "").split())[:500]
    parsed = shellparse.parse(command)
    parts = parsed.parts if parsed.unknown is None else ()
    shown = tuple(p.display() for p in parts) or (command[:200],)
    esc = [
        (r.kind, _EscRule(r.verdict, "run", r.pattern, r.words, shape=_rule_shape(r, policy)))
        for r in policy.rules
        if r.kind in kinds
    ]
    for part in parts:
        hit = next(((k, r) for k, r in esc if r.verdict == "deny" and _match_part(r, part) in ("yes", "loose")), None)
        if hit is not None:
            text = f"{hit[0]}: {hit[1].pattern}"
            return Decision(
                "deny",
                f"a rule denies running `{part.display()}` with more than the sandbox gives (deny {text})",
                f"deny {text}",
                parts=shown,
            )
    where = where or Where(policy.workspace)
    action_env = bool(args.get("env"))
    shapes = [None if action_env else _shape(p, policy, where) for p in parts]
    allows = [
        next(
            (
                (k, r)
                for k, r in esc
                if r.verdict == "allow" and shape is not None and _match_part(r, p) == "yes" and shape == r.shape
            ),
            None,
        )
        for p, shape in zip(parts, shapes)
    ]
    risk = str(security_risk).upper() if isinstance(security_risk, str) else None
    if parts and all(allows) and base.verdict == "allow" and risk != "HIGH":
        text = "; ".join(f"{a[0]}: {a[1].pattern}" for a in allows if a is not None)
        return Decision("allow", f"allowed by rules: {text}", f"allow {text}", parts=shown)
    prefix = "network: " if network else "unsandboxed: "
    suggest = tuple(
        dict.fromkeys(
            prefix + " ".join(shellparse._quote(w) for w in p.argv) + _shape_text(shape, policy)
            for p, shape in zip(parts, shapes)
            if shape is not None and not any(w.dynamic for w in p.words)
        )
    )
    if network:
        why = (
            "the agent asks to run this with the NETWORK on (still sandboxed: writes only in the workspace, "
            "secrets hidden)"
        )
    else:
        why = "the agent asks to run this OUTSIDE the sandbox (network, writes anywhere, your secrets)"
    why += f": {reason or 'no reason given'}"
    if base.verdict == "ask":
        why += f"; also: {base.reason}"
    return Decision("ask", why, None, suggest, shown, True)


Shape = tuple[frozenset[str], frozenset[str]]  # (files written, files read by redirection), as the kernel places them


@dataclass(frozen=True)
class _EscRule(Rule):
    """An ``unsandboxed:`` / ``network:`` rule matched as a ``run:`` one, with the shape it covers."""

    shape: Shape = (frozenset(), frozenset())


def _rule_shape(rule: Rule, policy: Policy) -> Shape:
    """The files a rule's ``> PATH`` / ``< PATH`` name (a relative one from the workspace)."""
    return (
        frozenset(normalize(t, policy.workspace, policy) for t in rule.writes),
        frozenset(normalize(t, policy.workspace, policy) for t in rule.reads),
    )


def _shape(part: Part, policy: Policy, where: Where) -> Shape | None:
    """The files a command part writes (redirections, and files it writes through relative arguments) and reads by
    redirection, where they really are; None when that is not known before it runs (a target only known at run
    time, a relative one after a ``cd``) or the part carries environment variables a rule cannot name: no rule
    covers it, and "always" is not offered (allow once)."""
    if part.env or not all(_tilde_only(t) for t in part.blind_writes) or _implied_blind(part) is not None:
        return None
    # Redirections (a blind one here is ``~/x`` alone, placed in the home), and the files the program writes through
    # relative arguments: where those land depends on the directory (an absolute one is in the rule's words already).
    relative = tuple(t for t in _implied_writes(part) if not t.startswith(("/", "~")))
    writes = part.writes + part.blind_writes + relative
    if (part.after_cd or where.base_unknown) and any(not t.startswith(("/", "~")) for t in writes + part.reads):
        return None
    return (
        frozenset(p for t in writes for p in _places(t, policy, where)),
        frozenset(p for t in part.reads for p in _places(t, policy, where)),
    )


def _shape_text(shape: Shape | None, policy: Policy) -> str:
    """`` > PATH`` for each file written, `` < PATH`` for each read: the rule syntax of ``_command_words``."""
    if shape is None:
        return ""

    def shown(path: str) -> str:
        home = policy.home.rstrip("/")
        return _quote_path("~/" + path[len(home) + 1 :] if home and path.startswith(home + "/") else path)

    return "".join(f" > {shown(p)}" for p in sorted(shape[0])) + "".join(f" < {shown(p)}" for p in sorted(shape[1]))


# --------------------------------------------------------------------------------------- requests
APPROVAL_ID = re.compile(r"\Ac[0-9]{1,12}\Z")  # \Z: "c3\n" is no id
APPROVAL_OPS = ("list", "allow", "reject")
DECIDERS = (
    "cli",
    "live view",
    "vscode",
    "web",
)  # who may say they decided (the rule / timeout / stop are the backend's own)
MAX_REASON = 2000


@dataclass(frozen=True)
class ApprovalRequest:
    """One ``{"type": "approvals", ...}`` control request (``oh approvals / approve / reject``, the live view)."""

    op: str
    approval_id: str | None = None
    always: bool = False
    reason: str = ""
    via: str = "cli"


def parse_approval_request(obj: dict[str, Any]) -> ApprovalRequest:
    """Validate; raises ValueError with a message that says what to fix."""
    op = obj.get("op")
    if op not in APPROVAL_OPS:
        raise ValueError(f"approvals.op must be one of {', '.join(APPROVAL_OPS)} (got {str(op)[:40]!r}).")
    via = obj.get("via", "cli")
    if via not in DECIDERS:
        raise ValueError(f"approvals.via must be one of {', '.join(DECIDERS)} (got {str(via)[:40]!r}).")
    if op == "list":
        return ApprovalRequest("list", via=via)
    aid = obj.get("id")
    if not isinstance(aid, str) or not APPROVAL_ID.match(aid):
        raise ValueError(f"approvals {op} needs an id like c3 (`oh approvals` lists them; got {str(aid)[:40]!r}).")
    reason = obj.get("reason", "")
    if reason is not None and not isinstance(reason, str):
        raise ValueError("approvals reject: reason must be a string.")
    reason = (reason or "").strip()
    reason = reason[:MAX_REASON] + (" [...]" if len(reason) > MAX_REASON else "")
    always = obj.get("always", False)
    if not isinstance(always, bool):
        raise ValueError("approvals allow: always must be true or false.")
    return ApprovalRequest(op, aid, always and op == "allow", reason if op == "reject" else "", via)


def what(kind: str, args: dict[str, Any]) -> str:
    """The action as the user is asked about it (one line)."""
    if kind == "run":
        return ("input: " if args.get("is_input") else "") + " ".join(str(args.get("command", "")).split("\n"))[:500]
    return f"{kind} {args.get('command', '') + ' ' if kind == 'edit' else ''}{args.get('path', '')}"[:500]


MAX_DETAIL = 4000


def detail(kind: str, args: dict[str, Any]) -> str:
    """What a change would do, for the user who is asked (outside review mode, which shows the real diff):
    a write's content, an edit's old and new text as a diff, an insert's text. Bounded; "" for the rest."""
    from .udiff import unified_diff

    path = str(args.get("path", ""))
    if kind == "write":
        text = str(args.get("content", ""))
    elif kind == "edit" and args.get("command") == "str_replace":
        text = unified_diff(path, str(args.get("old_str") or ""), str(args.get("new_str") or ""))
    elif kind == "edit" and args.get("command") in ("create", "insert"):
        text = str(args.get("file_text") if args.get("command") == "create" else args.get("new_str") or "")
    else:
        return ""
    return text[:MAX_DETAIL] + (
        f"\n[... {len(text) - MAX_DETAIL} more characters ...]" if len(text) > MAX_DETAIL else ""
    )


def rejected_message(subject: str, who: str, reason: str) -> str:
    """REJECTED's text when the user (or a rule) refused; the reason comes last, verbatim."""
    return (
        f"The user did not allow this action ({subject}); it was NOT executed (decided by {who}). "
        f"Take the reason into account before trying something else. Reason: {reason or '(no reason given)'}"
    )


def denied_message(subject: str, reason: str) -> str:
    return (
        f"A consent rule denies this action ({subject}); it was NOT executed and asking again will not help. {reason}"
    )


def timeout_message(subject: str, seconds: float) -> str:
    return (
        f"Nobody allowed this action ({subject}) within {seconds:g} s (approval_timeout); it was NOT executed. "
        "Ask the user to answer sooner (`oh approvals`, the live view of `oh start`, or VS Code), or try again later."
    )


def unattended_message(subject: str, suggest: tuple[str, ...]) -> str:
    """oh's own request to leave the sandbox (an ``ensure`` install) while nobody can answer (no live view, no
    editor that decides): refused at once instead of waiting approval_timeout for an answer that cannot come.
    The fixes come first: callers may cut the end (the command, which the caller knows)."""
    rules_text = "; ".join(f"'{r}'" for r in suggest) or "'network: COMMAND'"
    return (
        "Not run: it needs the network, which the sandbox keeps off, and nobody can answer now (no live view "
        "of `oh start` and no editor watches this backend); nothing ran outside. To let it: turn the sandbox's "
        "network on (`oh start --sandbox-network on`, or `oh config set sandbox_network true`); or allow it by "
        f"rules (`oh config add consent_allow RULE` for each of {rules_text}); or watch the backend "
        f"(`oh watch` in another terminal, `oh start` in the foreground, or VS Code) and ask again. It was: {subject}"
    )


def allowed_note(who: str, when: str, rule: str | None = None) -> str:
    return f"[Consent: allowed by {who} at {when}{'; rule added: ' + rule if rule else ''}.]"


def moves(command: str) -> bool:
    """Whether a command line may change its shell's directory (cd, pushd, popd, or unknown)."""
    if len(command) > MAX_SHOW:
        return True
    parsed = shellparse.parse(command)
    return parsed.unknown is not None or parsed.moves
