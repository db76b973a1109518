"""Background jobs in the live view (monitor events `job_started` / `job_finished`, docs/protocol.md
§5): pure LiveState tests, plus one real `oh start` in a pseudo-terminal."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import pytest
from rich.console import Console

from oh.ui.live import MAX_JOBS, LiveState

from .terminal import Term, hostile_in, read_until


def _ev(event, /, **kw):
    return {"type": "event", "event": event, "time": "2026-01-01T10:00:00+00:00", **kw}


def _text(state: LiveState, width: int = 160, height: int = 40) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(state.render(height=height, width=width))
    return console.export_text()


def _state() -> LiveState:
    st = LiveState(backend={"instance_id": "abc", "runtime": "local"})
    st.apply(_ev("agent_connected", agent_id="a1", name="my-agent"))
    return st


def test_job_rows_go_from_running_to_their_final_state_with_counts():
    st = _state()
    lines = st.apply(_ev("job_started", job_id="j1", agent_id="a1", shell="s", summary="sleep 1; echo done", cwd="/w"))
    assert lines == ["job j1 started: my-agent sleep 1; echo done (1 job running)"]
    st.apply(_ev("job_started", job_id="j2", agent_id="a1", shell="s", summary="make test", cwd="/w"))
    assert st.running_jobs == 2
    out = _text(st)
    assert re.search(r"j1\s+sleep 1; echo done\s+RUNNING", out), out
    assert "background jobs · 2 running" in out and "2 jobs running" in out  # section title and footer
    lines = st.apply(
        _ev(
            "job_finished",
            job_id="j1",
            agent_id="a1",
            shell="s",
            summary="sleep 1; echo done",
            state="SUCCEEDED",
            exit_code=0,
            duration_ms=1012.4,
        )
    )
    assert lines == ["job j1 SUCCEEDED exit 0 in 1012 ms: my-agent sleep 1; echo done (1 job running)"]
    lines = st.apply(
        _ev(
            "job_finished",
            job_id="j2",
            agent_id="a1",
            summary="make test",
            state="FAILED",
            exit_code=2,
            duration_ms=20_500,
        )
    )
    assert lines == ["job j2 FAILED exit 2 in 20.5 s: my-agent make test (0 jobs running)"]
    out = _text(st)
    assert re.search(r"j1\s+sleep 1; echo done\s+SUCCEEDED\s+0\s+1012 ms", out), out
    assert re.search(r"j2\s+make test\s+FAILED\s+2\s+20.5 s", out), out
    assert "0 jobs running" in out
    assert st.stats == {"done": 0, "pending": 0, "errors": 0}  # jobs are not actions


def test_lost_and_cancelled_jobs_and_a_finish_without_a_start():
    st = _state()
    lines = st.apply(
        _ev(
            "job_finished",
            job_id="j9",
            agent_id="a1",
            summary="npm run watch",
            state="LOST",
            exit_code=None,
            duration_ms=None,
        )
    )
    assert lines == ["job j9 LOST: my-agent npm run watch (0 jobs running)"]
    st.apply(_ev("job_started", job_id="j10", agent_id="a1", summary="sleep 100"))
    st.apply(
        _ev(
            "job_finished",
            job_id="j10",
            agent_id="a1",
            summary="sleep 100",
            state="CANCELLED",
            exit_code=130,
            duration_ms=2000,
        )
    )
    out = _text(st)
    assert re.search(r"j9\s+npm run watch\s+LOST", out) and re.search(r"j10\s+sleep 100\s+CANCELLED\s+130", out), out
    assert list(st.jobs) == ["j9", "j10"]


def test_job_text_from_the_agent_is_escaped_and_bogus_fields_do_not_crash():
    st = _state()
    evil = "echo \x1b]0;pwned\x07 \u202e [bold]x[/bold]"
    lines = st.apply(_ev("job_started", job_id="j1\x1b[2J", agent_id="a1", summary=evil))
    assert "\x1b" not in lines[0] and "\u202e" not in lines[0] and "\\x1b" in lines[0]
    st.apply(
        _ev("job_finished", job_id="j1\x1b[2J", summary=evil, state="\x1b[31mweird", exit_code="0", duration_ms=True)
    )
    (row,) = st.jobs.values()
    assert row.exit_code is None and row.duration_ms is None and "\x1b" not in row.state
    console = Console(width=160, record=True, force_terminal=True, color_system="standard")
    console.print(st.render())
    raw = console.export_text(styles=True)
    assert hostile_in(raw) == [] and "[bold]x[/bold]" in raw  # escaped, and never read as markup


def test_jobs_at_80_columns_keep_state_exit_and_duration_whole():
    st = _state()
    st.apply(_ev("agent_connected", agent_id="a2", name="an-agent-with-a-long-name"))
    for i in range(12):
        st.apply(_ev("action_started", agent_id="a2", action_id=i, kind="run", summary="echo " + "long-arg " * 8))
        st.apply(
            _ev(
                "action_finished",
                agent_id="a2",
                action_id=i,
                kind="run",
                summary="echo",
                outcome="ok",
                exit_code=0,
                duration_ms=12,
            )
        )
    for i in range(12):
        st.apply(
            _ev("job_started", job_id=f"j{i}", agent_id="a2", summary="pytest -q " + "tests/some/long/path.py " * 4)
        )
        if i % 3:
            st.apply(
                _ev(
                    "job_finished",
                    job_id=f"j{i}",
                    agent_id="a2",
                    summary="x",
                    state="CANCELLED",
                    exit_code=130,
                    duration_ms=65_000,
                )
            )
    out = _text(st, width=80, height=24)
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), out
    assert len(lines) <= 24, out
    jobs = [line for line in lines if re.match(r"^\d\d:\d\d:\d\d .* j\d+ ", line)]
    assert jobs, out
    for line in jobs:
        assert re.search(r"(RUNNING|CANCELLED\s+130\s+65.0 s)$", line.rstrip()), line
    assert "RUNNING" in out and "4 jobs running" in out and "more (`oh jobs`)" in out
    assert "j11" in out  # the newest job is shown; running ones are kept over finished ones
    shown_running = sum("RUNNING" in line for line in jobs)
    assert shown_running == min(4, len(jobs)), out


def test_finished_jobs_are_evicted_before_running_ones():
    st = _state()
    st.apply(_ev("job_started", job_id="keep", agent_id="a1", summary="server"))
    for i in range(MAX_JOBS + 5):
        st.apply(
            _ev(
                "job_finished",
                job_id=f"f{i}",
                agent_id="a1",
                summary="x",
                state="SUCCEEDED",
                exit_code=0,
                duration_ms=1,
            )
        )
    assert len(st.jobs) == MAX_JOBS and "keep" in st.jobs and st.running_jobs == 1


@pytest.mark.slow
def test_oh_start_shows_a_background_job_running_then_succeeded_then_a_cancelled_one(oh):
    t = Term(oh, "--runtime", "local", cols=80, rows=24)
    try:
        t.session()
        t.see("no actions yet")
        p = oh("run", "--background", "--", "sleep 1; echo done")
        assert p.returncode == 0, p.stderr
        job = re.search(r"\bj\d+\b", p.stdout + p.stderr).group()
        row = re.compile(rf"^\d\d:\d\d:\d\d .*\b{job}\s+sleep 1; echo done\s+(\w+)", re.M)

        def state_is(want):
            return lambda text: any(m.group(1) == want for m in row.finditer(text))

        # RUNNING is on screen for the second the job sleeps (its row appears when job_started arrives).
        t.wait(state_is("RUNNING"), what=f"{job} RUNNING")
        assert "1 job running" in t.text()
        t.wait(state_is("SUCCEEDED"), what=f"{job} SUCCEEDED")
        assert "0 jobs running" in t.text()
        line = next(m.group(0) for m in row.finditer(t.text()))
        full = next(x for x in t.text().splitlines() if x.startswith(line))
        assert re.search(r"SUCCEEDED\s+0\s+\d+ ms$", full), full

        p = oh("run", "--background", "--", "sleep 300")
        assert p.returncode == 0, p.stderr
        other = re.search(r"\bj\d+\b", p.stdout + p.stderr).group()
        t.wait(lambda text: re.search(rf"\b{other}\s+sleep 300\s+RUNNING", text), what=f"{other} RUNNING")
        oh("jobs", "cancel", other, check=None)
        t.wait(lambda text: re.search(rf"\b{other}\s+sleep 300\s+CANCELLED", text), what=f"{other} CANCELLED")
        assert all(len(x) <= 80 for x in t.text().splitlines())
        t.child.sendintr()
        assert t.finish() == 0
    finally:
        t.kill()


def _spawn(oh, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "local", *args],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _track(oh) -> None:
    """The fixture stops this backend if the test fails before Ctrl-C does."""
    oh.started.append(json.loads(next((oh.home / "sessions").glob("*.json")).read_text()))


def _end(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    return out


@pytest.mark.slow
def test_plain_mode_prints_one_line_per_job_change_and_json_passes_the_events_through(oh):
    proc = _spawn(oh)
    try:
        assert "listening on" in proc.stdout.readline()
        _track(oh)
        p = oh("run", "--background", "--", "exit 4", check=0)
        job = re.search(r"\bj\d+\b", p.stdout + p.stderr).group()
        lines = read_until(proc, lambda line: f"job {job} FAILED" in line)
        assert any(f"job {job} started: " in line and "exit 4 (1 job running)" in line for line in lines), lines
        assert re.search(rf"job {job} FAILED exit 4 in \d+ ms: .*exit 4 \(0 jobs running\)$", lines[-1].rstrip()), (
            lines[-1]
        )
        _end(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    proc = _spawn(oh, "--json")
    try:
        assert json.loads(proc.stdout.readline())["event"] == "backend_started"
        _track(oh)
        p = oh("run", "--background", "--", "true", check=0)
        job = re.search(r"\bj\d+\b", p.stdout + p.stderr).group()
        events = [json.loads(line) for line in read_until(proc, lambda line: '"job_finished"' in line)]
        started = next(e for e in events if e.get("event") == "job_started")
        finished = events[-1]
        assert started["job_id"] == finished["job_id"] == job and started["summary"] == "true"
        assert (
            finished["state"] == "SUCCEEDED"
            and finished["exit_code"] == 0
            and isinstance(finished["duration_ms"], (int, float))
        )
        _end(proc)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_json_mode_announces_the_backend_only_once_its_monitor_is_subscribed(monkeypatch):
    """Issue 18 item 18, the cause of the flaky test above: `oh start --json` wrote `backend_started`
    before its monitor had subscribed, so a job run right after that line could start (and end) in
    between, and its `job_started` was in no frame the stream passed through (2 of 15 runs). Now
    `backend_started` (and the start-up warnings) come with the monitor's snapshot: whatever follows
    that line is in the stream. Also when the view ends before any snapshot, the line still comes first."""
    from types import SimpleNamespace

    from oh.commands._io import Streams
    from oh.ui.liveview import LiveView as _LiveView

    session = SimpleNamespace(
        instance_id="i1",
        runtime="local",
        public=lambda: {"instance_id": "i1", "runtime": "local", "url": "ws://127.0.0.1:1"},
    )
    io = Streams.buffers()
    view = _LiveView(io, session, "never", "json")
    view.announce([("w1", "a warning")])
    assert io.out.getvalue() == ""  # not before the subscription
    view.on_frame(
        {
            "type": "snapshot",
            "instance_id": "i1",
            "runtime": "local",
            "editors": [],
            "agents": [],
            "stats": {},
            "jobs": [],
            "recent": [],
        }
    )
    view.on_frame({"type": "event", "event": "job_started", "job_id": "j1", "summary": "true"})
    events = [json.loads(line) for line in io.out.getvalue().splitlines()]
    assert [e.get("event", e["type"]) for e in events] == ["backend_started", "warning", "snapshot", "job_started"]
    view.on_frame({"type": "snapshot", "instance_id": "i1", "runtime": "local"})  # a reconnect: no second announcement
    assert io.out.getvalue().count("backend_started") == 1

    import oh.launcher.process

    monkeypatch.setattr(oh.launcher.process, "wait_gone", lambda session, timeout: False)  # no process here
    io2 = Streams.buffers()
    early = _LiveView(io2, session, "never", "json")
    early.announce([])
    early.ended_on_its_own("backend shut down")
    events = [json.loads(line) for line in io2.out.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["backend_started", "backend_stopped"]


def _action(st: LiveState, aid: int, kind: str, summary: str, **done) -> list[str]:
    lines = st.apply(_ev("action_started", action_id=aid, agent_id="a1", kind=kind, summary=summary))
    return lines + st.apply(_ev("action_finished", action_id=aid, agent_id="a1", kind=kind, summary=summary, **done))


def test_looks_at_jobs_are_not_rows_and_a_background_start_says_started():
    """Issue 41: `oh jobs` calls showed as actions ("job job list"), a Ctrl-C'd `oh jobs output -f` as an error,
    and a background start as "still running" (exit -1)."""
    st = _state()
    for aid, summary, outcome in ((1, "job list", "ok"), (2, "job output j2", "INTERRUPTED"), (3, "job poll j2", "ok")):
        assert _action(st, aid, "job", summary, outcome=outcome, duration_ms=1.0) == [], summary
    assert st.stats == {"done": 0, "pending": 0, "errors": 0} and not st.actions
    lines = _action(st, 4, "job", "job wait j2", outcome="ok", duration_ms=3.0)  # what the agent does: shown
    assert lines[-1] == "my-agent job wait j2 → ok in 3 ms", lines
    lines = _action(st, 5, "run", "background: make", outcome="ok", exit_code=-1, job_id="j7", duration_ms=9.0)
    assert lines[-1] == "my-agent run background: make → started j7 in 9 ms", lines
    out = _text(st)
    assert "started j7" in out and "still running" not in out and "job job" not in out, out
    lines = _action(st, 6, "run", "sleep 99", outcome="ok", exit_code=-1, duration_ms=9.0)  # a soft timeout: as before
    assert lines[-1].endswith("→ still running in 9 ms"), lines


def test_oh_logs_shows_no_exit_code_for_a_background_start():
    from oh.commands.logview import render_record

    rec = {"t": "2026-01-01T10:00:00+00:00", "kind": "result", "agent": "a", "action": "run", "action_id": 3}
    line = render_record({**rec, "summary": "background: make", "outcome": "ok", "exit_code": -1, "duration_ms": 5})
    assert "exit" not in line and "→ ok" in line, line
    line = render_record({**rec, "summary": "make", "outcome": "ok", "exit_code": 2, "duration_ms": 5})
    assert "exit 2" in line, line
