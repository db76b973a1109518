"""Consent around any runtime (issue 19, docs/protocol.md §3.13): before an action runs, the policy and
the user's rules decide (``protocol/consent.py``); an action that needs consent waits here, in the
``Approvals`` registry, until the user allows or rejects it (``oh approve`` / ``oh reject``, the live
view of ``oh start``, VS Code), or ``approval_timeout`` passes. A rejected, denied or unanswered action
is never passed on: the agent gets ``REJECTED`` with the reason.

Like ``BranchGuard`` it wraps the runtime, so every route an action takes (Python client, CLI, MCP,
the OpenHands integrations) passes through it. While an action waits, its own deadline is paused
(``on_wait``, set by the backend): the user's thinking time is not the command's time.

File changes under a level that asks for them and review mode on are asked by review mode itself
(the proposal shows the diff); the guard only denies them by rule, or lets an allow rule skip the
proposal (``Action.consented``, set here only).
"""

from __future__ import annotations

import asyncio
import dataclasses
import fnmatch
import glob
import itertools
import logging
import os
import stat
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Hashable

from ..errors import OhBaseError
from ..protocol import consent as rules
from ..protocol import progress
from ..protocol.errors import ErrorId
from ..protocol.events import Action, error_observation
from ..protocol.observation import prepend_note
from ..protocol.review import is_proposal
from . import escalation
from .base import Runtime, Wrapper, as_context, report

log = logging.getLogger("oh.runtimes.consent")


def _consented(action: Action, unsandboxed: bool) -> Action:
    """The action as passed on once a rule (or the user, here) allowed it: review mode then writes it without
    a proposal, and a run that asked to leave the sandbox (``unsandboxed``) may. Fields of the Action object,
    not of the frame, so nothing an agent sends can claim them."""
    return dataclasses.replace(action, consented=True, unsandboxed=unsandboxed)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(eq=False)
class Pending:
    approval_id: str
    action_id: int  # the backend's (leg) id, as monitors know the action
    agent_id: str
    agent_name: str
    kind: str
    subject: str  # what the user is asked about (the command, or "write PATH")
    reason: str  # why it is asked
    parts: tuple[str, ...]
    suggest: tuple[str, ...]  # the rules "always allow" would add
    security_risk: str | None
    detail: str = ""  # a change's content or diff (protocol.consent.detail)
    command: str = ""  # a run's whole command line: what the user approves is what they see
    cwd: str = ""  # where a run runs (issue 40: the approvals page shows it)
    env: dict[str, str] = field(default_factory=dict)  # a run's environment changes (its ``env`` argument)
    created: float = field(default_factory=time.monotonic)
    created_at: str = field(default_factory=_now)
    future: asyncio.Future | None = None

    def row(self) -> dict[str, Any]:
        return {
            "id": self.approval_id,
            "action_id": self.action_id,
            "agent_id": self.agent_id,
            "agent": self.agent_name,
            "kind": self.kind,
            "what": self.subject,
            "reason": self.reason,
            "parts": list(self.parts),
            "always": list(self.suggest),
            "security_risk": self.security_risk,
            **({"detail": self.detail} if self.detail else {}),
            **({"command": self.command} if self.command else {}),
            **({"cwd": self.cwd} if self.cwd else {}),
            **({"env": dict(self.env)} if self.env else {}),
            "age_s": round(time.monotonic() - self.created, 1),
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class Answer:
    allowed: bool
    who: str  # cli | live view | vscode | timeout | stop
    at: str
    reason: str = ""
    rule: str | None = None  # the allow rules added ("always"), as one line
    rules: tuple[str, ...] = ()


class Approvals:
    """What waits for the user's consent, in order; decisions come from the control leg."""

    def __init__(self, timeout: float) -> None:
        self.timeout = float(timeout)
        self.pending: dict[str, Pending] = {}
        self._ids = itertools.count(1)
        self.on_event: Callable[[str, dict[str, Any]], None] | None = None  # the backend: trace + monitors
        self.on_rule: Callable[[rules.Rule], None] | None = None  # an "always" answer added a rule

    def new_id(self) -> str:
        return f"c{next(self._ids)}"

    def emit(self, name: str, fields: dict[str, Any]) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(name, fields)
        except Exception:  # noqa: BLE001 - a listener's bug must not lose the decision
            log.exception("consent event listener failed")

    async def wait(self, p: Pending) -> Answer:
        p.future = asyncio.get_running_loop().create_future()
        self.pending[p.approval_id] = p
        self.emit("approval_requested", p.row())
        answer = Answer(False, "timeout", _now())
        try:
            answer = await asyncio.wait_for(asyncio.shield(p.future), self.timeout)
            return answer
        except asyncio.TimeoutError:
            answer = Answer(False, "timeout", _now(), rules.timeout_message(p.subject, self.timeout))
            return answer
        except asyncio.CancelledError:
            answer = Answer(False, "cancelled", _now())
            raise
        finally:
            self.pending.pop(p.approval_id, None)
            self.emit(
                "approval_decided",
                {
                    "id": p.approval_id,
                    "action_id": p.action_id,
                    "agent_id": p.agent_id,
                    "kind": p.kind,
                    "what": p.subject,
                    "decision": "allowed" if answer.allowed else "rejected",
                    "by": answer.who,
                    "at": answer.at,
                    "reason": answer.reason,
                    "rule": answer.rule,
                    "rules": list(answer.rules),
                    "security_risk": p.security_risk,
                },
            )

    def list(self) -> list[dict[str, Any]]:
        return [p.row() for p in self.pending.values()]

    def decide(self, approval_id: str, allow: bool, who: str, reason: str = "", always: bool = False) -> dict[str, Any]:
        p = self.pending.get(approval_id)
        if p is None or p.future is None or p.future.done():
            return {
                "id": approval_id,
                "outcome": "unknown",
                "message": (
                    f"No pending approval {approval_id}: it was decided, timed out or its agent left. `oh "
                    "approvals` lists what waits."
                ),
            }
        rule_text = None
        if allow and always:
            if not p.suggest:
                return {
                    "id": approval_id,
                    "outcome": "unknown",
                    "message": f"{approval_id} has no rule to always allow (allow it once instead).",
                }
            for text in p.suggest:
                rule = rules.parse_rule(text, "allow")
                if self.on_rule is not None:
                    self.on_rule(rule)
            rule_text = ", ".join(p.suggest)
        p.future.set_result(Answer(allow, who, _now(), reason, rule_text, tuple(p.suggest) if rule_text else ()))
        row: dict[str, Any] = {
            "id": approval_id,
            "outcome": "allowed" if allow else "rejected",
            "what": p.subject,
            "by": who,
        }
        if rule_text:
            row["rules"] = list(p.suggest)
        return row

    def close(self) -> None:
        for p in list(self.pending.values()):
            if p.future is not None and not p.future.done():
                p.future.set_result(
                    Answer(False, "stop", _now(), "The backend stopped while the action waited for consent.")
                )


class ConsentGuard(Wrapper):
    def __init__(self, inner: Runtime, policy: rules.Policy, approvals: Approvals, review: bool = False) -> None:
        self.inner = inner
        self.policy = policy
        self.approvals = approvals
        self.review = review  # the inner runtime asks for changes itself (proposals with a diff)
        # Set by the backend: (leg id, waiting?) -> pause or resume the action's deadline.
        self.on_wait: Callable[[int, bool], None] | None = None
        self._moved: set[str] = set()  # agents whose shell ran a cd (see where())
        # Set by the backend: whether anyone can answer a question now (a live view or an editor that decides).
        # None: unknown, so every question waits (approval_timeout).
        self.can_answer: Callable[[], bool] | None = None
        approvals.on_rule = self.add_rule

    def add_rule(self, rule: rules.Rule) -> None:
        self.policy = self.policy.with_rule(rule)

    def set_policy(self, level: str, new_rules: tuple[rules.Rule, ...]) -> None:
        """The user changed their consent settings while this backend runs (`oh config set consent ...`): the
        next action is decided by them. Questions already waiting stay as they were asked."""
        p = self.policy
        self.policy = rules.Policy(level, new_rules, p.workspace, p.home, p.protected)

    def consent_status(self) -> dict[str, Any]:
        return {
            "level": self.policy.level,
            "approval_timeout": self.approvals.timeout,
            "pending": len(self.approvals.pending),
            "waiting": self.approvals.list(),
            "rules": [{"verdict": r.verdict, "rule": r.text} for r in self.policy.rules],
        }

    async def close(self) -> None:
        self.approvals.close()
        await self.inner.close()

    def _someone_can_answer(self) -> bool:
        return self.can_answer is None or bool(self.can_answer())

    def _unattended(self, action: Action, agent_id: str, subject: str, decision: rules.Decision) -> dict[str, Any]:
        """oh's own request to leave the sandbox with nobody to answer it: refused now, said in the trace."""
        message = rules.unattended_message(subject, decision.suggest)
        self.approvals.emit(
            "approval_decided",
            {
                "id": None,
                "action_id": action.id,
                "agent_id": agent_id,
                "kind": action.kind,
                "what": subject,
                "decision": "rejected",
                "by": "unattended",
                "at": _now(),
                "reason": message,
                "rule": None,
                "security_risk": action.security_risk,
            },
        )
        return _rejected(action.id, message, "unattended")

    def where(self, action: Action, agent: Hashable) -> rules.Where:
        """The I/O half of the decision: every path the action names, resolved as the kernel will open it
        (symlinks, ``..``, ``//``) from where it runs: the action's ``cwd``, else the agent shell's current
        directory (run), else the agent's working directory (X-OH-Workdir)."""
        ctx = as_context(agent)
        workdir = os.path.realpath(ctx.workdir or self.policy.workspace)
        base, cwd, unknown = workdir, None, False
        if action.kind == "run":
            shell_cwd = getattr(self.inner, "shell_cwd", None)
            now = shell_cwd(ctx) if callable(shell_cwd) else None
            base = os.path.realpath(now) if isinstance(now, str) and now else workdir
            # a runtime that cannot say where its shell is (an editor's terminal): after a cd, unknown
            unknown = not now and ctx.id in self._moved
            if isinstance(action.args.get("cwd"), str) and action.args["cwd"]:
                try:
                    cwd = base = _resolve(action.args["cwd"], workdir, self.policy)
                    unknown = False
                except Unresolvable:
                    unknown = True
            if not action.args.get("is_input") and rules.moves(str(action.args.get("command", ""))):
                self._moved.add(ctx.id)
        paths: dict[str, tuple[str, ...]] = {}
        unresolved: list[str] = []
        for typed in rules.places(action.kind, action.args):
            try:
                paths[typed] = _resolve_all(typed, base, self.policy)
            except Unresolvable:  # fail closed: decide() asks about a word whose files it cannot all see
                unresolved.append(typed)
        try:
            gits = {
                d: _git_dir(_resolve(d or ".", base, self.policy)) for d in rules.git_starts(action.kind, action.args)
            }
        except Unresolvable:
            gits, unknown = {}, True
        linked = frozenset(p for got in paths.values() for p in got if _hard_linked(p))
        return rules.Where(base, paths, cwd, unknown, gits, linked, tuple(unresolved))

    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        unsandboxed = escalation.requested(action)  # leaving the sandbox: its own decision (runtimes/escalation.py)
        where = self.where(action, agent)
        if unsandboxed:
            decision = rules.decide_unsandboxed(self.policy, action.args, action.security_risk, where)
        else:
            decision = rules.decide(self.policy, action.kind, action.args, action.security_risk, where)
        if decision.verdict == "allow":
            if decision.rule is not None:  # a path rule allowed this change: no proposal either
                return await self.inner.execute(_consented(action, unsandboxed), agent)
            return await self.inner.execute(action, agent)
        ctx = as_context(agent)
        subject = rules.what(action.kind, action.args)
        if decision.verdict == "deny" and decision.refused:
            return error_observation(action.id, ErrorId.BAD_REQUEST, decision.reason)
        if decision.verdict == "deny":
            self.approvals.emit(
                "approval_decided",
                {
                    "id": None,
                    "action_id": action.id,
                    "agent_id": ctx.id,
                    "kind": action.kind,
                    "what": subject,
                    "decision": "rejected",
                    "by": "rule",
                    "at": _now(),
                    "reason": decision.reason,
                    "rule": decision.rule,
                    "security_risk": action.security_risk,
                },
            )
            return _rejected(action.id, rules.denied_message(subject, decision.reason), "rule")
        # review mode asks, with the diff; force (issue 37) is asked as itself, not as a proposal
        if self.review and is_proposal(action.kind, action.args) and decision.reason != rules.FORCE_REASON:
            return await self.inner.execute(action, agent)
        if unsandboxed and action.own_request and not self._someone_can_answer():
            return self._unattended(action, ctx.id, subject, decision)
        p = Pending(
            self.approvals.new_id(),
            action.id,
            ctx.id,
            ctx.name,
            action.kind,
            subject,
            decision.reason,
            decision.parts,
            decision.suggest,
            action.security_risk,
            rules.detail(action.kind, action.args),
            str(action.args.get("command") or "") if action.kind == "run" else "",
            where.base if action.kind == "run" else "",
            _env_changes(action),
        )
        if self.on_wait is not None:
            self.on_wait(action.id, True)
        # The agent learns at once that (and how) its action waits: `oh run` says so on the terminal,
        # `oh mcp` as a progress notification (issue 30 #2).
        report(
            action,
            progress.WAITING,
            **progress.waiting_for_consent(p.approval_id, subject, p.reason, self.approvals.timeout),
        )
        try:
            answer = await self.approvals.wait(p)
        finally:
            if self.on_wait is not None:
                self.on_wait(action.id, False)
        if not answer.allowed:
            if answer.who == "timeout":
                return _rejected(
                    action.id, answer.reason or rules.timeout_message(subject, self.approvals.timeout), "timeout"
                )
            return _rejected(action.id, rules.rejected_message(subject, answer.who, answer.reason), answer.who)
        obs = await self.inner.execute(_consented(action, unsandboxed), agent)
        prepend_note(obs, rules.allowed_note(answer.who, answer.at, answer.rule), in_message=False)
        return obs


def _env_changes(action: Action) -> dict[str, str]:
    env = action.args.get("env") if action.kind == "run" else None
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


class Unresolvable(OhBaseError):
    """A path the gate cannot resolve within its bounds (a symlink chain deeper than Python's recursion, a
    glob whose walk is too large): the action is asked, never allowed on a guess."""


def _resolve(typed: str, base: str, policy: rules.Policy) -> str:
    try:
        return os.path.realpath(rules.normalize(typed, base, policy))
    except RecursionError:  # Python 3.11's realpath recurses per symlink: a chain of ~1,000 exhausts it
        raise Unresolvable(f"{typed[:200]}: too many levels of symbolic links") from None
    except ValueError:  # a NUL, or a lone surrogate the file system encoding cannot carry: no file has that name
        raise Unresolvable(f"{typed[:200]!r} is not a path the kernel can open") from None
    except OSError as exc:
        # realpath reads each symlink on the way; a link oh may not read (/proc/1/root, /proc/<pid>/cwd of
        # another user's process: EACCES) or a loop the kernel refuses: where it leads is not known, so it is asked.
        raise Unresolvable(f"{typed[:200]}: where it leads cannot be read ({exc.strerror or exc})") from None


def _hard_linked(path: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


def _git_dir(start: str) -> str | None:
    """The repository git's discovery finds from ``start``: the first directory upwards with a ``.git`` entry
    (that entry), or that is itself a git directory (HEAD, objects/, refs/: what git accepts as a bare one)."""
    d = start
    for _ in range(256):
        dot = os.path.join(d, ".git")
        if os.path.lexists(dot):
            return dot
        if os.path.isfile(os.path.join(d, "HEAD")) and all(
            os.path.isdir(os.path.join(d, x)) for x in ("objects", "refs")
        ):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    return None


def _resolve_all(typed: str, base: str, policy: rules.Policy) -> tuple[str, ...]:
    """What a word names: one path, or (a glob) the files it matches now, plus the pattern itself."""
    if any(c in typed for c in "*?["):
        found = [_resolve(p, "/", policy) for p in _glob(rules.normalize(typed, base, policy))]
        return tuple(found) + (_resolve(typed, base, policy),)
    return (_resolve(typed, base, policy),)


GLOB_FOUND = 64  # files a glob word is resolved to (the first ones found), as before
GLOB_VISITS = 10_000  # directory entries one glob word may look at; past it the word is Unresolvable
GLOB_COMPONENT = 1024  # characters of one pattern component (a file name is at most 255 bytes)


def _glob(pattern: str) -> list[str]:
    """The files an absolute, normalized glob pattern matches now (``glob.glob``'s answer: hidden names
    only for a pattern starting with ``.``), walked level by level with a budget. ``glob.iglob`` recurses
    once per component (10,000 ``*/`` raise RecursionError), walks every branch of a symlink loop
    (``a -> .``, ``b -> .``: 2**n directories for n ``*/``) and translates each component in quadratic
    time (``[[[...``)."""
    comps = pattern.split("/")[1:]
    if any(len(c) > GLOB_COMPONENT for c in comps):
        raise Unresolvable("a glob component longer than any file name")
    level, budget = ["/"], GLOB_VISITS
    for i, comp in enumerate(comps):
        last = i == len(comps) - 1
        nxt: list[str] = []
        for d in level:
            if glob.has_magic(comp):
                try:
                    names = os.listdir(d)
                except OSError:
                    continue
                budget -= len(names) + 1
                names = [n for n in fnmatch.filter(names, comp) if comp.startswith(".") or not n.startswith(".")]
            else:
                budget -= 1
                names = [comp]
            for n in names:
                path = os.path.join(d, n)
                if os.path.lexists(path) if last else os.path.isdir(path):
                    nxt.append(path)
            if budget < 0:
                raise Unresolvable(f"a glob that walks more than {GLOB_VISITS} directory entries")
        level = nxt
        if not level:
            break
    return level[:GLOB_FOUND]


def _rejected(action_id: int, message: str, who: str) -> dict[str, Any]:
    obs = error_observation(action_id, ErrorId.REJECTED, message)
    obs["extras"]["decided_by"] = who
    return obs
