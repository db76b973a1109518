"""Client names and working directories with any Unicode (issue 18 item 4; docs/protocol.md §2.1).

Before: a name with non-Latin-1 or control characters (`claude ✨`, CJK, U+202E, ESC) — `Client.connect
(name=…)` or an MCP client's `clientInfo.name` — made every call fail (`invalid X-OH-Client header`),
and so did a workdir like `/tmp/проект`. Now clients send such values as `UTF-8''<percent-encoded>`
(protocol/headers.py) and the backend decodes them; the name loses its control/format characters.
Real backend on loopback, real clients (async, sync, the fast path's raw socket client).
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from oh.client import Client, SyncClient
from oh.fastpath import ws as fastws
from oh.mcp.backend import connect_client
from oh.protocol.headers import decode_value, encode_value

from .conftest import TOKEN, start_backend_process

NAMES = [
    # (name given, name the backend shows)
    ("claude ✨", "claude ✨"),
    ("エージェント 名前", "エージェント 名前"),
    ("evil\u202etxt.exe", "eviltxt.exe"),  # RIGHT-TO-LEFT OVERRIDE: a format character, removed
    ("red\x1b[31malert", "red[31malert"),  # ESC removed
    ("tab\tand\nnewline", "tabandnewline"),
    ("plain-name 1.0", "plain-name 1.0"),
    ("50% done", "50% done"),
    ("UTF-8''literal", "UTF-8''literal"),  # the marker itself, sent encoded, arrives as written
    ("Ünïcödé Latin-1", "Ünïcödé Latin-1"),
]


@pytest.mark.parametrize(("given", "shown"), NAMES)
def test_header_values_round_trip_and_plain_ones_are_untouched(given, shown):
    encoded = encode_value(given)
    assert encoded.isascii() and all(" " <= ch <= "~" for ch in encoded) and encoded == encoded.strip()
    assert decode_value(encoded) == given
    if given.isascii() and given.isprintable() and not given.startswith("UTF-8''"):
        assert encoded == given  # what old backends read the same way


def test_an_encoded_value_that_is_not_utf8_is_an_error():
    with pytest.raises(ValueError):
        decode_value("UTF-8''%FF%FE")


@pytest.fixture
def unicode_ws(tmp_path):
    ws = tmp_path / "проект 工作"
    ws.mkdir()
    (ws / "подпапка").mkdir()
    return ws


async def _names(b) -> list[str]:
    return [a["name"] for a in b.status()["agents"]]


async def test_async_client_names_and_a_unicode_workdir(make_backend, unicode_ws):
    b = await make_backend("local", workspace=unicode_ws)
    url = f"ws://127.0.0.1:{b.port}"
    sub = unicode_ws / "подпапка"
    for given, shown in NAMES:
        async with await Client.connect(url, TOKEN, name=given, workdir=str(sub)) as c:
            assert await _names(b) == [shown]
            obs = await c.run("pwd")
            assert obs.content == f"{sub}\n", (given, obs.content)


def test_sync_client_and_the_fast_path_client(unicode_ws, oh_home):
    """A backend process (the sync clients block: not on this test's loop)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(OH_HOME=str(oh_home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    proc, ready = start_backend_process(unicode_ws, env)
    try:
        assert ready["ready"], ready
        _sync_and_fast(ready["url"], ready["port"])
    finally:
        proc.terminate()
        proc.wait(10)


def _sync_and_fast(url: str, port: int) -> None:
    def status() -> dict:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/status", headers={"Authorization": f"Bearer {TOKEN}"})
        return json.loads(urllib.request.urlopen(req, timeout=10).read())

    unicode_ws = Path(status()["workspace"])
    with SyncClient.connect(url, TOKEN, name="claude ✨", workdir=str(unicode_ws)) as c:
        assert [a["name"] for a in status()["agents"]] == ["claude ✨"]
        assert c.run("pwd").content == f"{unicode_ws}\n"
    conn = fastws.Connection.open(
        "127.0.0.1",
        port,
        "/v1/agent",
        {"Authorization": f"Bearer {TOKEN}", "X-OH-Client": "名前\x1b", "X-OH-Workdir": str(unicode_ws)},
    )
    try:
        assert [a["name"] for a in status()["agents"]] == ["名前"]
    finally:
        conn.close()


async def test_mcp_connection_helper_with_a_unicode_client_and_workspace(make_backend, unicode_ws):
    b = await make_backend("local", workspace=unicode_ws)
    c = await connect_client(
        f"ws://127.0.0.1:{b.port}", TOKEN, name="claude ✨", shell="mcp-claude", workdir=str(unicode_ws)
    )
    try:
        assert await _names(b) == ["claude ✨"]
        assert (await c.run("pwd")).content == f"{unicode_ws}\n"
    finally:
        await c.close()


async def test_bad_encoded_headers_are_refused_with_a_reason(make_backend, unicode_ws):
    b = await make_backend("local", workspace=unicode_ws)
    for header in ("X-OH-Client", "X-OH-Workdir"):
        with pytest.raises(InvalidStatus) as exc:
            await connect(
                f"ws://127.0.0.1:{b.port}/v1/agent",
                additional_headers={"Authorization": f"Bearer {TOKEN}", header: "UTF-8''%FF"},
            )
        assert exc.value.response.status_code == 400
        assert header.encode() in exc.value.response.body and b"UTF-8" in exc.value.response.body
