"""A ``/v1/monitor`` client: follows the backend's event stream for the live view of ``oh start``.

It only moves frames (JSON objects) to a callback; rendering is ``oh.ui.live``'s job.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable

from ..protocol.codes import Close


async def monitor(
    session_loader: Callable[[], Any], on_frame: Callable[[dict[str, Any]], None], stop: asyncio.Event
) -> str:
    """Follow ``/v1/monitor`` until ``stop`` is set or the backend goes away. Reconnects after a
    token rotation (close 4001) by re-reading the session file. Returns why it ended."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake

    retries = 0
    while not stop.is_set():
        session = session_loader()
        if session is None:
            return "session ended"
        try:
            conn = await connect(
                session.url + "/v1/monitor",
                additional_headers={"Authorization": f"Bearer {session.token}"},
                max_size=None,
                compression=None,
                open_timeout=5,
            )
        except (InvalidHandshake, OSError, asyncio.TimeoutError) as exc:
            retries += 1
            if retries > 20:
                return f"cannot connect to the monitor: {exc}"
            await asyncio.sleep(0.25)
            continue
        retries = 0
        stopper = asyncio.create_task(stop.wait())
        try:
            while True:
                recv = asyncio.ensure_future(conn.recv())
                done, _ = await asyncio.wait({recv, stopper}, return_when=asyncio.FIRST_COMPLETED)
                if recv not in done:
                    recv.cancel()
                    await conn.close()
                    return "stopped"
                try:
                    frame = json.loads(recv.result())
                except ConnectionClosed:
                    raise
                except ValueError:
                    continue
                if isinstance(frame, dict):
                    on_frame(frame)
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd else None
            if code == Close.TOKEN_ROTATED:  # token rotated: the session file has the new one
                await asyncio.sleep(0.05)
                continue
            if code == Close.GOING_AWAY:
                return "backend shut down"
            return (
                f"connection lost (close code {code})"
                if code is not None
                else "connection lost without a close frame (the backend died?)"
            )
        finally:
            stopper.cancel()
    return "stopped"
