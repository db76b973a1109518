"""Progress frames on the agent leg (docs/protocol.md §3.16): what an action that asked for them (top-level
``"progress": true``) is told before its one observation. Pure: the backend builds and sends them
(backend/agents.py), runtimes report through ``runtimes.base.report``.

Opt-in per action, so a client that never asks never sees a frame it cannot read (every client before
this one takes any frame whose ``cause`` is its action's id for the observation).
"""

from __future__ import annotations

import re
from typing import Any

# The events, in the order an action can meet them.
WAITING = "waiting"  # the action waits for the user: consent (`approval`) or review (`proposal`)
STARTED = "started"  # a run's command started: its job id (a Ctrl-C or `--wait` names it)
OUTPUT = "output"  # a run's output as it comes (local runtime)
STEP = "step"  # a step of a longer action (ensure: which install runs)

# Unsent output held per action at most; past it the text is dropped and the next frame says how much.
MAX_UNSENT = 1 << 20

# What a terminal must not get from a command's output: escape sequences other than plain text moves
# (cursor movement, erase, window titles, clipboard, ...) and C0/C1 controls but \b \t \n \r. The output
# was already ``clean``ed (styling, OSC, private modes); this is the rest.
_UNSAFE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b[^\[]?|[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f]")


EVENTS = frozenset((WAITING, STARTED, OUTPUT, STEP))


def check(value: Any) -> str | None:
    """Why a top-level ``progress`` value is refused (BAD_REQUEST), or None: absent, a bool, or a list of
    event names (only those are sent)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, list) and len(value) <= len(EVENTS) and all(v in EVENTS for v in value):
        return None
    return f"'progress' must be true, false or a list of event names ({', '.join(sorted(EVENTS))})."


def wanted(raw: dict[str, Any]) -> frozenset[str] | None:
    """The events the action asked for (``true``: all of them), or None when it did not ask."""
    value = raw.get("progress")
    if value is True:
        return EVENTS
    if isinstance(value, list) and value:
        return frozenset(value)
    return None


def terminal_safe(text: str) -> str:
    """A command's output as it may be written to the user's terminal live: text, \\r and \\b kept (progress
    bars still redraw), every other control sequence removed."""
    return _UNSAFE.sub("", text)


def frame(cause: int, event: str, **fields: Any) -> dict[str, Any]:
    return {"type": "progress", "cause": cause, "event": event, **fields}


def waiting_for_consent(approval_id: str, what: str, reason: str, timeout: float) -> dict[str, Any]:
    """The fields of a ``waiting`` frame for an approval (runtimes/consent.py)."""
    return {
        "approval": approval_id,
        "what": what,
        "reason": reason,
        "timeout_s": timeout,
        "message": (
            f"Waiting for the user's consent ({approval_id}) for: {what} ({reason}); the user answers with "
            f"`oh approve {approval_id}` / `oh reject {approval_id}`, in VS Code or in oh start's live view "
            f"(at most {timeout:g} s)."
        ),
    }


def waiting_for_review(proposal_id: str | None, what: str, timeout: float) -> dict[str, Any]:
    """The fields of a ``waiting`` frame for a proposal in review mode (§3.11): ``proposal_id`` from the local
    runtime's queue (`oh review`), None for one VS Code shows."""
    how = (
        f"`oh review accept {proposal_id}` / `oh review reject {proposal_id}`"
        if proposal_id
        else "VS Code's diff editor"
    )
    return {
        "proposal": proposal_id,
        "what": what,
        "timeout_s": timeout,
        "message": (
            f"Waiting for the user to review the proposed {what}: the user answers with {how} (at most {timeout:g} s)."
        ),
    }
