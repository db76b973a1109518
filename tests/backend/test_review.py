"""Review (proposal) mode on real backends (docs/protocol.md §3.11): what the editor leg carries,
the capability gate that keeps an editor without review from applying changes directly, editor
disconnect and backend stop ending pending proposals, and the review control requests."""

from __future__ import annotations

import asyncio
import json

from websockets.asyncio.client import connect

from .conftest import TOKEN
from .peers import EchoEditor, agent, control


def url(b):
    return f"ws://127.0.0.1:{b.port}"


async def _register(b, workspace, caps):
    ws = await connect(url(b) + "/v1/editor", additional_headers={"Authorization": f"Bearer {b.editor_token}"})
    await ws.send(
        json.dumps(
            {
                "type": "register",
                "protocol": 1,
                "session": None,
                "workspace_folders": [str(workspace)],
                "editor": {"name": "reviewer", "version": "0", "pid": 1},
                "extension_version": "0",
                "capabilities": caps,
            }
        )
    )
    return ws, json.loads(await ws.recv())


async def test_an_editor_without_review_never_gets_changes(make_backend, workspace):
    b = await make_backend("vscode", review=True, review_timeout=30.0)
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]) as ed:
        assert ed.answer["review"] is True and ed.answer["review_timeout"] == 30.0
        ag = await agent(b)
        await ag.send(json.dumps({"id": 1, "action": "write", "args": {"path": "x.txt", "content": "x"}}))
        obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
        assert obs["extras"]["error_id"] == "TOOL_UNSUPPORTED" and "review" in obs["content"]
        await ag.send(json.dumps({"id": 2, "action": "edit", "args": {"path": "x.txt", "command": "view"}}))
        obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
        assert obs["content"].startswith("echo:")  # view is not a change: forwarded as usual
        assert [f["action"] for f in ed.received] == ["edit"]
        await ag.close()


async def test_oh_review_on_a_vscode_backend_points_to_vscode(make_backend):
    b = await make_backend("vscode", review=True)
    answer = await control(b, TOKEN, {"type": "review", "op": "list"})
    assert answer["error_id"] == "NOT_HERE" and "VS Code" in answer["message"]


async def test_registered_says_review_off_by_default(make_backend, workspace):
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]) as ed:
        assert ed.answer["review"] is False and "review_timeout" not in ed.answer


async def test_proposal_events_reach_monitors_and_a_disconnect_ends_the_proposal(make_backend, workspace):
    b = await make_backend("vscode", review=True, review_timeout=300.0)
    ed, answer = await _register(b, workspace, ["run", "read", "write", "edit", "review"])
    mon = await connect(url(b) + "/v1/monitor", additional_headers={"Authorization": f"Bearer {TOKEN}"})
    snapshot = json.loads(await mon.recv())
    assert snapshot["review"] is True
    ag = await agent(b)
    await ag.send(
        json.dumps({"id": 5, "action": "edit", "args": {"path": "f.py", "command": "create", "file_text": "x"}})
    )
    action = json.loads(await asyncio.wait_for(ed.recv(), 10))
    assert action["action"] == "edit"
    await ed.send(
        json.dumps(
            {
                "type": "proposal_event",
                "event": "proposal_opened",
                "proposal": {"cause": action["id"], "path": "/w/f.py", "kind": "edit"},
            }
        )
    )
    await ed.send(json.dumps({"type": "proposal_event", "event": "bogus", "proposal": {}}))  # ignored, connection stays

    async def event(name):
        while True:
            frame = json.loads(await mon.recv())
            if frame.get("event") == name:
                return frame

    opened = await asyncio.wait_for(event("proposal_opened"), 10)
    assert (
        opened["action_id"] == action["id"]
        and opened["path"] == "/w/f.py"
        and opened["editor_id"] == answer["editor_id"]
    )
    assert opened["agent_id"] == action["agent"]["id"]  # the backend names whose action it is
    await ed.close()  # the user closed VS Code while the proposal waited: the agent hears it at once
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert obs["cause"] == 5 and obs["extras"]["error_id"] == "EDITOR_DISCONNECTED"
    await ag.close()
    await mon.close()


async def test_backend_stop_ends_a_local_proposal_and_writes_nothing(make_backend, workspace):
    b = await make_backend("local", review=True, review_timeout=300.0)
    ag = await agent(b)
    await ag.send(json.dumps({"id": 9, "action": "write", "args": {"path": "later.txt", "content": "x"}}))
    for _ in range(100):
        if b.proposals.pending:
            break
        await asyncio.sleep(0.05)
    [p] = b.proposals.list()
    assert p["path"] == str(workspace / "later.txt") and b.status()["proposals"] == 1
    stopping = asyncio.create_task(b.stop("test"))
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    await stopping
    assert obs["cause"] == 9 and obs["extras"]["error_id"] == "INTERRUPTED"
    assert not (workspace / "later.txt").exists()


async def test_review_control_requests(make_backend, workspace):
    b = await make_backend("local", review=True, review_timeout=300.0)
    async with connect(
        url(b) + "/v1/control", additional_headers={"Authorization": f"Bearer {b.decider_token}"}
    ) as ctl:

        async def ask(frame):
            await ctl.send(json.dumps({"type": "review", **frame}))
            return json.loads(await asyncio.wait_for(ctl.recv(), 10))

        assert (await ask({"op": "list"}))["proposals"] == []
        assert (await ask({"op": "nope"}))["error_id"] == "BAD_REQUEST"
        assert (await ask({"op": "accept", "id": "p1", "all": True}))["error_id"] == "BAD_REQUEST"
        assert (await ask({"op": "reject", "id": "p1", "reason": 5}))["error_id"] == "BAD_REQUEST"
        assert (await ask({"op": "show", "id": "p404"}))["error_id"] == "NO_PROPOSAL"
        assert (await ask({"op": "accept", "all": True}))["results"] == []
    (workspace / "sub").mkdir()  # one backend per workspace: the second serves a sub-folder
    off = await make_backend("local", workspace=workspace / "sub")
    assert (await control(off, TOKEN, {"type": "review", "op": "list"}))["error_id"] == "REVIEW_OFF"
