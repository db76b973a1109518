"""The monitor role (``/v1/monitor``) and what the backend tells observers: every event goes to the
history (the snapshot of a monitor that subscribes later) and to each connected monitor's queue;
job and proposal events also go to the trace."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Callable

from websockets.asyncio.server import ServerConnection

from ..protocol import frames, joblist
from ..protocol.events import encode
from ..transport import close_quietly, send_bounded
from .history import MonitorHistory
from .trace import TraceWriter

MONITOR_QUEUE = 1000
AGENT_NAMES = 1000  # agents whose names the trace's job, proposal and consent records can give (newest kept)


class Monitors:
    def __init__(self, trace: TraceWriter, status: Callable[[], dict[str, Any]], send_timeout: float) -> None:
        self.trace = trace
        self._status = status  # the backend's status, the head of a monitor's snapshot
        self.send_timeout = send_timeout
        self.history = MonitorHistory()
        self.queues: dict[ServerConnection, asyncio.Queue] = {}
        self._names: "OrderedDict[Any, str]" = OrderedDict()  # agent id -> name, also once the agent has left

    def emit(self, event_name: str, /, **fields: Any) -> None:
        self.history.note(event_name, fields)  # for monitors that subscribe later (the snapshot)
        if event_name == "agent_connected" and fields.get("name"):
            self._names[fields.get("agent_id")] = str(fields["name"])
            while len(self._names) > AGENT_NAMES:
                self._names.popitem(last=False)
        if not self.queues:
            return
        frame = encode(frames.event(event_name, **fields))
        for conn, queue in list(self.queues.items()):
            try:
                queue.put_nowait(frame)
            except asyncio.QueueFull:
                # A monitor that cannot keep up is dropped rather than slowing everyone down.
                self.queues.pop(conn, None)
                asyncio.ensure_future(close_quietly(conn, 1013, "monitor too slow"))

    def named(self, fields: dict[str, Any]) -> dict[str, Any]:
        """A trace record's fields with its agent's name (``agent_name``, what `oh logs` shows, as the live
        view does) next to its ``agent_id``, as the request and result records have it."""
        name = self._names.get(fields.get("agent_id"))
        return {**fields, "agent_name": name} if name is not None and "agent_name" not in fields else fields

    def proposal_event(self, name: str, fields: dict[str, Any]) -> None:
        """A proposal opened or closed (local queue, or an editor's proposal_event frame; §3.11)."""
        # The trace's own `kind` is the record type: the action kind goes in as `action` there.
        self.trace.record(name, **{("action" if k == "kind" else k): v for k, v in self.named(fields).items()})
        self.emit(name, **fields)

    def arbiter_event(self, name: str, fields: dict[str, Any]) -> None:
        """Several agents (§3.18): a stale write/edit refused (``stale_refused``), a claim made or ended."""
        self.trace.record(name, **fields)
        self.emit(name, **fields)

    def shell_note(self, note: str) -> None:
        """An agent shell's note, said once (why the clean shell runs, or a fix made to the rc's settings)."""
        self.trace.record("shell_note", note=note)
        self.emit("shell_note", note=note)

    def job_event(self, name: str, job: dict[str, Any]) -> None:
        """A job started or finished (in the local runtime, or reported by an editor)."""
        fields = joblist.event_fields(name, job)
        self.trace.record(name, **self.named(fields))
        self.emit(name, **fields)

    async def serve(self, connection: ServerConnection) -> None:
        queue: asyncio.Queue = asyncio.Queue(MONITOR_QUEUE)
        history = self.history
        snapshot = {
            "type": "snapshot",
            **self._status(),
            "jobs": history.jobs(),
            "recent": history.recent(),
            "shell_notes": history.shell_notes(),  # said before this monitor came: a late view shows them too
        }
        # Subscribed in the same step the snapshot is taken: an event emitted while the snapshot is
        # being sent is queued behind it, not lost between the two.
        self.queues[connection] = queue
        try:
            await connection.send(encode(snapshot), text=True)
        except BaseException:
            self.queues.pop(connection, None)
            raise

        async def drain_incoming() -> None:
            async for _ in connection:  # monitors send nothing meaningful; keep reading for close
                pass

        reader = asyncio.create_task(drain_incoming())
        try:
            while not reader.done():
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, reader}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    if not await send_bounded(connection, getter.result(), self.send_timeout):
                        return
                else:
                    getter.cancel()
        finally:
            reader.cancel()
            self.queues.pop(connection, None)
