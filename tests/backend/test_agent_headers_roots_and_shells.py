"""The backend's agent-facing options (docs/protocol.md §2.1, §4, §5): agent headers (workdir, shared shells),
allowed roots, the agent field and agent_gone on the editor leg, security_risk, env secrecy.
Real backends on loopback, real sockets, real bash; the headless editor is the real `oh attach` peer."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from .conftest import TOKEN
from .peers import EchoEditor, serve_headless

_ids = itertools.count(1)


def url(b):
    return f"ws://127.0.0.1:{b.port}"


async def agent(b, **headers):
    h = {"Authorization": f"Bearer {TOKEN}", **{k: v for k, v in headers.items() if v is not None}}
    return await connect(url(b) + "/v1/agent", additional_headers=h)


async def ask(ws, action: str, timeout: float | None = None, **args):
    frame = {"id": next(_ids), "action": action, "args": args}
    if timeout is not None:
        frame["timeout"] = timeout
    await ws.send(json.dumps(frame))
    return json.loads(await asyncio.wait_for(ws.recv(), 30))


async def test_workdir_outside_the_roots_is_refused_with_a_reason(make_backend, workspace, tmp_path):
    b = await make_backend("local")
    with pytest.raises(InvalidStatus) as exc:
        await agent(b, **{"X-OH-Workdir": str(tmp_path)})
    assert exc.value.response.status_code == 403
    assert b"outside the allowed roots" in exc.value.response.body and b"--allow" in exc.value.response.body
    for bad in ("relative/dir", str(workspace / "missing")):
        with pytest.raises(InvalidStatus) as exc:
            await agent(b, **{"X-OH-Workdir": bad})
        assert exc.value.response.status_code == 400
    for key in ("a1", "has space", "x" * 65):
        with pytest.raises(InvalidStatus) as exc:
            await agent(b, **{"X-OH-Shell": key})
        assert exc.value.response.status_code == 400
    assert b.status()["agents"] == []


async def test_workdir_is_where_the_agent_acts(make_backend, workspace):
    sub = workspace / "sub"
    sub.mkdir()
    (sub / "f.txt").write_text("sub file\n")
    b = await make_backend("local")
    ws = await agent(b, **{"X-OH-Workdir": str(sub), "X-OH-Client": "me\tyou"})
    obs = await ask(ws, "run", command="pwd")
    assert obs["content"] == f"{sub}\n"
    obs = await ask(ws, "read", path="f.txt")
    assert obs["content"] == "sub file\n"
    st = b.status()["agents"][0]
    assert st["workdir"] == str(sub) and st["name"] == "meyou"  # control characters stripped
    await ws.close()


async def test_shared_shell_key_outlives_connections(make_backend, workspace):
    b = await make_backend("local")
    ws = await agent(b, **{"X-OH-Shell": "cli"})
    await ask(ws, "run", command="export KEPT=1; cd /tmp")
    await ws.close()
    await asyncio.sleep(0.1)
    ws = await agent(b, **{"X-OH-Shell": "cli"})
    obs = await ask(ws, "run", command='echo "[$KEPT]"; pwd')
    assert obs["content"] == "[1]\n/tmp\n"
    await ws.close()
    ws = await agent(b)  # private: a fresh shell
    obs = await ask(ws, "run", command='echo "[$KEPT]"')
    assert obs["content"] == "[]\n"
    await ws.close()


async def test_allowed_roots_everywhere(make_backend, workspace, tmp_path, oh_home):
    extra = tmp_path / "scratch"
    extra.mkdir()
    (extra / "s.txt").write_text("scratch\n")
    b = await make_backend("local", allowed_roots=[str(extra)])
    assert b.status()["allowed_roots"] == [str(workspace), str(extra)]
    from oh import sessions

    assert sessions.list_sessions()[0].allowed_roots == [str(workspace), str(extra)]
    ws = await agent(b, **{"X-OH-Workdir": str(extra)})
    obs = await ask(ws, "read", path="s.txt")
    assert obs["content"] == "scratch\n"
    obs = await ask(ws, "read", path=str(tmp_path / "other.txt"))
    assert obs["extras"]["error_id"] == "PATH_DENIED"
    await ws.close()


@pytest.mark.parametrize("roots", [["/"], ["relative"], ["/definitely/not/here"]])
async def test_bad_allowed_roots_refuse_to_start(workspace, roots):
    from oh.backend.server import Backend, BackendConfig

    with pytest.raises(ValueError) as exc:
        Backend(BackendConfig(workspace=str(workspace), allowed_roots=roots, write_session=False), TOKEN)
    assert roots[0] in str(exc.value)


async def test_security_risk_reaches_monitors_and_trace_env_values_never(make_backend, workspace, oh_home):
    b = await make_backend("local")
    secret = "sk-live-" + "q" * 20
    async with connect(url(b) + "/v1/monitor", additional_headers={"Authorization": f"Bearer {TOKEN}"}) as mon:
        await mon.recv()  # snapshot
        ws = await agent(b)
        await ws.send(
            json.dumps(
                {
                    "id": 1,
                    "action": "run",
                    "args": {"command": 'echo "${API_KEY:+set}"', "env": {"API_KEY": secret}},
                    "security_risk": "HIGH",
                }
            )
        )
        obs = json.loads(await ws.recv())
        assert obs["content"] == "set\n"
        await ws.send(
            json.dumps({"id": 2, "action": "run", "args": {"command": "true"}, "security_risk": 1})
        )  # V0's int enum
        json.loads(await ws.recv())
        events = []
        while sum(e["event"] == "action_finished" for e in events) < 2:
            events.append(json.loads(await asyncio.wait_for(mon.recv(), 5)))
        await ws.close()
    started = [e for e in events if e["event"] == "action_started"]
    finished = [e for e in events if e["event"] == "action_finished"]
    assert [e["security_risk"] for e in started] == ["HIGH", "MEDIUM"]
    assert [e["security_risk"] for e in finished] == ["HIGH", "MEDIUM"]
    assert secret not in json.dumps(events)
    b.trace.flush()
    trace = (oh_home / "traces" / "t.jsonl").read_text()
    assert secret not in trace
    req = [json.loads(line) for line in trace.splitlines() if json.loads(line)["kind"] == "request"]
    assert req[0]["security_risk"] == "HIGH" and req[0]["env_names"] == ["API_KEY"]


async def test_editor_leg_carries_the_agent_and_agent_gone(make_backend, workspace):
    sub = workspace / "sub"
    sub.mkdir()
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]) as ed:
        assert ed.answer["allowed_roots"] == [str(workspace)]
        private = await agent(b, **{"X-OH-Workdir": str(sub), "X-OH-Client": "claude"})
        shared = await agent(b, **{"X-OH-Shell": "cli"})
        await ask(private, "read", path="f.txt")
        await ask(private, "run", command="ls", cwd="..")
        await ask(shared, "run", command="ls")
        first, second, third = ed.received
        assert first["agent"] == {
            "id": first["agent"]["id"],
            "name": "claude",
            "workdir": str(sub),
            "shell": first["agent"]["id"],
        }
        assert first["args"]["path"] == str(sub / "f.txt")  # relative to the agent's workdir
        assert second["args"]["cwd"] == str(workspace)  # relative cwd resolved, never the window's folder
        assert third["agent"]["shell"] == "cli" and third["agent"]["workdir"] == str(workspace)
        obs = await ask(private, "run", command="ls", cwd="/etc")
        assert obs["extras"]["error_id"] == "PATH_DENIED" and len(ed.received) == 3
        await private.close()
        await shared.close()
        for _ in range(100):
            if ed.gone:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)
        assert ed.gone == [first["agent"]["id"]]  # the shared "cli" terminal stays


async def test_headless_editor_keeps_a_shell_per_agent_and_kills_it_on_agent_gone(make_backend, workspace, tmp_path):
    b = await make_backend("vscode")
    editor, task = await serve_headless(b, workspace)
    try:
        sub = workspace / "sub"
        sub.mkdir()
        one = await agent(b, **{"X-OH-Workdir": str(sub)})
        two = await agent(b)
        obs = await ask(one, "run", command="export MINE=1; pwd")
        assert obs["content"] == f"{sub}\n"
        obs = await ask(two, "run", command='echo "[$MINE]"; pwd')
        assert obs["content"] == f"[]\n{workspace}\n"
        obs = await ask(one, "run", command="sleep 30", timeout=0.3)
        pid = obs["extras"]["metadata"]["pid"]
        assert pid > 0 and obs["extras"]["metadata"]["username"]
        obs = await ask(one, "run", command="echo busy")  # its shell is busy: an extra shell runs it
        assert obs["content"] == "busy\n" and obs["extras"]["metadata"]["job_id"]
        assert len(editor.runtime._terminals) == 2
        await one.close()
        for _ in range(200):
            if len(editor.runtime._terminals) == 1:
                break
            await asyncio.sleep(0.02)
        assert len(editor.runtime._terminals) == 1  # agent_gone killed that agent's shell only
        obs = await ask(two, "run", command="echo still")
        assert obs["content"] == "still\n"
        await two.close()
    finally:
        await b.stop("test")
        await asyncio.wait_for(task, 10)


async def test_an_editor_on_the_root_folder_serves_and_relative_folders_are_refused(make_backend, workspace):
    b = await make_backend("vscode", editor_timeout=5)
    async with EchoEditor(b.port, b.editor_token, ["/"]) as ed:
        ws = await agent(b)
        obs = await ask(ws, "read", path="x.txt")
        assert obs["content"] == f"echo:{workspace / 'x.txt'}"  # served ("/" used to become "//")
        await ws.close()
    async with connect(url(b) + "/v1/editor", additional_headers={"Authorization": f"Bearer {b.editor_token}"}) as ed:
        await ed.send(json.dumps({"type": "register", "protocol": 1, "workspace_folders": ["."]}))
        answer = json.loads(await ed.recv())
        assert answer["error_id"] == "BAD_REQUEST" and "absolute" in answer["message"]


@pytest.mark.parametrize("runtime", ["local", "vscode"])
async def test_a_shared_shell_survives_its_agent_leaving_mid_command(make_backend, workspace, runtime):
    b = await make_backend(runtime)
    editor = task = None
    if runtime == "vscode":
        editor, task = await serve_headless(b, workspace)
    try:
        ws = await agent(b, **{"X-OH-Shell": "team"})
        await ask(ws, "run", command="export STATE=kept")
        await ws.send(
            json.dumps({"id": 999, "action": "run", "args": {"command": "sleep 30; echo late", "blocking": True}})
        )
        await asyncio.sleep(0.3)
        await ws.close()  # leaves while the command runs: the work stops, the shell stays
        ws = await agent(b, **{"X-OH-Shell": "team"})
        for _ in range(100):
            obs = await ask(ws, "run", command='echo "[$STATE]"')
            if obs["observation"] == "run":
                break
            assert obs["extras"]["error_id"] == "BUSY"
            await asyncio.sleep(0.05)
        assert obs["content"] == "[kept]\n"
        await ws.close()
    finally:
        if task is not None:
            await b.stop("test")
            await asyncio.wait_for(task, 10)


async def test_vscode_runtime_long_names_are_tool_errors(make_backend, workspace):
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]) as ed:
        ws = await agent(b)
        obs = await ask(ws, "read", path="d/" + "n" * 256)
        assert obs["extras"]["error_id"] == "TOOL_ERROR" and "File name too long" in obs["content"]
        assert ed.received == []
        await ws.close()
