"""Sending to a WebSocket peer without waiting for ever, receiving fragments unjoined, and coalescing
writes: a neutral networking module below the backend, the runtimes and the client (all use it),
importing only websockets."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, TypeVar

from websockets.exceptions import ConnectionClosed, ConnectionClosedOK

log = logging.getLogger("oh.backend")  # its records belong in the backend's log, as before the move


async def messages(connection):
    """The connection's messages, as ``async for message in connection`` gives them, except that a
    binary message that arrived in several fragments comes as the list of its fragments, not joined:
    a 64 MiB binary read (protocol/binary.py ``parts``) then crosses without one more copy of its
    content. Ends when the connection closes normally; raises ConnectionClosedError otherwise."""
    while True:
        try:
            frags = [f async for f in connection.recv_streaming()]
        except ConnectionClosedOK:
            return
        if len(frags) == 1:
            yield frags[0]
        elif isinstance(frags[0], str):
            yield "".join(frags)
        else:
            yield frags


async def send_bounded(connection, data, timeout: float, text: bool = True) -> bool:
    """Send ``data``; if the peer has not read it within ``timeout`` s, drop the connection.

    A peer that stops reading (frozen, suspended with Ctrl-Z, a bug) fills the socket buffers, and
    then websockets' ``send`` waits for ever -- its keepalive cannot notice, because the ping waits
    behind the same full buffer -- while the backend keeps reading new actions and holding their
    observations in memory. Returns False when the connection is gone. ``data`` may be a list of
    fragments (one fragmented message, e.g. protocol/binary.py ``parts``).
    """
    size = sum(map(len, data)) if isinstance(data, list) else len(data)
    try:
        if _fits(connection, size):
            # Fast path, no timer: this write leaves the transport's buffer under its high-water
            # mark, so websockets' drain does not wait for the peer (at most its close_timeout on a
            # closing connection). The timeout scope was ~7 % of the backend's CPU under load.
            await connection.send(data, text=text)
            return True
        async with asyncio.timeout(timeout):
            await connection.send(data, text=text)  # text=False: a binary read (protocol/binary.py)
        return True
    except ConnectionClosed:
        return False
    except TimeoutError:
        log.warning("a peer did not read for %g s; dropping its connection", timeout)
        abort(connection)
        return False


FRAME_OVERHEAD = 14  # the largest WebSocket frame header (2 + 8 length bytes + 4 mask bytes)


def _fits(connection, size: int) -> bool:
    """True when sending ``size`` bytes cannot pause writing: asyncio pauses a protocol (and
    websockets' ``send`` then waits) only once the buffer is above its high-water mark."""
    try:
        transport = connection.transport
        high = transport.get_write_buffer_limits()[1]
        return transport.get_write_buffer_size() + size + FRAME_OVERHEAD < high
    except Exception:  # noqa: BLE001 - no transport (closed) or no limits: take the bounded path
        return False


def abort(connection) -> None:
    with contextlib.suppress(Exception):
        connection.transport.abort()


# ------------------------------------------------------------------ write coalescing
# The frames one event-loop iteration writes to a connection go out in one ``write`` (one syscall,
# one loopback delivery, one wake-up of the reader) instead of one each. Under load every process of
# the chain writes many small frames per iteration (64 actions in flight: the client sends many
# actions, the backend forwards them, the editor answers them); one socket write each was ~30 % of
# the backend's CPU (docs/benchmarks.md). The backend and the Python client coalesce.
#
# How: through websockets' supported extension point, ``serve(create_connection=...)`` /
# ``connect(create_connection=...)``: a Connection subclass hands websockets the asyncio transport
# it is given wrapped in ``CoalescingTransport``, which implements the asyncio transport interface.
# Writes are queued and flushed with ``loop.call_soon``: at most one loop iteration later, in order.
# Flow control is unchanged: the queue counts in ``get_write_buffer_size``, a queue past the
# high-water mark is flushed at once, and the real transport pauses the protocol
# (``pause_writing``) at the same write as before, so a peer that stops reading still fills the
# buffer and is dropped by ``send_bounded``.

C = TypeVar("C")


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


def coalescing(base: type[C]) -> type[C]:
    """``base`` (a websockets asyncio ServerConnection or ClientConnection class) whose writes are
    coalesced per loop iteration: ``serve(create_connection=...)`` / ``connect(create_connection=...)``."""

    class CoalescingConnection(base):  # type: ignore[valid-type, misc]
        def connection_made(self, transport) -> None:
            super().connection_made(CoalescingTransport(transport, asyncio.get_running_loop()))

    return CoalescingConnection


async def close_quietly(conn, code: int, reason: str) -> None:
    """Close ``conn`` with ``code``, at most 2 s: a peer that does not read never gets the close
    frame, so its connection is aborted instead."""
    try:
        await asyncio.wait_for(conn.close(code, reason), 2)
    except Exception:  # noqa: BLE001 - a peer that does not read never gets the close frame
        abort(conn)
