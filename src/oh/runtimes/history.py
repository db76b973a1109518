"""History around a runtime (issue 29, docs/protocol.md §3.15): every action that can change files (a
command, foreground or background, a write, an edit, the workspace bootstrap) is an entry of the
workspace's timeline, with the files it changed. Like ``ConsentGuard`` it wraps the runtime, so every
route an action takes passes it; it sits innermost, so it records what actually ran.

A background job's entry stays open until the job ends (its changes are its action's). The drains run in
a worker thread: hashing what a command wrote must not stall the other agents' traffic.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import select
import time
from typing import Any, Callable, Hashable

from ..history.activity import Activity
from ..history.timeline import Timeline
from ..protocol import history as H
from ..protocol.events import Action
from .base import Runtime, Wrapper, as_context

log = logging.getLogger("oh.runtimes.history")

# The actions that can change files. Reads, job polls and the rest change nothing by themselves (a job's
# input goes to a job whose entry is open already).
CHANGES = frozenset({"run", "write", "edit", "ensure"})
JOB_ENDS_KEPT = 256
JOB_END_WAIT = 10.0  # s: a job's entry ends in a worker thread (hashing what it wrote); never wait longer
READY_WAIT = 120.0  # s: the longest an action waits for the first snapshot's phase 1 (git's listing)
SNAPSHOT_STOP_WAIT = 10.0  # s: at close, phase 2 stops at its next directory; never wait longer


def _cpu() -> dict[str, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"cpu_s": me.ru_utime + me.ru_stime, "git_cpu_s": kids.ru_utime + kids.ru_stime}


def _summary(action: Action) -> str:
    if action.kind == "run":
        return action.command
    if action.kind in ("write", "edit"):
        return f"{action.kind} {action.path}"
    return action.kind


class HistoryRecorder(Wrapper):
    def __init__(self, inner: Runtime, make_timeline: Callable[[Activity | None], Timeline]) -> None:
        super().__init__(inner)
        self._make = make_timeline
        self.timeline: Timeline | None = None
        self.first_snapshot: dict[str, Any] = {}  # once its phase 2 is done
        self.listed_s = 0.0  # phase 1's wall time
        self._ready: asyncio.Event | None = None  # set once phase 1 is done (or failed)
        self._snapshotting: asyncio.Future | None = None
        self._outer_job_event: Callable[[str, dict[str, Any]], None] | None = None
        self._running_jobs: set[str] = set()
        self._job_entries: dict[str, int] = {}
        self._ending: set[asyncio.Task] = set()  # held: the loop keeps only weak references to tasks
        # A job's entry, once the job ended: the change set it opened (or None). The job's end answer (`job`
        # wait/poll/output) names it; `job.done` is set before the job's end event, so the answer may have to wait
        # for it (bounded). The last JOB_ENDS_KEPT jobs only: older ones are out of job_retention anyway.
        self._job_ends: dict[str, asyncio.Future[H.Entry | None]] = {}
        # Review after the fact (§3.15.1): ("changeset_opened" | "changeset_closed", fields) to the monitors.
        self.on_changeset: Callable[[str, dict[str, Any]], None] | None = None
        self.on_note: Callable[[str], None] = lambda note: None  # said once to the monitors (the live view)
        inner.on_job_event = self._job_event

    @property
    def on_job_event(self):
        return self._outer_job_event

    @on_job_event.setter
    def on_job_event(self, callback) -> None:
        self._outer_job_event = callback

    async def start(self) -> None:
        """The first snapshot starts and the backend goes on starting: only its phase 1 (git's listing, a
        fraction of the whole) is awaited, by the first action that can change files (``_ready``); phase 2
        runs in this thread while actions run (issue 39, docs/protocol.md §3.15)."""
        loop = asyncio.get_running_loop()
        ready = self._ready = asyncio.Event()

        def build() -> None:
            t0, c0 = time.perf_counter(), _cpu()
            try:
                tl = self._make(Activity(self.inner.sandbox_roots))
                tl.watcher.on_degraded = lambda why: _tell(loop, self.on_note, "history: " + why)
                tl.snapshot_listed()
                tl.watch_in_background()  # who made a change is looked at over short stretches from now on
                self.timeline = tl
                self.listed_s = round(time.perf_counter() - t0, 3)
            finally:
                loop.call_soon_threadsafe(ready.set)
            _test_gate()
            snap = tl.snapshot_settle()
            # Its own clock (docs/benchmarks.md): wall, and CPU seconds of oh and of the git it ran.
            took = {"took_s": round(time.perf_counter() - t0, 3), "listed_s": self.listed_s}
            self.first_snapshot = {**snap, **took, **{k: round(v - c0[k], 3) for k, v in _cpu().items()}}
            log.info("history: first snapshot %s", self.first_snapshot)

        self._snapshotting = asyncio.ensure_future(asyncio.to_thread(build))
        self._snapshotting.add_done_callback(_said_if_failed)
        await self.inner.start()

    async def settled(self, timeout: float) -> dict[str, Any]:
        """The first snapshot's figures once both phases are done (benchmarks; bounded by ``timeout``)."""
        if self._snapshotting is not None:
            await asyncio.wait([self._snapshotting], timeout=timeout)
        return self.first_snapshot

    async def ready(self) -> Timeline | None:
        """The timeline once the first snapshot's phase 1 is done (bounded: an action waits at most
        ``READY_WAIT``, then runs unrecorded; the log says why)."""
        if self._ready is not None and not self._ready.is_set():
            try:
                await asyncio.wait_for(self._ready.wait(), READY_WAIT)
            except asyncio.TimeoutError:
                log.warning(
                    "history: the first snapshot's listing took over %g s: this action is not recorded", READY_WAIT
                )
        return self.timeline

    def _job_event(self, name: str, record: dict[str, Any]) -> None:
        jid = str(record.get("job_id"))
        if name == "job_started":
            self._running_jobs.add(jid)
        elif name == "job_finished":
            self._running_jobs.discard(jid)
            entry = self._job_entries.pop(jid, None)
            if entry is not None and self.timeline is not None:
                task = asyncio.get_running_loop().create_task(self._end_job_entry(self.timeline, entry, jid))
                self._ending.add(task)
                task.add_done_callback(self._ending.discard)
        if self._outer_job_event is not None:
            self._outer_job_event(name, record)

    async def _end_job_entry(self, tl: Timeline, entry: int, jid: str) -> None:
        """A background job ended: so does its entry (and a change set opens when review is on)."""
        opened: H.Entry | None = None
        try:
            opened = await asyncio.to_thread(tl.end, entry)
            self.changeset_event("changeset_opened", opened)
        finally:
            fut = self._job_ends.get(jid)
            if fut is not None and not fut.done():
                fut.set_result(opened)

    def _remember_job_end(self, jid: str) -> None:
        self._job_ends[jid] = asyncio.get_running_loop().create_future()
        while len(self._job_ends) > JOB_ENDS_KEPT:
            oldest = next(iter(self._job_ends))
            self._job_ends.pop(oldest).cancel()

    async def _job_answer(self, obs: dict[str, Any]) -> None:
        """A job's answer once the job ended names the change set its changes opened, while it is pending
        (docs/protocol.md §3.15.1): the agent that waited for the job reads it where it reads the job's end."""
        extras = obs.get("extras")
        job = extras.get("job") if isinstance(extras, dict) else None
        if (
            not isinstance(extras, dict) or not isinstance(job, dict) or job.get("state") == "RUNNING"
        ):  # jobs.RUNNING: a record says it as is
            return
        fut = self._job_ends.get(str(job.get("job_id")))
        if fut is None:
            return
        try:
            opened = await asyncio.wait_for(asyncio.shield(fut), JOB_END_WAIT)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            return
        if opened is not None and opened.review == H.PENDING:
            content = str(obs.get("content") or "")
            obs["content"] = content + ("\n" if content and not content.endswith("\n") else "") + H.held_note(opened)
            extras["changeset"] = H.changeset_id(opened.id)

    def changeset_event(self, name: str, e: H.Entry | None, **more: Any) -> None:
        """Tell the monitors (live view, trace) a change set opened or was decided."""
        if e is None or self.on_changeset is None:
            return
        fields = {"changeset": H.changeset_id(e.id), "entry": e.id, "agent": e.agent, "what": e.what[:200]}
        self.on_changeset(name, {**fields, "files": len(e.changes), **more})

    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        tl = await self.ready() if action.kind in CHANGES else self.timeline
        if tl is not None and action.kind == "job" and self._job_ends:
            answer = await self.inner.execute(action, agent)
            await self._job_answer(answer)
            return answer
        if tl is None or action.kind not in CHANGES:
            return await self.inner.execute(action, agent)
        ctx = as_context(agent)

        def begin() -> int:  # the sandbox check may probe bubblewrap once: in the thread, as the drain
            return tl.begin(ctx.name, action.kind, _summary(action), self.inner.watched_shell(action, agent))

        entry = await asyncio.to_thread(begin)
        status = "interrupted"
        obs: dict[str, Any] = {}
        try:
            obs = await self.inner.execute(action, agent)
            status = "done"
            md = (obs.get("extras") or {}).get("metadata") or {}
            jid = md.get("job_id") if isinstance(md, dict) else None
            if isinstance(jid, str) and jid in self._running_jobs:  # still running: ends with its job
                self._job_entries[jid] = entry
                if tl.review and action.kind in H.REVIEWED_KINDS:
                    self._remember_job_end(jid)
                    _held(obs, H.held_later_note(entry), H.changeset_id(entry))
                entry = 0
        finally:
            if entry:
                opened = await asyncio.shield(asyncio.to_thread(tl.end, entry, status))
                self.changeset_event("changeset_opened", opened)
                if obs and action.kind == "run":
                    await _changed(tl, entry, obs, opened)
                if opened is not None and obs:
                    _held(obs, H.held_note(opened), H.changeset_id(opened.id))
        return obs

    async def close(self) -> None:
        await self.inner.close()
        if self._ending:
            await asyncio.wait(self._ending, timeout=5)
        if self.timeline is not None:
            await asyncio.to_thread(self.timeline.close)  # phase 2 of the first snapshot stops at its next directory
        if self._snapshotting is not None:
            await asyncio.wait([self._snapshotting], timeout=SNAPSHOT_STOP_WAIT)
        if self.timeline is not None and not self.timeline.closed:  # phase 1 ended while this stopped
            await asyncio.to_thread(self.timeline.close)


SETTLE_GATE_ENV = "OH_TEST_HISTORY_SETTLE_GATE"
SETTLE_GATE_WAIT = 60.0  # s


def _test_gate() -> None:
    """For tests only (tests/history/test_default.py): hold phase 2 of the first snapshot until a byte comes down
    the FIFO this names, so that an action provably meets a snapshot still settling (bounded; unset: nothing)."""
    gate = os.environ.get(SETTLE_GATE_ENV)
    if not gate:
        return
    try:
        fd = os.open(gate, os.O_RDWR)  # on Linux a FIFO opened read-write never blocks: it is its own writer
    except OSError:
        return
    try:
        ready, _w, _x = select.select([fd], [], [], SETTLE_GATE_WAIT)
        if ready:
            os.read(fd, 1)
    finally:
        os.close(fd)


def _tell(loop: asyncio.AbstractEventLoop, say: Callable[[str], None], note: str) -> None:
    """A note from a worker thread to the monitors, on the loop (gone at the backend's stop: then unsaid)."""
    try:
        loop.call_soon_threadsafe(say, note)
    except RuntimeError:
        pass


def _said_if_failed(fut: asyncio.Future) -> None:
    """The first snapshot failed (the state dir unwritable, a full disk): the backend serves on, unrecorded."""
    if not fut.cancelled() and fut.exception() is not None:
        log.error("history: the first snapshot failed, nothing is recorded: %s", fut.exception())


async def _changed(tl: Timeline, entry: int, obs: dict[str, Any], opened: H.Entry | None) -> None:
    """A run that changed files says how much, at a glance (issue 39 item 3, §3.15): ``+N −M in K files`` as a
    note of the run's suffix (the agent reads it; `oh run` prints it) and ``extras.changed`` (the live view's
    line, through ``action_finished``); in review mode with the change set's id."""
    e = tl.entries.get(entry)
    extras = obs.get("extras")
    md = extras.get("metadata") if isinstance(extras, dict) else None
    if e is None or not e.changes or not isinstance(extras, dict) or not isinstance(md, dict):
        return
    if obs.get("observation") != "run":
        return
    from ..history import summary

    n = await asyncio.to_thread(summary.counts, tl.store, list(e.changes))
    held = f" (change set {H.changeset_id(opened.id)})" if opened is not None else ""
    extras["changed"] = {**n, "entry": entry}
    md["suffix"] = (md.get("suffix") or "") + f"\n[oh: changed {summary.text(n)}{held}; `oh undo {entry}` reverts]"


def _held(obs: dict[str, Any], note: str, changeset: str) -> None:
    """Tell the agent its command's changes are a change set, not final (§3.15.1): a run's suffix (where
    the agent reads the end of its output) and ``metadata.changeset``; else the content."""
    extras = obs.get("extras")
    md = extras.get("metadata") if isinstance(extras, dict) else None
    if obs.get("observation") == "run" and isinstance(md, dict):
        md["suffix"] = (md.get("suffix") or "") + "\n" + note
        md["changeset"] = changeset
        return
    obs["content"] = str(obs.get("content") or "") + "\n" + note
