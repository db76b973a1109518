"""Write coalescing: the frames one event-loop iteration writes to a connection go out in one
``write`` (one syscall, one loopback delivery, one wake-up of the reader) instead of one each.

Under load the backend writes many small frames per iteration (64 actions in flight: each read of
the agent's socket yields several actions, each becoming a frame to the editor, and the other way
round). The socket write was ~30 % of the backend's CPU (docs/benchmarks.md, issue 13).

How: through websockets' supported extension point, ``serve(create_connection=...)``: a
ServerConnection subclass hands the asyncio transport it is given to websockets wrapped in
``CoalescingTransport``, which implements the asyncio transport interface. Writes are queued and
flushed with ``loop.call_soon``: at most one loop iteration later, in order. Flow control is
unchanged: the queue counts in ``get_write_buffer_size``, a queue past the high-water mark is
flushed at once, and the real transport pauses the protocol (``pause_writing``) at the same write
as before, so a peer that stops reading still fills the buffer and is dropped by ``send_bounded``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from websockets.asyncio.server import ServerConnection


class CoalescingTransport(asyncio.Transport):
    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._t = transport
        self._loop = loop
        self._queue: list[bytes] = []
        self._queued = 0
        self._high = transport.get_write_buffer_limits()[1]

    # -- writing
    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if len(data) > self._high:
            # A big write (a binary read's content) goes straight through, after what is queued:
            # joining it with the queue would copy it (64 MiB: tens of ms), for one syscall saved.
            # The real transport then pauses the protocol at this write, as without coalescing.
            self._flush()
            if not self._t.is_closing():
                self._t.write(data)
            return
        if not self._queue:
            self._loop.call_soon(self._flush)
        self._queue.append(bytes(data) if not isinstance(data, bytes) else data)
        self._queued += len(data)
        if self._queued > self._high:
            # Big writes go through now, so the real transport pauses the protocol at the same
            # write as without coalescing: the sender's next drain then waits (and send_bounded's
            # deadline applies) instead of queueing everything here unpaused.
            self._flush()

    def writelines(self, list_of_data) -> None:
        for data in list_of_data:
            self.write(data)

    def _flush(self) -> None:
        if not self._queue:
            return
        data = self._queue[0] if len(self._queue) == 1 else b"".join(self._queue)
        self._queue.clear()
        self._queued = 0
        if not self._t.is_closing():
            self._t.write(data)

    def get_write_buffer_size(self) -> int:
        return self._queued + self._t.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._t.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._t.set_write_buffer_limits(high, low)
        self._high = self._t.get_write_buffer_limits()[1]

    def can_write_eof(self) -> bool:
        return self._t.can_write_eof()

    def write_eof(self) -> None:
        self._flush()
        self._t.write_eof()

    # -- closing: what was written before close() still goes out; abort() drops it
    def close(self) -> None:
        self._flush()
        self._t.close()

    def abort(self) -> None:
        self._queue.clear()
        self._queued = 0
        self._t.abort()

    def is_closing(self) -> bool:
        return self._t.is_closing()

    # -- the rest is the real transport's
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._t.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._t.pause_reading()

    def resume_reading(self) -> None:
        self._t.resume_reading()

    def is_reading(self) -> bool:
        return self._t.is_reading()

    def set_protocol(self, protocol) -> None:
        self._t.set_protocol(protocol)

    def get_protocol(self):
        return self._t.get_protocol()


def coalescing(base: type[ServerConnection]) -> type[ServerConnection]:
    """``base`` whose writes are coalesced per loop iteration."""

    class CoalescingConnection(base):  # type: ignore[valid-type, misc]
        def connection_made(self, transport) -> None:
            super().connection_made(CoalescingTransport(transport, asyncio.get_running_loop()))

    return CoalescingConnection
