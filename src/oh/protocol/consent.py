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

import os
import re
import shlex
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable

from . import shellparse
from .shellparse import Part

LEVELS = ("never", "risky", "commands", "changes", "all")
VERDICTS = ("allow", "ask", "deny")
RULE_KINDS = ("run", "write", "read", "risk", "unsandboxed")  # unsandboxed: decide_unsandboxed
RISKS = ("LOW", "MEDIUM", "HIGH", "UNKNOWN")
MAX_RULES = 1000
MAX_RULE = 500

# Environment names that change what a command runs or loads: a part with one of them in front is
# never allowed by an allow rule (and is risky): PATH=/tmp/evil git status runs another git.
DANGEROUS_ENV = re.compile(
    r"\A(PATH|LD_[A-Z_]*|DYLD_[A-Z_]*|BASH_ENV|ENV|IFS|PS4|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|GIT_[A-Z_]*|"
    r"[A-Z_]*_COMMAND|PAGER|EDITOR|VISUAL|PYTHON[A-Z_]*|NODE_OPTIONS|NODE_PATH|PERL5[A-Z_]*|RUBY[A-Z_]*|"
    r"LESSOPEN|LESSCLOSE|SSH_ASKPASS|SUDO_ASKPASS|OH_[A-Z_]*)\Z"
)

# Built-in risky commands (level ``risky``): deleting, overwriting devices, privileges, processes,
# the network, publishing, history rewriting, and oh's own decisions (no self-approval).
RISKY_NAMES = frozenset(
    {
        "rm",
        "rmdir",
        "shred",
        "unlink",
        "dd",
        "mkfs",
        "fdisk",
        "sfdisk",
        "parted",
        "wipefs",
        "mkswap",
        "truncate",
        "chmod",
        "chown",
        "chgrp",
        "chattr",
        "setfacl",
        "kill",
        "killall",
        "pkill",
        "reboot",
        "shutdown",
        "halt",
        "poweroff",
        "systemctl",
        "service",
        "launchctl",
        "crontab",
        "at",
        "mount",
        "umount",
        "iptables",
        "nft",
        "ufw",
        "su",
        "sudo",
        "doas",
        "passwd",
        "useradd",
        "userdel",
        "usermod",
        "visudo",
        "curl",
        "wget",
        "scp",
        "sftp",
        "rsync",
        "ssh",
        "nc",
        "ncat",
        "netcat",
        "socat",
        "telnet",
        "ftp",
        "docker",
        "podman",
        "kubectl",
        "terraform",
        "security",
        "keyctl",
        "secret-tool",
        "gpg",
    }
)
RISKY_SUBCOMMANDS = {
    "git": (
        ("push",),
        ("reset", "--hard"),
        ("clean",),
        ("branch", "-D"),
        ("checkout", "--"),
        ("restore",),
        ("filter-branch",),
        ("update-ref",),
        ("reflog", "expire"),
        ("gc", "--prune"),
        ("stash", "drop"),
        ("stash", "clear"),
        ("config",),
        ("-c",),
    ),
    "npm": (("publish",), ("unpublish",)),
    "pnpm": (("publish",),),
    "yarn": (("publish",), ("npm", "publish")),
    "cargo": (("publish",),),
    "twine": (("upload",),),
    "gh": (("release",), ("repo", "delete"), ("secret",), ("auth",)),
    "pip": (("uninstall",),),
    "pip3": (("uninstall",),),
    # oh's own decisions and secrets: an agent answering for itself (issue 19 §3)
    "oh": (("approve",), ("reject",), ("approvals",), ("review",), ("token",), ("config",), ("stop",)),
}
SENSITIVE_DIRS = (".git", ".vscode", ".oh", ".idea", ".devcontainer", ".github")  # changes here can run code


class RuleError(ValueError):
    """A rule that cannot be read; the message says how to write it."""


@dataclass(frozen=True)
class Rule:
    verdict: str  # allow | ask | deny
    kind: str  # run | write | read | risk
    pattern: str
    words: tuple[str, ...] = ()  # run: the pattern's words

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
            f"rule {text!r}: write KIND: PATTERN with KIND one of run, write, read, risk, unsandboxed (e.g. 'run: npm test *', 'write: src/**', 'risk: HIGH', 'unsandboxed: npm ci')"
        )
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in pattern):
        raise RuleError(f"rule {text!r} holds a control or invisible character")
    if kind == "risk":
        level = pattern.upper()
        if level not in RISKS:
            raise RuleError(f"rule {text!r}: risk must be one of {', '.join(RISKS)}")
        if verdict == "allow":
            raise RuleError(
                f"rule {text!r}: security_risk can only ask or deny (the agent chooses its own risk, so it must never be what allows an action)"
            )
        return Rule(verdict, kind, level)
    if kind in ("run", "unsandboxed"):
        try:
            words = tuple(shlex.split(pattern))
        except ValueError as exc:
            raise RuleError(f"rule {text!r}: {exc}") from None
        if not words or words[0] == "*":
            raise RuleError(f"rule {text!r}: a command rule starts with the program's name (e.g. 'run: git status *')")
        return Rule(verdict, kind, " ".join(shellparse._quote(w) if w != "*" else "*" for w in words), words)
    return Rule(verdict, kind, pattern)


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
    if part.env and any(DANGEROUS_ENV.match(e) for e in part.env):
        maybe = True
    return "maybe" if maybe else "loose" if loose else "yes"


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


def path_matches(pattern: str, path: str, policy: Policy) -> bool:
    full = os.path.normpath(_abs_pattern(pattern, policy))
    if pattern.endswith("/**"):
        full = full  # normpath keeps the /** suffix
    return _glob_regex(full).match(os.path.normpath(path)) is not None


def is_risky(part: Part, policy: Policy | None = None) -> str | None:
    """Why a part is risky (built-in notion), or None."""
    base = part.name.rsplit("/", 1)[-1]
    argv = part.argv
    if part.sudo:
        return "runs as another user (sudo)"
    if base in RISKY_NAMES or base.startswith("mkfs."):
        return (
            f"{base} is a risky command (deletes, changes permissions, processes, privileges or talks to the network)"
        )
    for sub in RISKY_SUBCOMMANDS.get(base, ()):
        args = [a for a in argv[1:]]
        if base == "git":  # skip git's global options (-C dir, --git-dir=...)
            while args and args[0].startswith("-") and args[0] != "-c":
                flag = args.pop(0)
                if flag in ("-C",) and args:
                    args.pop(0)
        if tuple(args[: len(sub)]) == sub or (sub[0].startswith("-") and sub[0] in args):
            return f"{base} {' '.join(sub)} is a risky command"
    if part.stdin_code:
        return f"{base} runs a program it reads from its input (e.g. curl ... | sh)"
    if any(DANGEROUS_ENV.match(e) for e in part.env):
        return (
            "sets an environment variable that changes what runs ("
            + ", ".join(e for e in part.env if DANGEROUS_ENV.match(e))
            + ")"
        )
    if part.extra_args and base in ("rm", "sh", "bash"):
        return f"{base} with arguments from its input"
    if policy is not None:
        for w in list(argv) + list(part.writes):
            if _touches_protected(w, policy):
                return "touches oh's own files (sessions, tokens, config): only you decide with those"
        for target in part.writes:
            if _sensitive_path(target, policy):
                return f"writes {target}"
    return None


def _expand(word: str, policy: Policy) -> str:
    if word.startswith("~/") and policy.home:
        return policy.home + word[1:]
    return word


def _touches_protected(word: str, policy: Policy) -> bool:
    w = _expand(word, policy)
    return any(p and p in w for p in policy.protected) or "oh/sessions" in w or "OH_HOME" in w


def _sensitive_path(path: str, policy: Policy) -> str | None:
    """Why a change to ``path`` is risky, or None."""
    p = os.path.normpath(path if os.path.isabs(path) else os.path.join(policy.workspace, _expand(path, policy)))
    ws = os.path.normpath(policy.workspace)
    if any(x and (p == x or p.startswith(x.rstrip("/") + "/")) for x in policy.protected):
        return "one of oh's own files"
    if p != ws and not p.startswith(ws.rstrip("/") + "/"):
        return "outside the workspace"
    rel = os.path.relpath(p, ws).split(os.sep)
    if rel and rel[0] in SENSITIVE_DIRS:
        return f"inside {rel[0]}/ (settings, hooks or tasks there can run code)"
    return None


# Programs whose first argument is a subcommand: "always allow" suggests `git status *`, not `git *`.
SUBCOMMAND_PROGRAMS = frozenset(
    {
        "git",
        "npm",
        "pnpm",
        "yarn",
        "npx",
        "cargo",
        "go",
        "docker",
        "podman",
        "kubectl",
        "pip",
        "pip3",
        "uv",
        "poetry",
        "pipenv",
        "conda",
        "gh",
        "oh",
        "make",
        "just",
        "dotnet",
        "mvn",
        "gradle",
        "bundle",
        "rake",
        "composer",
        "apt",
        "apt-get",
        "brew",
        "systemctl",
        "deno",
        "bun",
        "rustup",
        "hatch",
        "tox",
        "nox",
        "terraform",
        "helm",
    }
)


def _suggest_run(part: Part) -> str:
    words = list(part.argv)
    out = [words[0]]
    if (
        words[0] in SUBCOMMAND_PROGRAMS
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


def decide(policy: Policy, kind: str, args: dict[str, Any], security_risk: str | None = None) -> Decision:
    """The verdict for one action."""
    risk = str(security_risk).upper() if isinstance(security_risk, str) else None
    risk_rules = [r for r in policy.rules if r.kind == "risk" and risk is not None and r.pattern == risk]
    for verdict in ("deny", "ask"):
        hit = next((r for r in risk_rules if r.verdict == verdict), None)
        if hit is not None:
            return Decision(
                verdict, f"the agent rated this action {risk} (rule {verdict} {hit.text})", f"{verdict} {hit.text}"
            )
    high = policy.level == "risky" and risk == "HIGH"
    if kind == "run":
        return _decide_run(policy, args, high)
    if kind in ("write", "edit") and not (kind == "edit" and args.get("command") == "view"):
        return _decide_path(policy, "write", str(args.get("path", "")), high, asks=policy.level in ("changes", "all"))
    if kind == "read" or (kind == "edit" and args.get("command") == "view"):
        return _decide_path(
            policy, "read", str(args.get("path", "")), high, asks=policy.level == "all", sensitive=False
        )
    if high:
        return Decision("ask", "the agent rated this action HIGH risk")
    return Decision("allow", "not a command, change or read")


def _decide_path(policy: Policy, rule_kind: str, path: str, high: bool, asks: bool, sensitive: bool = True) -> Decision:
    verb = "change" if rule_kind == "write" else "read"
    matching = [r for r in policy.rules if r.kind == rule_kind and path and path_matches(r.pattern, path, policy)]
    for verdict in ("deny", "ask", "allow"):
        hit = next((r for r in matching if r.verdict == verdict), None)
        if hit is not None:
            why = {
                "deny": f"a rule denies this {verb}",
                "ask": f"a rule asks before this {verb}",
                "allow": f"a rule allows this {verb}",
            }[verdict]
            if verdict == "allow" and high:
                return Decision("ask", "the agent rated this action HIGH risk", suggest=())
            return Decision(verdict, f"{why} ({verdict} {hit.text})", f"{verdict} {hit.text}")
    rel = os.path.relpath(path, policy.workspace) if path.startswith(policy.workspace.rstrip("/") + "/") else path
    suggest = (f"{rule_kind}: {rel}",)
    if high:
        return Decision("ask", "the agent rated this action HIGH risk", suggest=suggest, risky=True)
    if policy.level == "risky" and sensitive:
        sensitive_why = _sensitive_path(path, policy)
        if sensitive_why is not None:
            return Decision("ask", f"a {verb} of a sensitive path: {sensitive_why}", suggest=suggest, risky=True)
    if any(path.startswith(p) for p in policy.protected if p) and policy.level != "never":
        return Decision("ask", f"a {verb} of oh's own files", suggest=(), risky=True)
    if asks:
        return Decision("ask", f"policy {policy.level}: every {verb} is asked", suggest=suggest)
    return Decision("allow", f"policy {policy.level}")


def _decide_run(policy: Policy, args: dict[str, Any], high: bool) -> Decision:
    command = str(args.get("command", ""))
    asks_commands = policy.level in ("commands", "all")
    if args.get("is_input"):
        text = command.strip()
        if not text or text in CONTROL_KEYS or (policy.level not in ("commands", "all") and not high):
            return Decision("allow", "input to a running command")
        return Decision("ask", f"policy {policy.level}: text typed into a running command is asked (it may be a shell)")
    if not command.strip():
        return Decision("allow", "no new command")
    parsed = shellparse.parse(command)
    run_rules = [r for r in policy.rules if r.kind == "run"]
    if parsed.unknown is not None:
        if policy.level == "never" and not any(r.verdict != "allow" for r in run_rules) and not high:
            return Decision("allow", "policy never")
        return Decision(
            "ask",
            f"the command could not be checked part by part ({parsed.unknown}), so it is asked",
            parts=(command[:200],),
        )
    parts = parsed.parts
    shown = tuple(p.display() for p in parts)
    verdict, reason, rule = "allow", f"policy {policy.level}", None
    suggest: list[str] = []
    risky_any = False
    for part in parts:
        matches = [(r, _match_part(r, part)) for r in run_rules]
        deny = next((r for r, m in matches if r.verdict == "deny" and m in ("yes", "loose")), None)
        if deny is not None:
            return Decision(
                "deny", f"a rule denies `{part.display()}` (deny {deny.text})", f"deny {deny.text}", parts=shown
            )
        maybe_deny = next((r for r, m in matches if r.verdict == "deny" and m == "maybe"), None)
        ask = next((r for r, m in matches if r.verdict == "ask" and m != "no"), None)
        allow = next((r for r, m in matches if r.verdict == "allow" and m == "yes"), None)
        part_verdict, part_reason, part_rule = "allow", "", None
        if maybe_deny is not None:
            part_verdict, part_reason = (
                "ask",
                f"`{part.display()}` may be what a deny rule names (deny {maybe_deny.text}); asked rather than guessed",
            )
        elif ask is not None:
            part_verdict, part_reason, part_rule = (
                "ask",
                f"a rule asks before `{part.display()}` (ask {ask.text})",
                f"ask {ask.text}",
            )
        elif allow is not None:
            part_verdict = "allow"
            sensitive = next(
                (w for w in part.writes if _sensitive_path(w, policy) or _touches_protected(w, policy)), None
            )
            if high:
                part_verdict, part_reason = "ask", "the agent rated this command HIGH risk"
            elif sensitive is not None and policy.level != "never":
                # an allow rule names the program, not where its output goes: .git/hooks, .vscode/tasks.json...
                part_verdict, part_reason = (
                    "ask",
                    f"`{part.display()}` writes {sensitive} ({_sensitive_path(sensitive, policy) or 'oh files'})",
                )
        else:
            why = is_risky(part, policy)
            risky_any = risky_any or why is not None
            if why is not None and policy.level != "never":
                part_verdict, part_reason = "ask", f"`{part.display()}`: {why}"
            elif asks_commands:
                part_verdict, part_reason = "ask", f"policy {policy.level}: every command is asked"
            elif high:
                part_verdict, part_reason = "ask", "the agent rated this command HIGH risk"
        if part_verdict == "ask":
            if verdict != "ask":
                verdict, reason, rule = "ask", part_reason, part_rule
            s = _suggest_run(part)
            if s not in suggest and part_rule is None and maybe_deny is None:
                suggest.append(s)
    if (
        verdict == "allow"
        and parts
        and all(any(r.verdict == "allow" and _match_part(r, p) == "yes" for r in run_rules) for p in parts)
    ):
        reason = "allowed by rules: " + "; ".join(
            next(r.text for r in run_rules if r.verdict == "allow" and _match_part(r, p) == "yes") for p in parts
        )
    return Decision(verdict, reason, rule, tuple(suggest), shown, risky_any)


# ----------------------------------------------------------------------------- leaving the sandbox
def decide_unsandboxed(policy: Policy, args: dict[str, Any], security_risk: str | None = None) -> Decision:
    """A ``run`` asking to leave the agent's sandbox (``args.sandbox`` "off", protocol/sandbox.py): asked at
    every level (``never`` included) with the agent's reason, unless ``unsandboxed:`` allow rules name every
    part of the command and the command would be allowed anyway. Deny rules (``run:`` or ``unsandboxed:``)
    still deny. "Always allow" suggests the exact command, never a wildcard: leaving the sandbox is rare."""
    base = decide(policy, "run", args, security_risk)
    if base.verdict == "deny":
        return base
    command = str(args.get("command", ""))
    reason = " ".join(str(args.get("reason") or "").split())[:500]
    parsed = shellparse.parse(command)
    parts = parsed.parts if parsed.unknown is None else ()
    shown = tuple(p.display() for p in parts) or (command[:200],)
    esc = [Rule(r.verdict, "run", r.pattern, r.words) for r in policy.rules if r.kind == "unsandboxed"]
    for part in parts:
        hit = next((r for r in esc if r.verdict == "deny" and _match_part(r, part) in ("yes", "loose")), None)
        if hit is not None:
            text = f"unsandboxed: {hit.pattern}"
            return Decision(
                "deny",
                f"a rule denies running `{part.display()}` unsandboxed (deny {text})",
                f"deny {text}",
                parts=shown,
            )
    allows = [next((r for r in esc if r.verdict == "allow" and _match_part(r, p) == "yes"), None) for p in parts]
    risk = str(security_risk).upper() if isinstance(security_risk, str) else None
    if parts and all(allows) and base.verdict == "allow" and risk != "HIGH":
        text = "; ".join(f"unsandboxed: {r.pattern}" for r in allows if r is not None)
        return Decision("allow", f"allowed to run unsandboxed by rules: {text}", f"allow {text}", parts=shown)
    suggest = tuple(
        dict.fromkeys(
            "unsandboxed: " + " ".join(shellparse._quote(w) for w in p.argv)
            for p in parts
            if not any(w.dynamic for w in p.words)
        )
    )
    why = f"the agent asks to run this OUTSIDE the sandbox (network, writes anywhere, your secrets): {reason or 'no reason given'}"
    if base.verdict == "ask":
        why += f"; also: {base.reason}"
    return Decision("ask", why, None, suggest, shown, True)


# --------------------------------------------------------------------------------------- requests
APPROVAL_ID = re.compile(r"\Ac[0-9]{1,12}\Z")  # \Z: "c3\n" is no id
APPROVAL_OPS = ("list", "allow", "reject")
DECIDERS = ("cli", "live view", "vscode")  # who may say they decided (the rule / timeout / stop are the backend's own)
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


def allowed_note(who: str, when: str, rule: str | None = None) -> str:
    return f"[Consent: allowed by {who} at {when}{'; rule added: ' + rule if rule else ''}.]"
