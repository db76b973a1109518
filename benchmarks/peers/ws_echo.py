"""Baseline (a): a raw single-hop websockets echo server, the transport's floor.

    python benchmarks/peers/ws_echo.py

Same library and settings as the oh backend (websockets asyncio API, no compression, loopback):
every text frame is sent straight back. The agent side (``EchoAgent``) sends a frame as large as
oh's observation and waits for it to come back.
"""

from __future__ import annotations

import asyncio
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402
from websockets.asyncio.server import serve  # noqa: E402


async def _echo(conn) -> None:
    async for message in conn:
        await conn.send(message)


async def main() -> None:
    async with serve(_echo, sock=common.bind_loopback(), compression=None, max_size=None, ping_interval=20) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        common.ready(port=port)
        await asyncio.Future()  # until the driver stops us


class EchoAgent:
    """Client side. ``call`` is the strict floor (send, then recv on the same coroutine);
    ``pipelined`` keeps many frames in flight, matched in order (the echo preserves order)."""

    name = "ws-echo"

    def __init__(self, conn) -> None:
        self.conn = conn
        self._waiting: collections.deque[asyncio.Future] = collections.deque()
        self._reader: asyncio.Task | None = None

    @classmethod
    async def connect(cls, port: int, path: str = "/") -> "EchoAgent":
        conn = await connect(f"ws://127.0.0.1:{port}{path}", compression=None, max_size=None, open_timeout=10)
        return cls(conn)

    async def call(self, frame: str) -> str:
        await self.conn.send(frame)
        return await self.conn.recv()

    async def _read(self) -> None:
        async for message in self.conn:
            self._waiting.popleft().set_result(message)

    async def call_pipelined(self, frame: str) -> str:
        if self._reader is None:
            self._reader = asyncio.create_task(self._read())
        fut = asyncio.get_running_loop().create_future()
        self._waiting.append(fut)
        await self.conn.send(frame)
        return await fut

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        await self.conn.close()


if __name__ == "__main__":
    sys.exit(common.run(main))
