"""Proposal (review) mode, the pure part (docs/protocol.md §3.11).

With review on, an agent's ``write`` and ``edit`` actions (every ``edit`` command but ``view``) become
proposals: what the file would become is computed, shown to the user, and written only when the user
accepts. This module holds what both runtimes and the extension must agree on: which actions are
proposals, the texts the agent gets for each decision, and the ``review`` control requests of
``oh review``. No I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import kinds
from .errors import ErrorId, ProtocolError

MAX_REASON = 2000  # characters of the user's reason passed on to the agent
PROPOSAL_ID = re.compile(r"\Ap[0-9]{1,12}\Z")  # \Z: "p3\n" is no id ($ would take it)
# A command's change set (history on, §3.15.1): h12 = history entry 12; accept keeps it, reject reverts it.
CHANGESET_ID = re.compile(r"\Ah[0-9]{1,12}\Z")
REVIEW_OPS = ("list", "show", "accept", "reject")


def is_proposal(kind: str, args: dict[str, Any]) -> bool:
    """Whether an action of ``kind`` with ``args`` changes a file (and so is reviewed)."""
    return kinds.is_proposal(kind, args)


def decided_by(decision: str, where: str) -> str:
    """Who closed a proposal (issue 19: `proposal_closed` says who decided): the user's decisions come from
    ``where`` (``cli``: `oh review` with the decider credential; ``vscode``: the editor's diff); a timeout, a
    stop or an agent that left are the backend's own."""
    return {"timeout": "timeout", "interrupted": "stop", "cancelled": "agent left"}.get(decision, where)


def clean_reason(reason: Any) -> str:
    """The user's reason as the agent gets it: a string, trimmed, bounded."""
    if not isinstance(reason, str):
        return ""
    text = reason.strip()
    return text[:MAX_REASON] + (" [...]" if len(text) > MAX_REASON else "")


def accepted_note(path: str) -> str:
    """Appended to an accepted proposal's observation content."""
    return f"[Review mode: the user accepted this change to {path}.]"


def rejected_message(path: str, reason: str) -> str:
    """The REJECTED error's text: the user's reason comes last, verbatim, so the agent can adapt."""
    why = reason or "(no reason given)"
    return (
        f"The user rejected the proposed change to {path}; nothing was written. "
        f"Take the reason into account before proposing another change. Reason: {why}"
    )


def stale_message(path: str) -> str:
    """REJECTED when the file changed between the proposal and the user's accept."""
    return (
        f"The proposed change to {path} was not applied: the file changed after the proposal was made "
        "(edited by the user or another tool), so the reviewed diff no longer describes what would be written. "
        "Read the file again and propose the change anew. Reason: file changed since the proposal"
    )


def timeout_message(path: str, seconds: float) -> str:
    """TIMEOUT when nobody decided within ``review_timeout``."""
    return (
        f"Nobody reviewed the proposed change to {path} within {seconds:g} s (review mode); the proposal was "
        "withdrawn and nothing was written. Ask the user to review sooner (`oh review`, or the diff in VS Code), "
        "or propose it again."
    )


def gone_message(path: str) -> str:
    """INTERRUPTED when the backend stops with the proposal pending."""
    return f"The backend stopped while the change to {path} awaited review; nothing was written."


@dataclass(frozen=True, slots=True)
class ReviewRequest:
    """One ``{"type": "review", ...}`` control request (``oh review``)."""

    op: str
    proposal_id: str | None = None
    all: bool = False
    reason: str = ""
    hunks: tuple[int, ...] | None = None  # accept/reject only these hunks (issue 39); None: the whole change
    files: tuple[str, ...] | None = None  # ... and every hunk of these files

    @property
    def partial(self) -> bool:
        return self.hunks is not None or self.files is not None


MAX_SELECTED = 100_000  # hunk numbers or paths one decision may name


def _selection(obj: dict[str, Any], op: str) -> tuple[tuple[int, ...] | None, tuple[str, ...] | None]:
    """The optional ``hunks`` (numbers from 1) and ``files`` (paths as ``show`` names them) of a decision."""
    hunks, files = obj.get("hunks"), obj.get("files")
    if hunks is not None and (
        not isinstance(hunks, list)
        or len(hunks) > MAX_SELECTED
        or not all(type(n) is int and 1 <= n <= 1_000_000 for n in hunks)
    ):
        raise ProtocolError(ErrorId.BAD_REQUEST, f"review {op}: hunks must be a list of hunk numbers (1, 2, ...).")
    if files is not None and (
        not isinstance(files, list)
        or len(files) > MAX_SELECTED
        or not all(isinstance(f, str) and 0 < len(f) <= 4096 and "\0" not in f for f in files)
    ):
        raise ProtocolError(ErrorId.BAD_REQUEST, f"review {op}: files must be a list of paths.")
    if (hunks is not None or files is not None) and op not in ("accept", "reject"):
        raise ProtocolError(ErrorId.BAD_REQUEST, f"review {op} takes no hunks or files.")
    if hunks == [] and not files or files == [] and not hunks:
        raise ProtocolError(ErrorId.BAD_REQUEST, f"review {op}: name at least one hunk or file.")
    return (
        None if hunks is None else tuple(sorted(set(hunks))),
        None if files is None else tuple(dict.fromkeys(files)),
    )


def parse_review_request(obj: dict[str, Any]) -> ReviewRequest:
    """Validate a review control request. Raises ProtocolError(BAD_REQUEST) saying what to fix."""
    op = obj.get("op")
    if op not in REVIEW_OPS:
        raise ProtocolError(
            ErrorId.BAD_REQUEST, f"review.op must be one of {', '.join(REVIEW_OPS)} (got {str(op)[:40]!r})."
        )
    if op == "list":
        return ReviewRequest("list")
    pid = obj.get("id")
    every = obj.get("all") is True
    hunks, files = _selection(obj, op)
    if op == "accept" and every:
        if hunks is not None or files is not None:
            raise ProtocolError(ErrorId.BAD_REQUEST, "review accept all: true takes no hunks or files.")
        if pid is not None:
            raise ProtocolError(ErrorId.BAD_REQUEST, "review accept takes either an id or all: true, not both.")
        return ReviewRequest("accept", all=True)
    if not isinstance(pid, str) or not (PROPOSAL_ID.match(pid) or CHANGESET_ID.match(pid)):
        raise ProtocolError(
            ErrorId.BAD_REQUEST,
            f"review {op} needs an id like p3 (a proposal) or h12 (a command's change set); `oh review` lists them "
            f"(got {str(pid)[:40]!r}).",
        )
    reason = obj.get("reason", "")
    if op == "reject" and reason is not None and not isinstance(reason, str):
        raise ProtocolError(ErrorId.BAD_REQUEST, "review reject: reason must be a string.")
    return ReviewRequest(op, pid, reason=clean_reason(reason) if op == "reject" else "", hunks=hunks, files=files)
