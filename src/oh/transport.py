"""Sending to a WebSocket peer without waiting for ever: a neutral networking module below the backend
and the runtimes (used by ``backend.server`` and the ``vscode`` runtime), importing only websockets."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from websockets.exceptions import ConnectionClosed

log = logging.getLogger("oh.backend")  # its records belong in the backend's log, as before the move


async def send_bounded(connection, data: bytes, timeout: float, text: bool = True) -> bool:
    """Send ``data``; if the peer has not read it within ``timeout`` s, drop the connection.

    A peer that stops reading (frozen, suspended with Ctrl-Z, a bug) fills the socket buffers, and
    then websockets' ``send`` waits for ever -- its keepalive cannot notice, because the ping waits
    behind the same full buffer -- while the backend keeps reading new actions and holding their
    observations in memory. Returns False when the connection is gone.
    """
    try:
        if _fits(connection, len(data)):
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
