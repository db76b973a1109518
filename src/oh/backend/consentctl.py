"""The backend's side of consent (issue 19): wiring the stack's ``ConsentGuard`` into a backend, and the
``approvals`` control requests (docs/protocol.md §3.13). Kept out of server.py on purpose.

Who may decide: a control connection authenticated with the **decider token** (``decider`` True).
The agent token still opens ``/v1/control`` for status, but every decision -- approvals and review
accepts/rejects -- answers ``FORBIDDEN`` to it, so an agent cannot allow its own actions with the
credential it was given.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Callable

from ..protocol import consent as rules
from ..protocol import frames
from ..runtimes.consent import ConsentGuard
from ..runtimes.editor_link import EditorLink
from .control import FORBIDDEN_TEXT
from .deadlines import Deadlines
from .trace import TraceWriter

log = logging.getLogger("oh.backend.consent")

FORBIDDEN = "FORBIDDEN"


# What an agent's shell does not inherit under a consent policy: where oh keeps its sessions (and so
# the decider credential) and any oh setting that would loosen a nested oh. Tokens are never inherited
# (runtimes/local/runtime.py). Defence in depth only: the agent's commands run as you, so a command
# that reads oh's files is what the policy asks about (docs/security.md).
_AGENT_ENV_DROP = (
    "OH_HOME",
    "OH_SESSION_DIR",
    "OH_CONSENT",
    "OH_CONSENT_ALLOW",
    "OH_CONSENT_ASK",
    "OH_CONSENT_DENY",
    "OH_APPROVAL_TIMEOUT",
    "OH_APPROVAL_NOTIFY",
    "OH_APPROVALS_ORIGIN",
    "OH_APPROVALS_PORT",
)


def agent_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _AGENT_ENV_DROP}


def recorder(
    trace: TraceWriter, emit: Callable[..., None], named: Callable[[dict[str, Any]], dict[str, Any]]
) -> Callable[[str, dict[str, Any]], None]:
    """Consent's events to the trace (``kind`` is the trace's ``action``; ``named`` adds the agent's name)
    and to monitors."""

    def record(name: str, fields: dict[str, Any]) -> None:
        kept = {("action" if k == "kind" else k): v for k, v in named(fields).items() if v is not None}
        trace.record(name, **kept)
        emit(name, **fields)

    return record


def attach(
    guard: ConsentGuard,
    record: Callable[[str, dict[str, Any]], None],
    deadlines: Deadlines,
    link: EditorLink,
    also: Callable[[str, dict[str, Any]], None] | None = None,
) -> None:
    """Wire the stack's consent gate into the backend: its events go to ``record`` (the trace and monitors)
    and to editors with the ``consent`` capability (through ``link``, the one owner of the editor
    connection); while an action waits, its deadline is paused in ``deadlines``."""
    suspended: dict[int, float] = {}

    def event(name: str, fields: dict[str, Any]) -> None:
        record(name, fields)
        _tell_editors(link, name, fields)
        if also is not None:  # the approvals page and its notifier (issue 40)
            also(name, fields)
        if name == "approval_decided":
            log.info(
                "consent: %s %s by %s",
                fields.get("decision"),
                fields.get("id") or f"action {fields.get('action_id')}",
                fields.get("by"),
            )

    def on_wait(leg_id: int, waiting: bool) -> None:
        task = asyncio.current_task()
        if task is None:
            return
        now = task.get_loop().time()
        if waiting:
            left = deadlines.suspend(leg_id, now)
            if left is not None:
                suspended[leg_id] = left
        else:
            left = suspended.pop(leg_id, None)
            if left is not None:
                deadlines.add(leg_id, now + left, task)

    guard.approvals.on_event = event
    guard.on_wait = on_wait


# Editors that listed "consent" in their capabilities (the VS Code extension) are asked too, on their own
# leg: the editor token is their decider credential (agents never get it), and their answers say "vscode".
EDITOR_CAPABILITY = "consent"


def _tell_editors(link: EditorLink, name: str, fields: dict[str, Any]) -> None:
    if name == "approval_requested":
        link.broadcast(EDITOR_CAPABILITY, frames.approval_request(fields))
    elif name == "approval_decided" and fields.get("id"):
        link.broadcast(
            EDITOR_CAPABILITY, frames.approval_closed(fields["id"], fields.get("decision"), fields.get("by"))
        )


def editor_answer(guard: ConsentGuard | None, obj: dict[str, Any]) -> dict[str, Any]:
    """An editor's ``{"type": "approval", "op": "allow" | "reject", "id", "always"?, "reason"?}``: decided as
    "vscode" (the editor leg is authenticated with the editor token, which agents do not get)."""
    answer = handle(guard, {**obj, "type": "approvals", "via": "vscode"}, decider=True)
    answer["type"] = "approval_result"
    return answer


WEB_OPS = ("web", "pair", "devices", "revoke")  # the approvals page (issue 40): its address, pairing, devices


def handle(guard: ConsentGuard | None, obj: dict[str, Any], decider: bool, web: Any = None) -> dict[str, Any]:
    """One ``approvals`` control request -> the answer frame (``guard`` None: this backend asks for nothing;
    ``web``: the approvals page's ``ApprovalWeb``, for its ops, which need the decider credential)."""
    if obj.get("op") == "policy":
        return _set_policy(guard, obj, decider)
    if obj.get("op") in WEB_OPS:
        if not decider:
            return frames.refusal(FORBIDDEN, FORBIDDEN_TEXT)
        if web is None:
            return frames.refusal(
                "CONSENT_OFF",
                "This backend asks for nothing, so it serves no approvals page: start it with `oh start --consent "
                "LEVEL`.",
            )
        return web.control(obj)
    try:
        req = rules.parse_approval_request(obj)
    except ValueError as exc:
        return frames.refusal("BAD_REQUEST", str(exc))
    if guard is None:
        if req.op == "list":
            return frames.approvals_answer("list", level="never", rules=[], pending=0, approvals=[])
        return frames.refusal(
            "CONSENT_OFF",
            "This backend asks for nothing (consent = never and no rules): start it with `oh start --consent LEVEL`.",
        )
    if req.op == "list":
        return frames.approvals_answer("list", **guard.consent_status(), approvals=guard.approvals.list())
    if not decider:
        return frames.refusal(FORBIDDEN, FORBIDDEN_TEXT)
    result = guard.approvals.decide(req.approval_id or "", req.op == "allow", req.via, req.reason, req.always)
    return frames.approvals_answer(req.op, results=[result])


RESTART = "RESTART_NEEDED"


def _set_policy(guard: ConsentGuard | None, obj: dict[str, Any], decider: bool) -> dict[str, Any]:
    """``{"op": "policy", "level", "rules": {allow, ask, deny}}``: the user's consent settings, changed while the
    backend runs (issue 41: tightening must never need a restart). Decider only. What cannot apply live says so
    (RESTART_NEEDED): a backend started with no gate at all, or a level that needs review mode it did not start."""
    if not decider:
        return frames.refusal(FORBIDDEN, FORBIDDEN_TEXT)
    if guard is None:
        return frames.refusal(RESTART, "this backend started with no consent gate: restart it to apply consent.")
    level, table = obj.get("level", guard.policy.level), obj.get("rules")
    if level not in rules.LEVELS or not isinstance(table, (dict, type(None))):
        return frames.refusal(
            "BAD_REQUEST", f"policy: level must be one of {', '.join(rules.LEVELS)}, rules an object."
        )
    parsed = guard.policy.rules
    if table is not None:  # only what the user changed: a level alone keeps the rules, rules alone the level
        try:
            parsed = rules.parse_rules(table.get("allow", ()), table.get("ask", ()), table.get("deny", ()))
        except (rules.RuleError, TypeError) as exc:
            return frames.refusal("BAD_REQUEST", f"policy: {exc}")
    if guard.review and level in ("never", "risky"):
        level = "changes"  # review mode is the changes level's alias (launcher/consent.py plan)
    if level in ("changes", "all") and not guard.review:
        return frames.refusal(RESTART, f"consent {level} needs review mode, which starts with the backend: restart it.")
    guard.set_policy(level, parsed)
    return frames.approvals_answer(
        "policy", level=level, rules=[{"verdict": r.verdict, "rule": r.text} for r in parsed]
    )
