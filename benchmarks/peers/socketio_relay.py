"""Peer (b): the same relay on python-socketio, OpenHands' original transport.

    BENCH_TOKEN=T python benchmarks/peers/socketio_relay.py relay [--server aiohttp|asgi]
    BENCH_TOKEN=T python benchmarks/peers/socketio_relay.py executor --url http://127.0.0.1:PORT --workspace DIR

The relay is a ``socketio.AsyncServer`` (on aiohttp, or as an ASGI app on uvicorn like OpenHands'
server); the executor and the agent are ``socketio.AsyncClient``s on the websocket transport (no
long-polling, no compression: the fastest configuration python-socketio offers). The relay does
what oh's backend does per action: checks the token at connect, renumbers the agent's id for the
executor leg, maps the executor's ``cause`` back, and answers the agent that asked.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import socketio  # noqa: E402

MAX_BUFFER = 128 * 1024 * 1024


def make_relay(token: str, async_mode: str) -> socketio.AsyncServer:
    sio = socketio.AsyncServer(
        async_mode=async_mode,
        max_http_buffer_size=MAX_BUFFER,
        http_compression=False,
        compression_threshold=1 << 30,
        cors_allowed_origins=[],
        ping_interval=20,
        ping_timeout=20,
    )
    executors: list[str] = []
    leg_ids = itertools.count(1)
    pending: dict[int, tuple[str, int]] = {}  # leg id -> (agent sid, agent's id)

    @sio.event
    async def connect(sid, environ, auth):
        auth = auth or {}
        if not hmac.compare_digest(str(auth.get("token", "")).encode(), token.encode()):
            return False
        if auth.get("role") == "executor":
            executors.append(sid)

    @sio.event
    async def disconnect(sid, *args):
        if sid in executors:
            executors.remove(sid)

    @sio.on("action")
    async def on_action(sid, action):
        leg = next(leg_ids)
        pending[leg] = (sid, action["id"])
        forwarded = dict(action)
        forwarded["id"] = leg
        await sio.emit("action", forwarded, to=executors[-1])

    @sio.on("observation")
    async def on_observation(sid, obs):
        who = pending.pop(obs.get("cause"), None)
        if who is None:
            return
        obs["cause"] = who[1]
        await sio.emit("observation", obs, to=who[0])

    return sio


async def serve_relay(token: str, server: str) -> None:
    sock = common.bind_loopback()
    port = sock.getsockname()[1]
    if server == "aiohttp":
        from aiohttp import web

        sio = make_relay(token, "aiohttp")
        app = web.Application(client_max_size=MAX_BUFFER)
        sio.attach(app)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        common.ready(port=port, server="aiohttp")
        await asyncio.Future()
    else:
        import uvicorn

        sio = make_relay(token, "asgi")
        config = uvicorn.Config(
            socketio.ASGIApp(sio),
            loop="asyncio",
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws_per_message_deflate=False,
            ws_max_size=MAX_BUFFER,
        )
        srv = uvicorn.Server(config)
        task = asyncio.create_task(srv.serve(sockets=[sock]))
        for _ in range(200):
            if srv.started or task.done():
                break
            await asyncio.sleep(0.05)
        common.ready(port=port, server="uvicorn-asgi")
        await task


async def serve_executor(url: str, token: str, workspace: str) -> None:
    runtime, execute = common.make_executor(workspace)
    await runtime.start()
    sio = socketio.AsyncClient(reconnection=False)

    @sio.on("action")
    async def on_action(action):  # python-socketio runs each handler in its own task
        obs = await execute(action)
        await sio.emit("observation", obs)

    await sio.connect(url, transports=["websocket"], auth={"token": token, "role": "executor"}, wait_timeout=10)
    common.ready(sid=sio.sid)
    await sio.wait()


class SocketioAgent:
    """The agent side: emits actions, matches observations by ``cause``."""

    def __init__(self, name: str = "socketio") -> None:
        self.name = name
        self.sio = socketio.AsyncClient(reconnection=False)
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future] = {}
        self.sio.on("observation", self._on_observation)

    async def _on_observation(self, obs) -> None:
        fut = self.pending.pop(obs.get("cause"), None)
        if fut is not None and not fut.done():
            fut.set_result(obs)

    @classmethod
    async def connect(cls, port: int, token: str, name: str = "socketio") -> "SocketioAgent":
        agent = cls(name)
        await agent.sio.connect(
            f"http://127.0.0.1:{port}",
            transports=["websocket"],
            auth={"token": token, "role": "agent"},
            wait_timeout=10,
        )
        return agent

    async def call(self, action: dict) -> dict:
        action = dict(action)
        action["id"] = aid = next(self.ids)
        fut = asyncio.get_running_loop().create_future()
        self.pending[aid] = fut
        await self.sio.emit("action", action)
        return await fut

    async def close(self) -> None:
        await self.sio.disconnect()


def main() -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="role", required=True)
    r = sub.add_parser("relay")
    r.add_argument("--server", choices=("aiohttp", "asgi"), default="aiohttp")
    e = sub.add_parser("executor")
    e.add_argument("--url", required=True)
    e.add_argument("--workspace", required=True)
    args = p.parse_args()
    token = os.environ["BENCH_TOKEN"]
    if args.role == "relay":
        return common.run(lambda: serve_relay(token, args.server))
    return common.run(lambda: serve_executor(args.url, token, args.workspace))


if __name__ == "__main__":
    sys.exit(main())
