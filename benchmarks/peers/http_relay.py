"""Peer (c): the same relay over HTTP, OpenHands LocalRuntime's transport.

    BENCH_TOKEN=T python benchmarks/peers/http_relay.py executor --workspace DIR
    BENCH_TOKEN=T python benchmarks/peers/http_relay.py relay --executor-url http://127.0.0.1:PORT

The executor is a FastAPI app on uvicorn with ``POST /execute_action`` (body ``{"action": {...}}``,
header ``X-Session-API-Key``, answer: the observation), the shape of OpenHands'
action_execution_server. The relay is a FastAPI app on uvicorn with the same endpoint; it checks the
key, renumbers the id, forwards over a keep-alive ``httpx.AsyncClient`` pool and maps ``cause`` back.
The agent posts with ``httpx.AsyncClient``. Handlers read the raw body (no pydantic model) and
access logs are off: the fastest way to run this stack as installed.
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
import httpx  # noqa: E402
from fastapi import FastAPI, Request  # noqa: E402
from fastapi.responses import JSONResponse, Response  # noqa: E402

KEY_HEADER = "X-Session-API-Key"
POOL = httpx.Limits(max_connections=256, max_keepalive_connections=256, keepalive_expiry=60)


def _authorized(request: Request, token: str) -> bool:
    return hmac.compare_digest(request.headers.get(KEY_HEADER, "").encode(), token.encode())


def make_executor_app(token: str, workspace: str) -> FastAPI:
    runtime, execute = common.make_executor(workspace)
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

    @app.post("/execute_action")
    async def execute_action(request: Request):
        if not _authorized(request, token):
            return Response(status_code=401)
        body = await request.json()
        obs = await execute(body["action"])
        return JSONResponse(obs)

    app.state.runtime = runtime
    return app


def make_relay_app(token: str, executor_url: str) -> FastAPI:
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    client = httpx.AsyncClient(
        base_url=executor_url, limits=POOL, timeout=httpx.Timeout(600.0), headers={KEY_HEADER: token}, trust_env=False
    )
    leg_ids = itertools.count(1)

    @app.post("/execute_action")
    async def execute_action(request: Request):
        if not _authorized(request, token):
            return Response(status_code=401)
        body = await request.json()
        action = body["action"]
        agent_id = action["id"]
        forwarded = dict(action)
        forwarded["id"] = next(leg_ids)
        r = await client.post("/execute_action", json={"action": forwarded})
        obs = r.json()
        obs["cause"] = agent_id
        return JSONResponse(obs)

    return app


async def serve(app: FastAPI) -> None:
    import uvicorn

    runtime = getattr(app.state, "runtime", None)
    if runtime is not None:
        await runtime.start()
    sock = common.bind_loopback()
    config = uvicorn.Config(
        app, loop="asyncio", log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=60
    )
    srv = uvicorn.Server(config)
    task = asyncio.create_task(srv.serve(sockets=[sock]))
    for _ in range(200):
        if srv.started or task.done():
            break
        await asyncio.sleep(0.05)
    common.ready(port=sock.getsockname()[1])
    await task


class HttpAgent:
    """The agent side: one ``httpx.AsyncClient`` (keep-alive pool), one POST per action."""

    name = "http"

    def __init__(self, port: int, token: str) -> None:
        self.client = httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}",
            limits=POOL,
            timeout=httpx.Timeout(600.0),
            headers={KEY_HEADER: token},
            trust_env=False,
        )
        self.ids = itertools.count(1)

    @classmethod
    async def connect(cls, port: int, token: str) -> "HttpAgent":
        return cls(port, token)

    async def call(self, action: dict) -> dict:
        action = dict(action)
        action["id"] = aid = next(self.ids)
        r = await self.client.post("/execute_action", json={"action": action})
        r.raise_for_status()
        obs = r.json()
        if obs.get("cause") != aid:
            raise RuntimeError(f"http relay answered cause {obs.get('cause')} for {aid}")
        return obs

    async def close(self) -> None:
        await self.client.aclose()


def main() -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="role", required=True)
    e = sub.add_parser("executor")
    e.add_argument("--workspace", required=True)
    r = sub.add_parser("relay")
    r.add_argument("--executor-url", required=True)
    args = p.parse_args()
    token = os.environ["BENCH_TOKEN"]
    if args.role == "executor":
        return common.run(lambda: serve(make_executor_app(token, args.workspace)))
    return common.run(lambda: serve(make_relay_app(token, args.executor_url)))


if __name__ == "__main__":
    sys.exit(main())
