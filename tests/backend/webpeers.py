"""Real HTTP and WebSocket requests to the approvals page's server (issue 40), as a browser (or an attacker's
page) would send them: raw asyncio streams, so a test chooses every header (Host, Origin, Cookie)."""

from __future__ import annotations

import asyncio
import json

from websockets.asyncio.client import connect

from .conftest import TOKEN
from .peers import control


async def http_get(port: int, path: str, headers: dict[str, str] | None = None, host: str | None = None):
    """One GET: (status, lower-cased headers, body bytes). ``headers`` may repeat nothing; ``host`` replaces Host."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    lines = [f"GET {path} HTTP/1.1", f"Host: {host or f'127.0.0.1:{port}'}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    got: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        got.setdefault(name.strip().lower(), value.strip())
    return int(status_line.split()[1]), got, body


def origin(port: int) -> str:
    return f"http://127.0.0.1:{port}"


async def pair_code(b) -> str:
    answer = await control(b, b.decider_token, {"type": "approvals", "op": "pair"})
    assert answer.get("code"), answer
    return answer["code"]


async def paired_cookie(b) -> str:
    """Pair as the page does: a code from the control leg (the decider), then GET /api/pair -> the cookie."""
    port = b.web.port
    code = await pair_code(b)
    status, headers, body = await http_get(port, "/api/pair", {"X-OH-Pair-Code": code, "Sec-Fetch-Site": "same-origin"})
    assert status == 200, body
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    return cookie.split(";", 1)[0]


async def live(b, cookie: str, origin_: str | None = None, host: str | None = None):
    port = b.web.port
    hdrs = {"Cookie": cookie}
    if host:
        hdrs["Host"] = host
    return await connect(
        f"ws://127.0.0.1:{port}/live", origin=origin_ or origin(port), additional_headers=hdrs, open_timeout=10
    )


async def next_state(ws, want=lambda s: True, limit: int = 200) -> dict:
    """The next ``state`` message that satisfies ``want`` (bounded)."""
    for _ in range(limit):
        msg = json.loads(await asyncio.wait_for(ws.recv(), 15))
        if msg.get("type") == "state" and want(msg):
            return msg
    raise AssertionError("no such state")


async def result(ws) -> dict:
    for _ in range(200):
        msg = json.loads(await asyncio.wait_for(ws.recv(), 15))
        if msg.get("type") == "result":
            return msg
    raise AssertionError("no result")


__all__ = ["TOKEN", "http_get", "live", "next_state", "origin", "pair_code", "paired_cookie", "result"]
