"""History's wiring in the backend (issue 29, docs/protocol.md §3.15): the recorder around the runtime
(``wrap``, one hook the backend's composition calls) and the ``history`` control requests (``handle``):
list, show (a diff), undo.

Who may undo: the decider credential (the user's `oh undo`) any entry; the agent token (MCP, SDK) only
the named agent's own entries, none with an ambiguous change, and no file anyone changed since (no merge:
an agent never undoes past the user's edits).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..protocol import frames
from ..protocol import history as H
from ..protocol.errors import ProtocolError
from ..runtimes.base import Runtime
from ..runtimes.history import HistoryRecorder

if TYPE_CHECKING:
    from .server import Backend


def wrap(backend: Backend, runtime: Runtime) -> Runtime:
    """The recorder around ``runtime`` when history is on (``backend.recorder`` keeps it for control)."""
    cfg = backend.config
    backend.recorder = None
    if cfg.history_dir is None:
        return runtime
    from ..history.timeline import Timeline

    def make() -> Timeline:
        return Timeline(
            backend.workspace,
            str(cfg.history_dir),
            store_ignored=cfg.history_store_ignored,
            max_file=cfg.history_max_file,
            review=cfg.review,
        )

    backend.recorder = HistoryRecorder(runtime, make)
    backend.recorder.on_changeset = backend.monitors.proposal_event
    return backend.recorder


async def handle(backend: Backend, obj: dict[str, Any], decider: bool) -> dict[str, Any]:
    recorder = getattr(backend, "recorder", None)
    if recorder is None or recorder.timeline is None:
        return frames.refusal(
            "HISTORY_OFF",
            "History is off for this backend: start it with `oh start --history` (or set `history = true`).",
        )
    try:
        req = H.parse_request(obj)
    except ProtocolError as exc:
        return frames.refusal(str(exc.error_id), exc.message)
    return await asyncio.to_thread(_answer, recorder.timeline, req, decider)


def _answer(tl, req: H.HistoryRequest, decider: bool) -> dict[str, Any]:
    from ..history import undo

    if req.op == "list":
        tl.refresh()
        rows = [e.row(with_changes=False) for e in tl.entries.values() if req.agent in (None, e.agent)]
        return {"type": "history", "op": "list", "entries": rows[-req.limit :], "workspace": tl.root}
    if req.op == "show":
        shown = undo.diff(tl, req.entry or 0)
        if not shown:
            return frames.refusal("NO_ENTRY", f"No entry {req.entry}: `oh history` lists them.")
        return {"type": "history", "op": "show", "entry": shown}
    only = None
    if not decider:
        if req.agent is None:
            return frames.refusal(
                "FORBIDDEN",
                "An agent undoes only its own entries: name yourself with 'agent' (or ask the user: `oh undo`).",
            )
        only = req.agent
    try:
        result = undo.undo(tl, req.entry or 0, to=req.to, who=req.agent or "user", only_agent=only, merge=decider)
    except ProtocolError as exc:
        return frames.refusal("FORBIDDEN", exc.message)
    return {"type": "history", "op": "undo", **result}


class ChangeSets:
    """Review after the fact (§3.15.1): the commands' change sets in `oh review` (ids ``h<entry>``).
    Active when review mode and history are both on. Accept keeps a change set, reject reverts it with
    the history's own undo (``history.undo.decide``): one undo logic, three-way, all files or none."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def _timeline(self):
        recorder = getattr(self.backend, "recorder", None)
        return recorder.timeline if recorder is not None and self.backend.config.review else None

    def active(self) -> bool:
        return self._timeline() is not None

    async def rows(self) -> list[dict[str, Any]]:
        tl = self._timeline()
        if tl is None:
            return []
        await asyncio.to_thread(tl.refresh)
        return [_row(e) for e in tl.pending()]

    async def show(self, cid: str) -> dict[str, Any] | None:
        from ..history import undo

        tl, eid = self._timeline(), H.changeset_entry(cid)
        if tl is None or eid is None or (e := tl.entries.get(eid)) is None or e.review != H.PENDING:
            return None
        shown = await asyncio.to_thread(undo.diff, tl, eid)
        return {**_row(e), "diff": shown.get("diff", ""), "changes": shown.get("changes", [])}

    async def decide(self, cid: str, keep: bool) -> dict[str, Any]:
        from ..history import undo

        tl, eid = self._timeline(), H.changeset_entry(cid)
        result = await asyncio.to_thread(undo.decide, tl, eid, keep) if tl is not None and eid is not None else None
        if result is None:
            return {"id": cid, "outcome": "unknown", "message": f"No pending change set {cid}: `oh review` lists them."}
        if result["outcome"] != "conflict":
            decision = H.KEPT if keep else H.REVERTED
            self.backend.recorder.changeset_event("changeset_closed", tl.entries[eid], decision=decision, by="cli")
        return result

    async def keep_all(self) -> list[dict[str, Any]]:
        tl = self._timeline()
        return [await self.decide(H.changeset_id(e.id), True) for e in (tl.pending() if tl is not None else [])]


def _row(e: H.Entry) -> dict[str, Any]:
    """A change set as `oh review` lists it: the command, who ran it, how many files, how long ago."""
    try:
        age = (datetime.now(timezone.utc) - datetime.fromisoformat(e.ended or e.started)).total_seconds()
    except ValueError:
        age = None
    return {
        "id": H.changeset_id(e.id),
        "entry": e.id,
        "agent": e.agent,
        "kind": "changeset",
        "command": e.what,
        "files": len(e.changes),
        "created": sum(c.kind == "created" for c in e.changes),
        "deleted": sum(c.kind == "deleted" for c in e.changes),
        "ambiguous": sum(bool(c.ambiguous) for c in e.changes),
        "age_s": age,
    }
