"""Proposal (review) mode for the local runtime (docs/protocol.md §3.11).

A ``write`` or ``edit`` (not ``view``) is computed exactly as it would be executed (the same
``write_file`` / ``FileEditor`` code), but the file's new bytes go to a recording sink instead of the
disk. The action then waits, as a ``Proposal`` in the ``ProposalQueue``, for ``oh review accept`` /
``reject`` (the backend's control leg) or for ``review_timeout``.

Accepting re-reads the file: if its bytes are not the ones the proposal was computed on (the user or
another tool changed it meanwhile), nothing is written and the agent gets ``REJECTED`` saying the file
changed (decision: refuse rather than re-apply, because the user reviewed a diff against the old text
and a re-computed change could differ from it). Two proposals to one file: accepting the first makes
the second stale in the same way.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import hashlib
import itertools
import logging
import os
import stat
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ... import beneath
from ...protocol import hunks as H
from ...protocol import progress
from ...protocol import review as rules
from ...protocol.errors import ErrorId, ToolError
from ...protocol.events import Action, error_observation
from ...protocol.udiff import unified_diff
from ..base import report
from .editor import EditHistory, FileEditor
from .encoding import decode as decode_any
from .files import atomic_write, encode_text
from .paths import ResolvedPath, open_rp, require_regular, stat_or_none, stat_rp

log = logging.getLogger("oh.runtimes.local.review")

MAX_DIFF_CHARS = 2 * 1024 * 1024  # `oh review show` of a huge change is clipped with a note
MAX_REVIEW_BYTES = 64 * 1024 * 1024  # what a proposal may hold in memory until it is decided
# All pending proposals together (their before + after bytes; issue 18 item 2): a proposal that would
# go past it is refused with BUSY (nothing written) unless nothing else is pending.
MAX_PENDING_BYTES = 2 * MAX_REVIEW_BYTES


class PathLocks:
    """One asyncio lock per file path, dropped when nobody holds or waits for it: edits of one file
    run one at a time now that they run in worker threads."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str):
        lock, users = self._locks.get(key) or (asyncio.Lock(), 0)
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


def file_bytes(real: str, root: str = "") -> bytes | None:
    """The file's bytes now (the proposal's "before" and the accept-time check), or None when there is
    no regular file there: then the computation itself refuses (directory, FIFO) or creates the file.
    Unlike ``read_bytes`` it accepts a hard-linked file, which a whole-file ``write`` may replace.
    Opened beneath ``root`` (the allowed root holding ``real``; "" = its directory), never through a
    symlink swapped in that leads out of it (oh.beneath)."""
    rp = ResolvedPath(real, real, root)
    st = stat_rp(rp)
    if st is None or not stat.S_ISREG(st.st_mode):
        return None
    if st.st_size > MAX_REVIEW_BYTES:
        raise ToolError(
            f"The file {real} is too large to review as a proposal ({st.st_size:,} bytes; the limit is "
            f"{MAX_REVIEW_BYTES:,})."
        )
    fd = open_rp(rp, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO swapped in must not hang us
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", buffering=0, closefd=False) as f:
            return f.readall()
    finally:
        os.close(fd)


def text_of(data: bytes) -> str | None:
    """The text an edit observation shows for a file's bytes (None: not text)."""
    decoded = decode_any(data) if data else ("", "utf-8")
    return None if decoded is None else decoded[0]


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def check_writable(rp: ResolvedPath) -> None:
    """``atomic_write``'s own refusals, checked when the proposal is made: a proposal must be one that
    can be applied (not a directory or FIFO; no parent path that is a file)."""
    st = stat_or_none(rp.real)
    if st is not None:
        require_regular(rp.shown, st, "write")
    ancestor = os.path.dirname(rp.real)
    while ancestor and not os.path.lexists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if ancestor and not os.path.isdir(ancestor):
        raise ToolError(f"Cannot create {rp.shown}: a parent path exists and is not a directory.")


class Recorder:
    """A ``write_file`` sink: remembers the new bytes instead of writing them."""

    def __init__(self) -> None:
        self.data: bytes | None = None
        self.replace = True

    def __call__(self, rp: ResolvedPath, data: bytes, *, replace: bool = True) -> bool:
        st = stat_or_none(rp.real)
        if st is not None and not replace:
            return True  # mode create on an existing file: nothing to propose
        check_writable(rp)
        self.data, self.replace = data, replace
        return st is not None


class _PeekHistory(EditHistory):
    """The real history seen read-only: a proposal's ``undo_edit`` looks at the last entry without
    taking it (it is taken when the user accepts), and its edits record nothing yet."""

    def __init__(self, real: EditHistory) -> None:
        self._real = real

    def push(self, path: str, content: str) -> None:
        pass

    def pop(self, path: str) -> str | None:
        with self._real.lock:
            q = self._real._by_path.get(path)
            return q[-1] if q else None


class ProposingEditor(FileEditor):
    """The file editor with its writes recorded, not performed."""

    def __init__(self, history: EditHistory) -> None:
        super().__init__()
        self.history = _PeekHistory(history)
        self.recorded: bytes | None = None  # the file's new bytes, in its own encoding

    def _write(self, rp: ResolvedPath, text: str, encoding: str) -> None:
        check_writable(rp)
        self.recorded = encode_text(rp, text, encoding)


@dataclass(eq=False)
class Proposal:
    proposal_id: str
    action_id: int  # the backend's (leg) id, as monitors know the action
    agent_id: str
    agent_name: str
    kind: str  # "write" | "edit"
    command: str  # edit command, or write mode
    path: str  # as the agent named it (absolute)
    real: str
    before: bytes | None  # the file when the proposal was computed (None: absent)
    after: bytes
    replace: bool  # False: write mode create (only if the name is still free)
    observation: dict[str, Any]  # what the agent gets when accepted
    on_accept: Callable[[], None] | None = None  # e.g. record the edit in the undo history
    # The edit observation's old_content/new_content are decoded from before/after on accept rather
    # than held as text while the proposal waits (they were checked to decode to exactly those).
    texts_later: bool = False
    deciding: bool = False  # an accept is checking/writing the file in a thread
    created: float = field(default_factory=time.monotonic)
    created_at: float = field(default_factory=time.time)
    future: asyncio.Future | None = None
    root: str = ""  # the allowed root holding ``real``: the accept's check and write open beneath it

    def row(self) -> dict[str, Any]:
        return {
            "id": self.proposal_id,
            "action_id": self.action_id,
            "agent_id": self.agent_id,
            "agent": self.agent_name,
            "kind": self.kind,
            "command": self.command,
            "path": self.path,
            "age_s": round(time.monotonic() - self.created, 1),
            "created_at": self.created_at,
            "creates": self.before is None,
            "bytes": len(self.after),
        }

    @property
    def size(self) -> int:
        return len(self.before or b"") + len(self.after)

    def diff(self) -> tuple[str, bool]:
        """(unified diff, binary?) of current-at-proposal vs proposed; binary content is summarised."""
        old = ("", "utf-8") if self.before is None else decode_any(self.before)
        new = decode_any(self.after) if self.after else ("", "utf-8")
        if old is None or new is None:
            size = "absent" if self.before is None else f"{len(self.before)} bytes"
            return f"Binary content: {size} -> {len(self.after)} bytes (no text diff).\n", True
        text = unified_diff(self.path, old[0], new[0])
        if len(text) > MAX_DIFF_CHARS:
            text = text[:MAX_DIFF_CHARS] + f"\n[... diff clipped at {MAX_DIFF_CHARS} characters ...]\n"
        return text, False

    def hunks(self) -> list[H.Hunk]:
        """The proposal's numbered hunks (issue 39): a created file or binary content is one whole-file hunk."""
        new = decode_any(self.after) if self.after else ("", "utf-8")
        if self.before is None:
            lines = 0 if new is None else len(new[0].splitlines())
            return [H.whole(1, self.path, H.CREATE, f"new file {self.path} ({len(self.after):,} bytes)", added=lines)]
        old = decode_any(self.before)
        if old is None or new is None:
            summary = f"Binary content: {len(self.before):,} -> {len(self.after):,} bytes (no text diff)."
            return [H.whole(1, self.path, H.BINARY, summary)]
        return H.split(self.path, old[0], new[0])

    def part(self, chosen: set[int]) -> tuple[bytes, str] | None:
        """(the file's bytes with only ``chosen`` hunks applied, its text) — None when that is the whole
        proposal (every hunk, or a whole-file hunk chosen)."""
        hs = self.hunks()
        if len(hs) == 1 and hs[0].whole or {h.n for h in hs} <= chosen or self.before is None:
            return None
        old, new = decode_any(self.before), decode_any(self.after) if self.after else ("", "utf-8")
        assert old is not None and new is not None  # text hunks: both decoded
        text = H.partial(old[0], new[0], hs, chosen)
        try:
            data = text.encode(new[1])
        except UnicodeEncodeError:
            data = text.encode("utf-8")
        return data, text


def _partly(
    p: Proposal, obs: dict[str, Any], text: str, chosen: set[int], row: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """A partly accepted proposal: the observation's texts describe what was written; (note, result row)."""
    total = len(p.hunks())
    written = sorted(n for n in chosen if n <= total)
    extras = obs.get("extras")
    if isinstance(extras, dict) and extras.get("new_content") is not None:
        extras = obs["extras"] = dict(extras)
        extras["new_content"] = text
        old = extras.get("old_content")
        if "diff" in extras:
            extras["diff"] = unified_diff(p.path, old or "", text)
    note = H.partial_note(p.path, written, total)
    message = f"{p.path} written with hunks {H.ranges(written)} of {total}; the others rejected."
    return note, {**row, "hunks": written, "of": total, "message": message}


class ProposalQueue:
    """Pending proposals of one backend, in creation order."""

    def __init__(self, timeout: float, on_event: Callable[[str, dict[str, Any]], None] | None = None) -> None:
        self.timeout = float(timeout)
        self.pending: dict[str, Proposal] = {}
        self._ids = itertools.count(1)
        self.on_event = on_event  # ("proposal_opened" | "proposal_closed", fields): the backend's monitors
        self.max_bytes = MAX_PENDING_BYTES
        self.pending_bytes = 0
        self.locks = PathLocks()  # shared with the runtime's edits: an accept writes the file under it

    def _full(self, extra: int) -> str | None:
        if not self.pending or self.pending_bytes + extra <= self.max_bytes:
            return None
        mib = 1024 * 1024
        return (
            f"Too much awaits the user's review: {len(self.pending)} proposal(s) holding "
            f"{self.pending_bytes / mib:.1f} MiB (the limit is {self.max_bytes // mib} MiB for all pending proposals "
            "together). Nothing was written. Wait until the user decides some (`oh review`), then send this change "
            "again."
        )

    def check_room(self, size: int = 0) -> None:
        """Refuses (ToolError BUSY) when ``size`` more bytes would not fit beside what is pending."""
        msg = self._full(max(size, 1) if self.pending_bytes >= self.max_bytes else size)
        if msg is not None:
            raise ToolError(msg, ErrorId.BUSY)

    def new_id(self) -> str:
        return f"p{next(self._ids)}"

    def _emit(self, name: str, p: Proposal, **extra: Any) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(
                name,
                {
                    "proposal_id": p.proposal_id,
                    "action_id": p.action_id,
                    "agent_id": p.agent_id,
                    "kind": p.kind,
                    "path": p.path,
                    **extra,
                },
            )
        except Exception:  # noqa: BLE001 - a listener's bug must not lose the decision
            log.exception("proposal event listener failed")

    async def wait(self, p: Proposal, action: Action) -> dict[str, Any]:
        """Park ``p`` (``action``'s proposal) until a decision, the timeout, or cancellation; return the agent's
        observation."""
        self.check_room(p.size)  # again: others may have been parked while this one was computed
        p.future = asyncio.get_running_loop().create_future()
        self.pending[p.proposal_id] = p
        self.pending_bytes += p.size
        self._emit("proposal_opened", p)
        report(
            action, progress.WAITING, **progress.waiting_for_review(p.proposal_id, f"{p.kind} {p.path}", self.timeout)
        )
        decision = "timeout"
        try:
            obs = await asyncio.wait_for(asyncio.shield(p.future), self.timeout)
            decision = obs.pop("_decision", "decided")
            return obs
        except asyncio.TimeoutError:
            if p.deciding:  # an accept is writing the file right now (a thread): its outcome is the answer
                obs = await asyncio.shield(p.future)
                decision = obs.pop("_decision", "decided")
                return obs
            return error_observation(p.action_id, ErrorId.TIMEOUT, rules.timeout_message(p.path, self.timeout))
        except asyncio.CancelledError:
            decision = "cancelled"
            raise
        finally:
            if self.pending.pop(p.proposal_id, None) is not None:
                self.pending_bytes -= p.size
            self._emit("proposal_closed", p, decision=decision, by=rules.decided_by(decision, "cli"), at=time.time())

    def list(self) -> list[dict[str, Any]]:
        return [p.row() for p in self.pending.values()]

    def find(self, pid: str) -> Proposal | None:
        return self.pending.get(pid)

    async def accept(self, pid: str, chosen: set[int] | None = None) -> dict[str, Any]:
        """Apply one proposal (if its file is unchanged) and answer its agent. Returns the result row.
        ``chosen``: only those hunks are written, the rest rejected (one write; issue 39).
        The file's check and write run in a worker thread (up to 64 MiB each); the decision on the loop."""
        p = self.pending.get(pid)
        if p is None or p.future is None or p.future.done() or p.deciding:
            return {"id": pid, "outcome": "unknown", "message": f"No pending proposal {pid}."}
        p.deciding = True
        try:
            async with self.locks.hold(p.real):
                obs, decision, row = await asyncio.to_thread(self._apply, p, chosen)
        finally:
            p.deciding = False
        if decision == "accepted" and p.on_accept is not None:
            p.on_accept()
        self._resolve(p, obs, decision)
        return row

    @staticmethod
    def _apply(p: Proposal, chosen: set[int] | None = None) -> tuple[dict[str, Any], str, dict[str, Any]]:
        """(observation, decision, result row) of accepting ``p`` (only the ``chosen`` hunks, when given):
        checks the file and writes it."""
        pid = p.proposal_id
        part = p.part(chosen) if chosen is not None else None
        try:
            now = file_bytes(p.real, p.root)
            changed = (
                _digest(now) != _digest(p.before)
                # something (a directory, a FIFO) now stands where the proposal would create a file
                or (p.before is None and os.path.lexists(p.real))
                # the path now leads elsewhere (a parent swapped for a symlink): the file the user
                # reviewed is not the one that would be written, which may be outside the roots
                or os.path.realpath(p.path) != p.real
            )
        except ToolError:
            changed = True  # grew past what a proposal may hold: it cannot be the bytes the proposal saw
        except beneath.Escape:
            changed = True  # a parent swapped for a symlink out of the root: not the file the user reviewed
        except OSError as exc:  # unreadable now: nothing can be checked, so nothing is written
            msg = exc.strerror or str(exc)
            return (
                error_observation(
                    p.action_id,
                    ErrorId.TOOL_ERROR,
                    f"The user accepted the change to {p.path}, but reading the file to check it failed: {msg}",
                ),
                "failed",
                {"id": pid, "outcome": "failed", "path": p.path, "message": f"reading {p.path} failed: {msg}"},
            )
        if changed:
            return (
                error_observation(p.action_id, ErrorId.REJECTED, rules.stale_message(p.path)),
                "stale",
                {
                    "id": pid,
                    "outcome": "stale",
                    "path": p.path,
                    "message": (
                        f"{p.path} changed after the proposal was made: nothing was written; the agent was told "
                        "to read it again."
                    ),
                },
            )
        try:
            atomic_write(ResolvedPath(p.path, p.real, p.root), p.after if part is None else part[0], replace=p.replace)
        except Exception as exc:  # noqa: BLE001 - the tool refused (permissions, disk): the agent must hear it
            msg = getattr(exc, "message", None) or getattr(exc, "strerror", None) or str(exc)
            return (
                error_observation(
                    p.action_id,
                    ErrorId.TOOL_ERROR,
                    f"The user accepted the change to {p.path}, but writing it failed: {msg}",
                ),
                "failed",
                {"id": pid, "outcome": "failed", "path": p.path, "message": f"writing {p.path} failed: {msg}"},
            )
        obs = dict(p.observation)
        if p.texts_later:
            extras = obs["extras"] = dict(obs["extras"])
            extras["old_content"] = None if p.before is None else text_of(p.before)
            extras["new_content"] = text_of(p.after)
        note = rules.accepted_note(p.path)
        row = {"id": pid, "outcome": "accepted", "path": p.path, "message": f"{p.path} written."}
        if part is not None:
            note, row = _partly(p, obs, part[1], chosen or set(), row)
        obs["content"] = (obs.get("content") or "").rstrip("\n") + ("\n" if obs.get("content") else "") + note
        return obs, "accepted", row

    def reject(self, pid: str, reason: str) -> dict[str, Any]:
        p = self.pending.get(pid)
        if p is None or p.future is None or p.future.done() or p.deciding:
            return {"id": pid, "outcome": "unknown", "message": f"No pending proposal {pid}."}
        self._resolve(
            p, error_observation(p.action_id, ErrorId.REJECTED, rules.rejected_message(p.path, reason)), "rejected"
        )
        return {
            "id": pid,
            "outcome": "rejected",
            "path": p.path,
            "message": f"{p.path} left unchanged; the agent got the reason.",
        }

    async def accept_all(self) -> builtins.list[dict[str, Any]]:  # (`list` is a method here)
        """Every pending proposal in creation order; each is checked on its own (a later one to the same
        file is stale once an earlier one is written)."""
        return [await self.accept(pid) for pid in list(self.pending)]

    @staticmethod
    def _resolve(p: Proposal, obs: dict[str, Any], decision: str) -> None:
        if p.future is not None and not p.future.done():
            p.future.set_result({**obs, "_decision": decision})

    def close(self) -> None:
        """Backend stop: every pending proposal ends (INTERRUPTED); nothing is written."""
        for p in list(self.pending.values()):
            self._resolve(
                p, error_observation(p.action_id, ErrorId.INTERRUPTED, rules.gone_message(p.path)), "interrupted"
            )
