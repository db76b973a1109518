"""History's wiring in the backend (issue 29, docs/protocol.md §3.15): the recorder around the runtime
(``HistoryControl.wrap``, one hook the backend's composition calls) and the ``history`` control requests
(``HistoryControl.handle``): list, show (a diff), undo.

Who may undo: the decider credential (the user's `oh undo`) any entry; the agent token (MCP, SDK) only
the named agent's own entries, none with an ambiguous change, and no file anyone changed since (no merge:
an agent never undoes past the user's edits).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from ..protocol import frames
from ..protocol import history as H
from ..protocol.errors import ProtocolError
from ..runtimes.base import Runtime
from ..runtimes.history import HistoryRecorder

if TYPE_CHECKING:
    from .options import BackendConfig


class HistoryControl:
    """History's role in the backend: the recorder it puts around the runtime when history is on (``wrap``,
    called once by the stack's composition) and the ``history`` control requests (``handle``)."""

    def __init__(self, config: BackendConfig, workspace: str) -> None:
        self.config = config
        self.workspace = workspace
        self.recorder: HistoryRecorder | None = None  # set by ``wrap`` when history is on
        # Set by the backend: where a command's change set opening or closing is told (the monitors, §3.15.1).
        self.on_changeset: Callable[..., None] = lambda *a, **kw: None
        # Set by the backend: a note said once to the monitors (the live view), e.g. the inotify fallback (issue 39).
        self.on_note: Callable[[str], None] = lambda note: None
        self._editor_timers: set[asyncio.TimerHandle] = set()  # editor undos that never said `applied` (close)

    def wrap(self, runtime: Runtime) -> Runtime:
        """The recorder around ``runtime`` when history is on, else ``runtime`` itself."""
        cfg = self.config
        if cfg.history_dir is None:
            return runtime
        from ..history.activity import Activity
        from ..history.timeline import Timeline

        def make(activity: Activity | None) -> Timeline:
            return Timeline(
                self.workspace,
                str(cfg.history_dir),
                store_ignored=cfg.history_store_ignored,
                max_file=cfg.history_max_file,
                max_bytes=cfg.history_max_bytes,
                max_watches=_test_watch_limit(),
                review=cfg.review,
                activity=activity,
            )

        self.recorder = HistoryRecorder(runtime, make)
        self.recorder.on_changeset = lambda *a, **kw: self.on_changeset(*a, **kw)
        self.recorder.on_note = lambda note: self.on_note(note)
        return self.recorder

    def status(self) -> dict[str, Any]:
        """For `oh status` / `oh start -d`: whether changes are recorded (issue 41: protections you can see)."""
        rec = self.recorder
        if rec is None:
            return {"on": False}
        tl = rec.timeline
        out: dict[str, Any] = {"on": True}
        if tl is None:
            out["snapshot"] = "listing"
            return out
        out["snapshot"] = "settling" if tl.settling else "done"
        out["store_bytes"], out["max_bytes"] = tl.store.size, tl.max_bytes
        notes = [tl.watcher.degraded] if tl.watcher.degraded else []  # said with the fallback in use (issue 39)
        if tl.max_bytes and tl.store.size > tl.max_bytes:
            notes.append("the workspace's files alone take more than history_max_mb: only they are kept")
        if notes:
            out["note"] = "; ".join(notes)
        return out

    async def handle(self, obj: dict[str, Any], decider: bool) -> dict[str, Any]:
        """One ``history`` control request (list, show, undo); ``decider``: sent with the decider credential."""
        recorder = self.recorder
        if recorder is None or await recorder.ready() is None:
            return frames.refusal(
                "HISTORY_OFF",
                "History is off for this backend (started with --no-history or `history = false`): restart it with "
                "`oh start --history`, or `oh config set history true` for every start.",
            )
        try:
            req = H.parse_request(obj)
        except ProtocolError as exc:
            return frames.refusal(str(exc.error_id), exc.message)
        return await asyncio.to_thread(_answer, recorder.timeline, req, decider)

    async def handle_editor(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A ``history`` frame from an editor (§3.15.2): the editor credential is the user's, so it may list,
        show and undo any entry; an undo is answered with the edits for the editor to apply (its undo stack)."""
        recorder = self.recorder
        rid = obj.get("rid") if isinstance(obj.get("rid"), str) else ""
        tl = await recorder.ready() if recorder is not None else None
        if tl is None:
            return {
                **frames.refusal(
                    "HISTORY_OFF",
                    "History is off for this backend: restart it with `oh start --history` "
                    "(or `oh config set history true`).",
                ),
                "rid": rid,
            }
        try:
            req = H.parse_editor_request(obj)
        except ProtocolError as exc:
            return {**frames.refusal(str(exc.error_id), exc.message), "rid": rid}
        if req.op == "applied":
            from ..history import undo

            done = await asyncio.to_thread(undo.finish_editor, tl, req.entry or 0)
            return {"type": "history", "op": "applied", "rid": rid, "ok": done}
        if req.op != "undo":
            answer = await asyncio.to_thread(_answer, tl, H.HistoryRequest(req.op, req.entry), True)
            return {**answer, "rid": rid}
        return {**await _editor_undo(tl, req, self._editor_timers), "rid": rid}

    def close(self) -> None:
        """The backend stops: no editor undo's timeout fires after it (the timeline ends open entries itself)."""
        for timer in self._editor_timers:
            timer.cancel()
        self._editor_timers.clear()


def _test_watch_limit() -> int:
    """OH_TEST_HISTORY_MAX_WATCHES (tests only, tests/history/test_default.py): the watch limit to meet."""
    import os

    try:
        return max(0, int(os.environ.get("OH_TEST_HISTORY_MAX_WATCHES", "0")))
    except ValueError:
        return 0


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
        if req.include_ambiguous:
            return frames.refusal("FORBIDDEN", "Only the user includes changes another may have made (`oh undo`).")
        only = req.agent
    by = H.USER if decider else H.AGENT  # the credential that sent it, never the name it gives
    try:
        result = undo.undo(
            tl,
            req.entry or 0,
            to=req.to,
            who="user" if decider else req.agent or "agent",
            only_agent=only,
            merge=decider,
            by=by,
            include_ambiguous=req.include_ambiguous,
        )
    except ProtocolError as exc:
        return frames.refusal("FORBIDDEN", exc.message)
    return {"type": "history", "op": "undo", **result}


EDITOR_APPLY_TIMEOUT = 60.0  # an editor that never says `applied`: its undo's entry ends anyway


async def _editor_undo(tl, req: H.EditorHistoryRequest, timers: set[asyncio.TimerHandle]) -> dict[str, Any]:
    from ..history import undo

    if any(".." in p.split("/") for p in req.buffers):
        return frames.refusal("BAD_REQUEST", "history: a buffer's path leaves the workspace.")
    buffers = {p: text.encode("utf-8") for p, text in req.buffers.items()}
    result = await asyncio.to_thread(undo.plan_for_editor, tl, req.entry or 0, to=req.to, buffers=buffers)
    if result.get("ok") and result.get("entry"):
        entry = result["entry"]
        loop = asyncio.get_running_loop()

        def expire() -> None:
            timers.discard(timer)
            loop.run_in_executor(None, undo.finish_editor, tl, entry)

        timer = loop.call_later(EDITOR_APPLY_TIMEOUT, expire)
        timers.add(timer)
    return {"type": "history", "op": "undo", **result}


class ChangeSets:
    """Review after the fact (§3.15.1): the commands' change sets in `oh review` (ids ``h<entry>``).
    Active when review mode and history are both on. Accept keeps a change set, reject reverts it with
    the history's own undo (``history.undo.decide``): one undo logic, three-way, all files or none."""

    def __init__(self, history: HistoryControl, review: bool) -> None:
        self.history = history
        self.review = review

    def _timeline(self):
        recorder = self.history.recorder
        return recorder.timeline if recorder is not None and self.review else None

    async def _settled(self) -> None:
        """The first snapshot's phase 1 done (bounded): a change set journaled by an earlier run is listed then."""
        if self.history.recorder is not None and self.review:
            await self.history.recorder.ready()

    def active(self) -> bool:
        return self._timeline() is not None

    async def rows(self) -> list[dict[str, Any]]:
        await self._settled()
        tl = self._timeline()
        if tl is None:
            return []
        await asyncio.to_thread(tl.refresh)
        return [_row(e) for e in tl.pending()]

    async def show(self, cid: str) -> dict[str, Any] | None:
        from ..history import undo

        await self._settled()
        tl, eid = self._timeline(), H.changeset_entry(cid)
        if tl is None or eid is None or (e := tl.entries.get(eid)) is None or e.review != H.PENDING:
            return None
        from ..history import hunkreview

        shown = await asyncio.to_thread(undo.diff, tl, eid)
        hunks = await asyncio.to_thread(hunkreview.rows, tl, e)
        return {**_row(e), "diff": shown.get("diff", ""), "changes": shown.get("changes", []), "hunks": hunks}

    def _select(self, tl: Any, eid: int, hunks: Any, files: Any) -> tuple[list[int] | None, str | None]:
        """(the undecided hunk numbers a decision names — every undecided one when it names none —, or the
        message of a selection that names a hunk or file the change set does not have or already decided)."""
        from ..history import hunkreview
        from ..protocol import hunks as K

        with tl.lock:
            e = tl.entries.get(eid)
            if e is None or e.review != H.PENDING:
                return None, None
            gs = hunkreview.groups(tl, e)
            all_hunks = [h for h, _ in gs]
            if hunks is None and files is None:
                return (hunkreview.undecided(e, gs) if e.hunks else None), None
            bad = K.check_selection(all_hunks, hunks or (), files or ())
            if bad is not None:
                return None, bad
            named = K.named(all_hunks, hunks or (), files or ())
            done = sorted(n for n in named if n in e.hunks)
            if done and hunks:
                left = K.ranges(hunkreview.undecided(e, gs)) or "none"
                return None, f"Hunk {K.ranges(done)} was decided already: the undecided ones are {left}."
            return sorted(named - set(e.hunks)), None

    async def decide(self, cid: str, keep: bool, hunks: Any = None, files: Any = None) -> dict[str, Any]:
        """Keep or revert a change set, or some of its hunks / files (issue 39)."""
        from ..history import hunkreview, undo

        await self._settled()
        tl, eid = self._timeline(), H.changeset_entry(cid)
        if tl is None or eid is None:
            return {"id": cid, "outcome": "unknown", "message": f"No pending change set {cid}: `oh review` lists them."}
        chosen, bad = await asyncio.to_thread(self._select, tl, eid, hunks, files)
        if bad is not None:
            return {"id": cid, "outcome": "bad_selection", "message": bad}
        if chosen is not None:
            result = await asyncio.to_thread(hunkreview.decide, tl, eid, chosen, keep)
        else:
            result = await asyncio.to_thread(undo.decide, tl, eid, keep)
        if result is None:
            return {"id": cid, "outcome": "unknown", "message": f"No pending change set {cid}: `oh review` lists them."}
        e = tl.entries[eid]
        if result["outcome"] != "conflict" and e.review != H.PENDING:
            decision = H.KEPT if keep else H.REVERTED
            assert self.history.recorder is not None  # a timeline above means a recorder
            self.history.recorder.changeset_event("changeset_closed", e, decision=e.review or decision, by="cli")
        return result

    async def keep_all(self) -> list[dict[str, Any]]:
        await self._settled()
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
