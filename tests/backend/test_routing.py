"""Agent -> backend -> editor routing: correlation, renumbering, bad input, drops, rotation."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from websockets.asyncio.client import connect

from oh.client import AuthError, Client, ConnectionLost

from .conftest import TOKEN
from .peers import EchoEditor


def url(b):
    return f"ws://127.0.0.1:{b.port}"


async def agent(b, token=TOKEN):
    return await connect(url(b) + "/v1/agent", additional_headers={"Authorization": f"Bearer {token}"})


async def test_editor_registration_answer(make_backend, workspace):
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]) as ed:
        assert ed.answer["type"] == "registered"
        assert ed.answer["instance_id"] == b.instance_id
        assert b.status()["editors"][0]["name"] == "echo"


@pytest.mark.parametrize(
    "frame,error_id",
    [
        ({"type": "hello"}, "BAD_REQUEST"),
        ({"type": "register", "protocol": 99, "workspace_folders": ["/x"]}, "PROTOCOL_MISMATCH"),
        ({"type": "register", "protocol": 1, "workspace_folders": "nope"}, "BAD_REQUEST"),
        ({"type": "register", "protocol": 1, "workspace_folders": ["/x"], "session": "other"}, "WRONG_SESSION"),
    ],
)
async def test_bad_registration_refused(make_backend, frame, error_id):
    b = await make_backend("vscode")
    async with connect(url(b) + "/v1/editor", additional_headers={"Authorization": f"Bearer {b.editor_token}"}) as ws:
        await ws.send(json.dumps(frame))
        answer = json.loads(await ws.recv())
        assert answer["type"] == "error" and answer["error_id"] == error_id
        await ws.wait_closed()
        assert ws.close_code == 4400
    assert len(b.registry) == 0


async def test_ids_renumbered_and_mapped_back(make_backend, workspace):
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]) as ed:
        a1, a2 = await agent(b), await agent(b)
        # Both agents use id 7: the editor must see two different ids, each agent its own answer.
        await a1.send(json.dumps({"id": 7, "action": "read", "args": {"path": "one.txt"}}))
        await a2.send(json.dumps({"id": 7, "action": "read", "args": {"path": "two.txt"}}))
        o1, o2 = json.loads(await a1.recv()), json.loads(await a2.recv())
        assert o1["cause"] == 7 and o1["content"].endswith("one.txt")
        assert o2["cause"] == 7 and o2["content"].endswith("two.txt")
        assert len({f["id"] for f in ed.received}) == 2
        # relative paths are made absolute against the workspace before they reach the editor
        assert all(f["args"]["path"].startswith(str(workspace)) for f in ed.received)
        await a1.close()
        await a2.close()


async def test_correlation_1000_pipelined_from_10_agents(make_backend, workspace):
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]):

        async def one_agent(n: int):
            ws = await agent(b)
            for i in range(100):
                await ws.send(json.dumps({"id": i, "action": "read", "args": {"path": f"a{n}/f{i}"}}))
            got = {}
            for _ in range(100):
                o = json.loads(await ws.recv())
                got[o["cause"]] = o["content"]
            await ws.close()
            return n, got

        results = await asyncio.wait_for(asyncio.gather(*(one_agent(n) for n in range(10))), 60)
    for n, got in results:
        assert sorted(got) == list(range(100))
        assert all(content.endswith(f"a{n}/f{i}") for i, content in got.items())
    assert b.stats["done"] == 1000 and len(b.correlator) == 0


@pytest.mark.parametrize(
    "raw,error_id,cause",
    [
        ("not json", "BAD_REQUEST", None),
        ("[1,2]", "BAD_REQUEST", None),
        ('{"action":"run","args":{"command":"ls"}}', "BAD_REQUEST", None),
        ('{"id":"5","action":"run","args":{"command":"ls"}}', "BAD_REQUEST", None),
        ('{"id":5,"action":"fly","args":{}}', "TOOL_UNSUPPORTED", 5),
        ('{"id":6,"action":"run","args":{"command":7}}', "BAD_REQUEST", 6),
        ('{"id":8,"action":"read","args":{"path":""}}', "BAD_REQUEST", 8),
        ('{"id":9,"action":"edit","args":{"path":"a","command":"explode"}}', "BAD_REQUEST", 9),
        ('{"id":10,"action":"run","args":{"command":"x"},"timeout":-1}', "BAD_REQUEST", 10),
    ],
)
async def test_bad_frames_get_errors_and_connection_survives(make_backend, workspace, raw, error_id, cause):
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]):
        ws = await agent(b)
        await ws.send(raw)
        o = json.loads(await ws.recv())
        assert o["observation"] == "error" and o["extras"] == {"error_id": error_id}
        assert o.get("cause") == cause
        await ws.send(json.dumps({"id": 100, "action": "read", "args": {"path": "ok"}}))
        assert json.loads(await ws.recv())["cause"] == 100
        await ws.close()


async def test_binary_frame_and_duplicate_id(make_backend, workspace):
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)], hold=True):
        ws = await agent(b)
        await ws.send(b"\x00\x01")
        assert json.loads(await ws.recv())["extras"]["error_id"] == "BAD_REQUEST"
        await ws.send(json.dumps({"id": 1, "action": "read", "args": {"path": "x"}}))
        await ws.send(json.dumps({"id": 1, "action": "read", "args": {"path": "x"}}))
        o = json.loads(await ws.recv())
        assert o["cause"] == 1 and o["extras"]["error_id"] == "BAD_REQUEST" and "in flight" in o["content"]
        await ws.close()


async def test_editor_drop_fails_pending_within_1s(make_backend, workspace):
    b = await make_backend("vscode")
    ed = EchoEditor(b.port, b.editor_token, [str(workspace)], hold=True)
    await ed.__aenter__()
    ws = await agent(b)
    for i in range(5):
        await ws.send(json.dumps({"id": i, "action": "read", "args": {"path": "x"}}))
    while len(ed.received) < 5:
        await asyncio.sleep(0.01)
    t0 = time.monotonic()
    ed.task.cancel()
    ed.conn.transport.abort()  # a crash, not a polite close
    causes = set()
    for _ in range(5):
        o = json.loads(await asyncio.wait_for(ws.recv(), 2))
        assert o["extras"]["error_id"] == "EDITOR_DISCONNECTED"
        causes.add(o["cause"])
    assert causes == set(range(5))
    assert time.monotonic() - t0 < 1.0
    await ws.close()


async def test_no_editor_times_out_with_no_editor(make_backend):
    b = await make_backend("vscode", editor_timeout=0.3)
    async with Client.connect if False else await Client.connect(url(b), TOKEN) as c:
        o = await c.read("x.txt")
    assert o.error_id == "NO_EDITOR" and "oh attach" in o.content


async def test_editor_arriving_late_is_used(make_backend, workspace):
    b = await make_backend("vscode", editor_timeout=5)
    c = await Client.connect(url(b), TOKEN)
    pending = asyncio.ensure_future(c.read("late.txt"))
    await asyncio.sleep(0.3)
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]):
        o = await asyncio.wait_for(pending, 5)
    assert o.kind == "read" and o.content.endswith("late.txt")
    await c.close()


async def test_path_outside_workspace_denied_by_backend(make_backend, workspace):
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, ["/"]) as ed:
        c = await Client.connect(url(b), TOKEN)
        for p in ("../outside.txt", "/etc/passwd"):
            o = await c.read(p)
            assert o.error_id == "PATH_DENIED"
        assert ed.received == []
        await c.close()


async def test_agent_drop_cancels_on_editor(make_backend, workspace):
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)], hold=True) as ed:
        ws = await agent(b)
        await ws.send(json.dumps({"id": 1, "action": "read", "args": {"path": "x"}}))
        while not ed.received:
            await asyncio.sleep(0.01)
        await ws.close()
        for _ in range(100):
            if ed.cancelled:
                break
            await asyncio.sleep(0.02)
        assert ed.cancelled == [ed.received[0]["id"]]
        assert len(b.correlator) == 0


async def test_token_rotation_closes_old_connections(make_backend, workspace, oh_home):
    b = await make_backend("vscode")
    c = await Client.connect(url(b), TOKEN)
    async with connect(url(b) + "/v1/control", additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ctl:
        await ctl.send(json.dumps({"type": "rotate_token", "token": "new-token-0123456789abcdef"}))
        answer = json.loads(await ctl.recv())
    assert answer == {"type": "ok", "closed": 1}
    with pytest.raises(ConnectionLost) as exc:
        await c.read("x")
    assert exc.value.code == 4001
    with pytest.raises(AuthError):
        await Client.connect(url(b), TOKEN)
    c2 = await Client.connect(url(b), "new-token-0123456789abcdef")
    await c2.close()
    from oh import sessions

    s = sessions.list_sessions()[0]
    assert s.token == "new-token-0123456789abcdef"


async def test_monitor_sees_lifecycle(make_backend, workspace):
    b = await make_backend("vscode")
    async with connect(url(b) + "/v1/monitor", additional_headers={"Authorization": f"Bearer {TOKEN}"}) as mon:
        snap = json.loads(await mon.recv())
        assert snap["type"] == "snapshot" and snap["editors"] == []
        async with EchoEditor(b.port, b.editor_token, [str(workspace)]):
            c = await Client.connect(url(b), TOKEN, name="tester")
            await c.read("m.txt")
            await c.close()
        events = []
        while len(events) < 6:
            events.append(json.loads(await asyncio.wait_for(mon.recv(), 3)))
    names = [e["event"] for e in events]
    assert names[0] == "editor_connected"
    assert "agent_connected" in names and "action_started" in names and "action_finished" in names
    fin = next(e for e in events if e["event"] == "action_finished")
    assert fin["kind"] == "read" and fin["outcome"] == "ok" and fin["summary"] == "m.txt" and fin["duration_ms"] >= 0


async def test_trace_records_without_secrets(make_backend, workspace, oh_home):
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]):
        c = await Client.connect(url(b), TOKEN)
        await c.read("t.txt")
        await c.send({"id": 99, "action": "nope", "args": {}})
        await c.close() if False else None
        await asyncio.sleep(0.1)
        await c.close()
    b.trace.flush()
    lines = [json.loads(l) for l in (oh_home / "traces" / "t.jsonl").read_text().splitlines()]
    kinds = [l["kind"] for l in lines]
    assert "request" in kinds and "result" in kinds and "error" in kinds
    assert TOKEN not in (oh_home / "traces" / "t.jsonl").read_text()


async def test_shutdown_interrupts_pending(make_backend, workspace):
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)], hold=True) as ed:
        c = await Client.connect(url(b), TOKEN)
        fut = asyncio.ensure_future(c.read("x"))
        while not ed.received:
            await asyncio.sleep(0.01)
        await b.stop("test")
        o = await asyncio.wait_for(fut, 3)
        assert o.error_id == "INTERRUPTED"
        await c.close()
