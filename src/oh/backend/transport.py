"""Sending to a peer without waiting for ever (shared by the backend and the vscode runtime)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from websockets.exceptions import ConnectionClosed

log = logging.getLogger("oh.backend")


async def send_bounded(connection, data: bytes, timeout: float, text: bool = True) -> bool:
    """Send ``data``; if the peer has not read it within ``timeout`` s, drop the connection.

    A peer that stops reading (frozen, suspended with Ctrl-Z, a bug) fills the socket buffers, and
    then websockets' ``send`` waits for ever -- its keepalive cannot notice, because the ping waits
    behind the same full buffer -- while the backend keeps reading new actions and holding their
    observations in memory. Returns False when the connection is gone.
    """
    try:
        async with asyncio.timeout(timeout):
            await connection.send(data, text=text)  # text=False: a binary read (protocol/binary.py)
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
