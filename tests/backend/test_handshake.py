"""Handshake refusals happen before the upgrade, over real sockets (docs/protocol.md §2)."""

from __future__ import annotations

import asyncio
import http.client
import json

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from .conftest import TOKEN


def _http_get(port: int, path: str, headers: dict[str, str] | None = None, host: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.putrequest("GET", path, skip_host=True)
    if host is not None:
        conn.putheader("Host", host)
    for k, v in (headers or {}).items():
        conn.putheader(k, v)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


async def http_get(*args, **kw):
    # The server runs in this event loop: do the blocking request in a thread.
    return await asyncio.to_thread(_http_get, *args, **kw)


async def test_health_without_auth(make_backend):
    b = await make_backend("vscode")
    status, body = await http_get(b.port, "/v1/health", host=f"127.0.0.1:{b.port}")
    assert status == 200
    data = json.loads(body)
    assert data["status"] == "ok" and data["protocol"] == 1 and data["version"]


async def test_status_needs_token_and_hides_it(make_backend):
    b = await make_backend("vscode")
    assert (await http_get(b.port, "/v1/status", host=f"localhost:{b.port}"))[0] == 401
    status, body = await http_get(
        b.port, "/v1/status", {"Authorization": f"Bearer {TOKEN}"}, host=f"localhost:{b.port}"
    )
    assert status == 200
    assert TOKEN not in body.decode()
    assert json.loads(body)["runtime"] == "vscode"


@pytest.mark.parametrize(
    "headers,host_fmt,expected",
    [
        ({}, "127.0.0.1:{p}", 401),
        ({"Authorization": "Bearer wrong"}, "127.0.0.1:{p}", 401),
        ({"Authorization": "Basic " + "x" * 10}, "127.0.0.1:{p}", 401),
        ({"Authorization": f"Bearer {TOKEN}", "Origin": "null"}, "127.0.0.1:{p}", 403),
        ({"Authorization": f"Bearer {TOKEN}", "Origin": "https://evil.example"}, "127.0.0.1:{p}", 403),
        ({"Authorization": f"Bearer {TOKEN}", "Origin": "vscode-webview://abc"}, "127.0.0.1:{p}", 403),
        ({"Authorization": f"Bearer {TOKEN}"}, "localhost.evil.com:{p}", 403),
        ({"Authorization": f"Bearer {TOKEN}"}, "10.0.0.1:{p}", 403),
        ({"Authorization": f"Bearer {TOKEN}"}, "127.0.0.1:1", 403),
        ({"Authorization": f"Bearer {TOKEN}"}, "[::1]:{p}", 426),  # accepted host, but not an upgrade
    ],
)
async def test_refusals(make_backend, headers, host_fmt, expected):
    b = await make_backend("vscode")
    status, _ = await http_get(b.port, "/v1/agent", headers, host=host_fmt.format(p=b.port))
    assert status == expected
    assert b.stats["done"] == 0


async def test_token_in_query_string_is_not_accepted(make_backend):
    b = await make_backend("vscode")
    with pytest.raises(InvalidStatus) as exc:
        async with connect(f"ws://127.0.0.1:{b.port}/v1/agent?token={TOKEN}"):
            pass
    assert exc.value.response.status_code == 401


async def test_unknown_path_404_after_auth(make_backend):
    b = await make_backend("vscode")
    status, _ = await http_get(b.port, "/v2/nope", {"Authorization": f"Bearer {TOKEN}"}, host=f"127.0.0.1:{b.port}")
    assert status == 404
    status, _ = await http_get(b.port, "/v2/nope", {}, host=f"127.0.0.1:{b.port}")
    assert status == 401


async def test_missing_host_refused(make_backend):
    b = await make_backend("vscode")
    status, _ = await http_get(b.port, "/v1/agent", {"Authorization": f"Bearer {TOKEN}"}, host=None)
    assert status in (400, 403)
