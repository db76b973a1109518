"""A live view that subscribes late (docs/protocol.md §5): the monitor snapshot carries the running and
recently finished jobs and the recent actions' events, and the live view shows them. Pure LiveState
tests, a real monitor subscribing to a real backend after the work, and a real `oh start` whose agent
acts the moment the session file exists."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import textwrap

import pytest
from rich.console import Console
from websockets.sync.client import connect

from oh.ui.live import LiveState

from .terminal import read_until


def _text(state: LiveState, width: int = 160, height: int = 40) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(state.render(height=height, width=width))
    return console.export_text()


def _ev(event, /, **kw):
    return {"type": "event", "event": event, "time": "2026-01-01T10:00:00+00:00", **kw}


def _snapshot(**kw):
    base = {
        "type": "snapshot",
        "instance_id": "abc",
        "runtime": "local",
        "pid": 1,
        "port": 1,
        "workspace": "/w",
        "editors": [],
        "agents": [{"agent_id": "a1", "name": "fast-agent"}],
        "stats": {"done": 2, "pending": 1, "errors": 1},
    }
    return {**base, **kw}


def test_the_snapshot_gives_rows_to_recent_actions_and_jobs_once():
    recent = [
        _ev("action_started", agent_id="a1", action_id=1, kind="run", summary="echo first", security_risk=None),
        _ev(
            "action_finished",
            agent_id="a1",
            action_id=1,
            kind="run",
            summary="echo first",
            outcome="ok",
            exit_code=0,
            duration_ms=3.0,
        ),
        _ev("action_started", agent_id="a1", action_id=2, kind="read", summary="a.py", security_risk="LOW"),
        _ev(
            "action_finished",
            agent_id="a1",
            action_id=2,
            kind="read",
            summary="a.py",
            outcome="PATH_DENIED",
            exit_code=None,
            duration_ms=1.0,
        ),
        _ev("action_started", agent_id="a1", action_id=3, kind="run", summary="sleep 9", security_risk=None),
    ]
    jobs = [
        {
            "job_id": "j4",
            "agent_id": "a1",
            "shell": "s",
            "summary": "npm run dev",
            "cwd": "/w",
            "state": "RUNNING",
            "started": "2026-01-01T10:00:01+00:00",
        },
        {
            "job_id": "j5",
            "agent_id": "a1",
            "shell": "s",
            "summary": "make",
            "state": "FAILED",
            "exit_code": 2,
            "duration_ms": 1500.0,
            "started": None,
        },
    ]
    st = LiveState(backend={"instance_id": "abc"})
    lines = st.apply(_snapshot(recent=recent, jobs=jobs))
    assert "recent" not in st.backend and "jobs" not in st.backend
    assert "fast-agent run echo first → ok exit 0 in 3 ms" in lines, lines
    assert any(line.startswith("fast-agent read a.py [risk LOW] → PATH_DENIED") for line in lines), lines
    assert "fast-agent run sleep 9 …" in lines
    assert "job j4 running: fast-agent npm run dev (1 job running)" in lines
    assert any(line.startswith("job j5 FAILED exit 2 in 1500 ms: fast-agent make") for line in lines), lines
    assert st.stats == {"done": 2, "pending": 1, "errors": 1}, "the snapshot's counts, not the replay's"
    assert st.dropped == 0 and list(st.actions) == [1, 2, 3]
    out = _text(st)
    assert re.search(r"fast-agent\s+run\s+echo first\s+ok\s+0", out), out
    assert re.search(r"j4\s+npm run dev\s+RUNNING", out) and re.search(r"j5\s+make\s+FAILED\s+2", out), out

    # A reconnect (token rotation) sends a snapshot repeating what the view has: nothing twice.
    recent.append(
        _ev(
            "action_finished",
            agent_id="a1",
            action_id=3,
            kind="run",
            summary="sleep 9",
            outcome="ok",
            exit_code=0,
            duration_ms=9000,
        )
    )
    jobs[0] = {**jobs[0], "state": "SUCCEEDED", "exit_code": 0, "duration_ms": 2000.0}
    again = st.apply(_snapshot(recent=recent, jobs=jobs, stats={"done": 3, "pending": 0, "errors": 1}))
    assert [line for line in again if "echo first" in line or "a.py" in line] == [], again
    assert any(line.startswith("fast-agent run sleep 9 → ok exit 0 in ") for line in again) and any(
        line.startswith("job j4 SUCCEEDED exit 0") for line in again
    ), again
    assert not any("j5" in line for line in again)
    assert list(st.actions) == [1, 2, 3] and st.stats == {"done": 3, "pending": 0, "errors": 1} and st.running_jobs == 0


def test_a_snapshot_from_an_older_backend_or_with_bogus_entries_does_not_crash():
    st = LiveState(backend={"instance_id": "abc"})
    st.apply(_snapshot())  # no recent, no jobs: as before
    lines = st.apply(
        _snapshot(
            recent=["x", {"type": "event", "event": "action_finished"}, 3],
            jobs=[None, {"job_id": 5, "summary": "\x1b[2Jboom"}],
        )
    )
    assert all("\x1b" not in line for line in lines)
    assert "5" in st.jobs and st.stats["done"] == 2


def _monitor_snapshot(session: dict) -> dict:
    url = f"ws://{session['host']}:{session['port']}/v1/monitor"
    with connect(url, additional_headers={"Authorization": f"Bearer {session['token']}"}, open_timeout=10) as ws:
        return json.loads(ws.recv(timeout=10))


@pytest.mark.slow
def test_a_monitor_subscribing_after_the_work_sees_the_jobs_and_recent_actions(oh):
    info = oh.start("local")
    session = oh.session(info["instance_id"])
    server = oh("run", "--background", "--", "sleep 300", check=0).stdout.strip()
    quick = oh("run", "--background", "--", "echo quick; exit 3", check=0).stdout.strip()
    oh("jobs", "wait", quick, "--timeout", "60", check=3)
    oh("run", "--", "echo before-the-view", check=0)
    try:
        snap = _monitor_snapshot(session)
        by_id = {j["job_id"]: j for j in snap["jobs"]}
        assert (
            by_id[server]["state"] == "RUNNING" and by_id[server]["summary"] == "sleep 300" and by_id[server]["started"]
        )
        assert by_id[quick]["state"] == "FAILED" and by_id[quick]["exit_code"] == 3
        finished = [e for e in snap["recent"] if e["event"] == "action_finished"]
        assert any(e["summary"] == "echo before-the-view" and e["exit_code"] == 0 for e in finished), snap["recent"]
        assert all(e["type"] == "event" and e["time"] for e in snap["recent"])

        # The live view built from that snapshot shows them.
        st = LiveState(backend={"instance_id": info["instance_id"]})
        st.apply(snap)
        out = _text(st)
        assert re.search(rf"{server}\s+sleep 300\s+RUNNING", out) and re.search(
            rf"{quick}\s+echo quick; exit 3\s+FAILED\s+3", out
        ), out
        assert re.search(r"run\s+echo before-the-view\s+ok\s+0", out), out
        assert "1 job running" in out
    finally:
        oh("jobs", "cancel", server)


AGENT = textwrap.dedent("""
    import glob, json, os, sys, time
    from oh.client import SyncClient
    sessions = os.path.join(os.environ["OH_HOME"], "sessions")
    end = time.monotonic() + 60
    while not glob.glob(os.path.join(sessions, "*.json")):  # act the moment the backend is advertised
        if time.monotonic() > end:
            sys.exit("no session file")
        time.sleep(0.001)
    time.sleep(0.01)  # the rename is atomic, but give the writer its close()
    s = json.load(open(glob.glob(os.path.join(sessions, "*.json"))[0]))
    with SyncClient.connect(f"ws://{s['host']}:{s['port']}", s["token"], name="fast-agent", shell="fast") as c:
        job = c.run_background("sleep 300").job_id
        print(c.run("echo fast-first").content.strip(), job, flush=True)
""")


@pytest.mark.slow
def test_oh_start_shows_the_first_action_of_an_agent_faster_than_its_view(oh):
    agent = subprocess.Popen(
        [sys.executable, "-c", AGENT], env=oh.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "local"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = agent.communicate(timeout=90)
        assert agent.returncode == 0 and out.split()[0] == "fast-first", err
        job = out.split()[1]
        oh.started.append(json.loads(next((oh.home / "sessions").glob("*.json")).read_text()))
        job_line = re.compile(rf"job {job} (started|running): fast-agent sleep 300 \(1 job running\)")
        seen: list[str] = []

        def both(line: str) -> bool:
            seen.append(line)
            return any("echo fast-first →" in x for x in seen) and any(job_line.search(x) for x in seen)

        lines = read_until(proc, both)
        assert any(re.search(r"fast-agent run echo fast-first → ok exit 0 in ", x) for x in lines), lines
        # Its job still runs (its shell key outlives the agent): "started" live, or "running" from the snapshot.
        assert any(job_line.search(x) for x in lines), lines
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        assert proc.returncode == 0
    finally:
        for p in (agent, proc):
            if p.poll() is None:
                p.kill()
