"""Sending to a WebSocket peer without waiting for ever: a neutral networking module below the backend
and the runtimes (used by ``backend.server`` and the ``vscode`` runtime), importing only websockets."""

from __future__ import annotations

import asyncio
import contextlib
import logging

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
