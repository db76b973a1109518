"""Sending to a WebSocket peer without waiting for ever: a neutral networking module below the backend
and the runtimes (used by ``backend.server`` and the ``vscode`` runtime), importing only websockets."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from websockets.exceptions import ConnectionClosed

log = logging.getLogger("oh.backend")  # its records belong in the backend's log, as before the move


async def send_bounded(connection, data: bytes, timeout: float) -> bool:
    """Send ``data``; if the peer has not read it within ``timeout`` s, drop the connection.

    A peer that stops reading (frozen, suspended with Ctrl-Z, a bug) fills the socket buffers, and
    then websockets' ``send`` waits for ever -- its keepalive cannot notice, because the ping waits
    behind the same full buffer -- while the backend keeps reading new actions and holding their
    observations in memory. Returns False when the connection is gone.
    """
    try:
        async with asyncio.timeout(timeout):
            await connection.send(data, text=True)
        return True
    except ConnectionClosed:
        return False
    except TimeoutError:
        log.warning("a peer did not read for %g s; dropping its connection", timeout)
        abort(connection)
        return False


def abort(connection) -> None:
    with contextlib.suppress(Exception):
        connection.transport.abort()
