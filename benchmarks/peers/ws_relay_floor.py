"""Context peer: the floor of any two-hop relay on websockets (not a competitor, a yardstick).

    python benchmarks/peers/ws_relay_floor.py relay
    python benchmarks/peers/ws_relay_floor.py executor --port PORT

The relay forwards every text frame from ``/agent`` to the executor (``/executor``) and back,
untouched: no JSON, no validation, no id mapping, no trace. The executor echoes each frame. The
agent side is ``ws_echo.EchoAgent`` pointed at ``/agent``. The topology is oh's (agent -> relay
-> executor -> relay -> agent, three processes); what it cannot show is any of oh's work.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402
from websockets.asyncio.server import serve  # noqa: E402


async def relay() -> None:
    executor: dict[str, object] = {}
    agents: list = []

    async def handler(conn) -> None:
        if conn.request.path == "/executor":
            executor["conn"] = conn
            async for message in conn:  # answers go back in order to the (single) agent
                await agents[-1].send(message)
        else:
            agents.append(conn)
            try:
                async for message in conn:
                    await executor["conn"].send(message)
            finally:
                agents.remove(conn)

    async with serve(handler, sock=common.bind_loopback(), compression=None, max_size=None, ping_interval=20) as server:
        common.ready(port=next(iter(server.sockets)).getsockname()[1])
        await asyncio.Future()


async def executor(port: int) -> None:
    async with connect(f"ws://127.0.0.1:{port}/executor", compression=None, max_size=None, open_timeout=10) as conn:
        common.ready()
        async for message in conn:
            await conn.send(message)


def main() -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="role", required=True)
    sub.add_parser("relay")
    e = sub.add_parser("executor")
    e.add_argument("--port", type=int, required=True)
    args = p.parse_args()
    if args.role == "relay":
        return common.run(relay)
    return common.run(lambda: executor(args.port))


if __name__ == "__main__":
    sys.exit(main())
