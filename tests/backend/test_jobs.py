"""Issue 11 through the backend (docs/protocol.md §3.8-§3.10, §4, §5): concurrent runs on one
connection in both runtimes, jobs on the editor leg (routing, LOST when the editor process dies,
capabilities), monitor events, the trace, repetition control. Real backends, sockets, bash, and a
real headless editor process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from websockets.asyncio.client import connect

from .conftest import TOKEN
from .peers import EchoEditor, serve_headless
from .test_agent_headers_roots_and_shells import agent, ask, url


async def _headless(b, workspace):
    # The editor's shells get the backend's max_shells (`oh attach` passes the user's setting the same way).
    return await serve_headless(b, workspace, max_shells=b.config.max_shells)


async def _fifty(ws) -> dict[int, dict]:
    for i in range(50):
        await ws.send(
            json.dumps({"id": 1000 + i, "action": "run", "args": {"command": f"echo n{i}; sleep 0.2; echo $SHARED"}})
        )
    answers = {}
    while len(answers) < 50:
        obs = json.loads(await asyncio.wait_for(ws.recv(), 60))
        answers[obs["cause"]] = obs
    return answers


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["local", "vscode"])
async def test_fifty_concurrent_runs_on_one_connection_all_execute(make_backend, workspace, runtime):
    b = await make_backend(runtime, max_shells=64)
    task = None
    if runtime == "vscode":
        _, task = await _headless(b, workspace)
    try:
        ws = await agent(b)
        await ask(ws, "run", command="export SHARED=s")
        answers = await _fifty(ws)
        for i in range(50):
            obs = answers[1000 + i]
            assert obs["observation"] == "run", obs
            assert obs["content"] == f"n{i}\ns\n" and obs["extras"]["metadata"]["exit_code"] == 0
        await ws.close()
    finally:
        if task is not None:
            await b.stop("test")
            await asyncio.wait_for(task, 10)


@pytest.mark.parametrize("runtime", ["local", "vscode"])
async def test_fifty_runs_with_the_default_max_shells_all_execute_in_turn(make_backend, workspace, runtime):
    """Issue 18 item 3: beyond max_shells (default 8) a run waits for a free shell instead of BUSY
    (before: 8 ran, 42 were BUSY). vscode: the headless editor (`oh attach`) with the default setting."""
    b = await make_backend(runtime)
    assert b.config.max_shells == 8
    task = None
    if runtime == "vscode":
        _, task = await _headless(b, workspace)
    try:
        ws = await agent(b)
        await ask(ws, "run", command="export SHARED=s")
        answers = await _fifty(ws)
        kinds = [o["observation"] if o["observation"] == "run" else o["extras"]["error_id"] for o in answers.values()]
        assert kinds == ["run"] * 50, kinds
        for i in range(50):
            obs = answers[1000 + i]
            assert obs["content"] == f"n{i}\ns\n" and obs["extras"]["metadata"]["exit_code"] == 0, obs
        waited = [o for o in answers.values() if "waited" in (o["extras"]["metadata"].get("prefix") or "")]
        assert waited, "8 shells cannot have run 50 commands of 0.2 s at once"
        await ws.close()
    finally:
        if task is not None:
            await b.stop("test")
            await asyncio.wait_for(task, 10)


async def _monitor(b):
    mon = await connect(url(b) + "/v1/monitor", additional_headers={"Authorization": f"Bearer {TOKEN}"})
    assert json.loads(await mon.recv())["type"] == "snapshot"
    return mon


async def _events(mon, name, n=1, timeout=10):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n:
        frame = json.loads(await asyncio.wait_for(mon.recv(), max(deadline - time.monotonic(), 0.01)))
        if frame.get("event") == name:
            got.append(frame)
    return got


@pytest.mark.parametrize("runtime", ["local", "vscode"])
async def test_job_lifecycle_through_the_backend_with_monitor_events_and_trace(
    make_backend, workspace, runtime, oh_home
):
    b = await make_backend(runtime)
    task = None
    if runtime == "vscode":
        _, task = await _headless(b, workspace)
    try:
        mon = await _monitor(b)
        ws = await agent(b, **{"X-OH-Shell": "team"})
        obs = await ask(ws, "run", command="echo hi; exit 4", background=True, env={"SECRET_X": "v3ryS3cret"})
        jid = obs["extras"]["metadata"]["job_id"]
        started = (await _events(mon, "job_started"))[0]
        assert started["job_id"] == jid and started["shell"] == "team" and "exit 4" in started["summary"]
        done = await ask(ws, "job", op="wait", job_id=jid, timeout=10)
        assert (
            done["observation"] == "job"
            and done["extras"]["job"]["state"] == "FAILED"
            and done["extras"]["job"]["exit_code"] == 4
        )
        assert done["content"] == "hi\n"
        finished = (await _events(mon, "job_finished"))[0]
        assert finished["job_id"] == jid and finished["state"] == "FAILED" and finished["exit_code"] == 4
        out = await ask(ws, "job", op="output", job_id=jid, offset=1)
        assert out["content"] == "i\n" and out["extras"]["next_offset"] == 3
        listed = await ask(ws, "job", op="list")
        assert [j["job_id"] for j in listed["extras"]["jobs"]] == [jid]
        other = await agent(b)  # another agent (private shell) does not see it
        assert (await ask(other, "job", op="poll", job_id=jid))["extras"]["error_id"] == "NO_JOB"
        await ws.close()
        await other.close()
        await mon.close()
        b.trace.flush()
        trace = (oh_home / "traces" / "t.jsonl").read_text()
        assert f'"job_id":"{jid}"' in trace and '"kind":"job_finished"' in trace
        assert "v3ryS3cret" not in trace
    finally:
        if task is not None:
            await b.stop("test")
            await asyncio.wait_for(task, 10)


@pytest.mark.slow
async def test_killing_the_editor_process_marks_its_jobs_lost_and_a_wait_returns(make_backend, workspace, oh_home):
    b = await make_backend("vscode", editor_timeout=5)
    env = dict(os.environ)
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "attach", "--workspace", str(workspace), "--once"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        for _ in range(200):
            if b.registry.all():
                break
            await asyncio.sleep(0.05)
        assert b.registry.all(), "the headless editor did not register"
        mon = await _monitor(b)
        ws = await agent(b, **{"X-OH-Shell": "team"})
        obs = await ask(ws, "run", command="echo up; sleep 60", background=True)
        jid = obs["extras"]["metadata"]["job_id"]
        await ws.send(json.dumps({"id": 77, "action": "job", "args": {"op": "wait", "job_id": jid}, "timeout": 60}))
        await asyncio.sleep(0.5)
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGKILL)
        answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert time.monotonic() - t0 < 5
        assert answer["cause"] == 77 and answer["observation"] == "job" and answer["extras"]["job"]["state"] == "LOST"
        lost = [e for e in await _events(mon, "job_finished") if e["job_id"] == jid]
        assert lost and lost[0]["state"] == "LOST"
        polled = await ask(ws, "job", op="poll", job_id=jid)
        assert polled["extras"]["job"]["state"] == "LOST" and "editor disconnected" in polled["content"]
        listed = await ask(ws, "job", op="list")  # no editor now: the backend's own records, at once
        assert [(j["job_id"], j["state"]) for j in listed["extras"]["jobs"]] == [(jid, "LOST")]
        await ws.close()
        await mon.close()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)


async def test_an_editor_without_the_capabilities_gets_no_job_ops(make_backend, workspace):
    b = await make_backend("vscode", editor_timeout=5)
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]) as ed:
        ws = await agent(b)
        for kind, args, cap in (
            ("job", {"op": "list"}, "job"),
            ("stat", {"path": "x"}, "stat"),
            ("run", {"command": "sleep 1", "background": True}, "job"),
            ("write", {"path": "x", "content": "y", "mode": "append"}, "write_modes"),
        ):
            obs = await ask(ws, kind, **args)
            assert obs["observation"] == "error" and obs["extras"]["error_id"] == "TOOL_UNSUPPORTED", obs
            assert kind in obs["content"] or cap in obs["content"]
        assert ed.received == []  # nothing reached the editor
        obs = await ask(ws, "write", path="x", content="y")  # plain writes still go
        assert obs["observation"] == "read" and len(ed.received) == 1
        await ws.close()


async def test_follow_ups_on_the_editor_leg_reach_the_command_they_name(make_backend, workspace):
    b = await make_backend("vscode")
    editor, task = await _headless(b, workspace)
    try:
        ws = await agent(b)
        a = await ask(ws, "run", command="read x; echo got-$x", timeout=0.3)
        bb = await ask(ws, "run", command="read y; echo other-$y", timeout=0.3)
        ja, jb = a["extras"]["metadata"]["job_id"], bb["extras"]["metadata"]["job_id"]
        assert ja != jb
        obs = await ask(ws, "run", command="first", is_input=True, job_id=ja, timeout=5)
        assert obs["content"] == "got-first\n" and obs["extras"]["metadata"]["exit_code"] == 0
        obs = await ask(ws, "run", command="second", is_input=True, timeout=5)
        assert "other-second" in obs["content"]
        await ws.close()
    finally:
        await b.stop("test")
        await asyncio.wait_for(task, 10)


@pytest.mark.parametrize("action", ["note", "skip"])
async def test_repetition_control(make_backend, workspace, action):
    b = await make_backend("local", repeat_limit=3, repeat_action=action)
    ws = await agent(b)
    for _ in range(2):
        obs = await ask(ws, "run", command="echo same")
        assert obs["observation"] == "run" and "times in a row" not in obs["extras"]["metadata"]["suffix"]
    third = await ask(ws, "run", command="echo same")
    if action == "note":
        assert third["content"] == "same\n" and "3 times in a row" in third["extras"]["metadata"]["suffix"]
    else:
        assert (
            third["observation"] == "error"
            and third["extras"]["error_id"] == "REPEATED"
            and "NOT run" in third["content"]
        )
    await ask(ws, "write", path="f.txt", content="x")  # another action ends the streak
    obs = await ask(ws, "run", command="echo same")
    assert obs["observation"] == "run" and "in a row" not in obs["extras"]["metadata"]["suffix"]
    await ws.close()


async def test_repetition_control_is_off_by_default(make_backend):
    b = await make_backend("local", repeat_limit=0)
    ws = await agent(b)
    for _ in range(4):
        obs = await ask(ws, "run", command="echo same")
        assert "in a row" not in obs["extras"]["metadata"]["suffix"]
    await ws.close()
