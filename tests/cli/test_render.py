"""Pure renderers: the live view's state machine and the trace renderer (no processes)."""

from __future__ import annotations

from rich.console import Console

from oh.commands.logs import render_record
from oh.ui.live import LiveState


def _ev(event, /, **kw):
    return {"type": "event", "event": event, "time": "2026-01-01T10:00:00+00:00", **kw}


def _text(state: LiveState) -> str:
    console = Console(width=160, record=True, color_system=None)
    console.print(state.render())
    return console.export_text()


def test_editor_state_waiting_connected_disconnected():
    st = LiveState(backend={"instance_id": "abc", "runtime": "vscode", "workspace": "/w", "pid": 1, "port": 9})
    lines = st.apply({"type": "snapshot", "instance_id": "abc", "runtime": "vscode", "workspace": "/w", "editors": [], "agents": [], "stats": {"done": 0, "pending": 0, "errors": 0}, "uptime_s": 5})
    assert st.editor_state == "waiting" and "waiting for VS Code to connect…" in lines
    assert "waiting for VS Code to connect" in _text(st)
    st.apply(_ev("editor_connected", editor={"editor_id": "e1", "name": "Visual Studio Code", "version": "1.99.3", "workspace_folders": ["/w"]}))
    assert st.editor_state == "connected"
    assert "editor connected: Visual Studio Code 1.99.3 (e1) — /w" in _text(st)
    lines = st.apply(_ev("editor_disconnected", editor_id="e1", reason="window closed"))
    assert st.editor_state == "disconnected" and "window closed" in lines[0]


def test_actions_table_rows_outcomes_and_stats():
    st = LiveState(backend={"instance_id": "abc", "runtime": "local"})
    st.apply(_ev("agent_connected", agent_id="a1", name="my-agent"))
    st.apply(_ev("action_started", agent_id="a1", action_id=1, kind="run", summary="pytest -q"))
    assert st.stats["pending"] == 1 and "running…" in _text(st)
    lines = st.apply(_ev("action_finished", agent_id="a1", action_id=1, kind="run", summary="pytest -q", outcome="ok", exit_code=1, duration_ms=1234.6))
    assert lines == ["my-agent run pytest -q → ok exit 1 in 1235 ms"]
    st.apply(_ev("action_finished", agent_id="a1", action_id=2, kind="read", summary="/etc/x", outcome="PATH_DENIED", exit_code=None, duration_ms=0.3))
    assert st.stats == {"done": 2, "pending": 0, "errors": 1}
    out = _text(st)
    assert "pytest -q" in out and "PATH_DENIED" in out and "my-agent" in out and "no sandbox" in out


def test_unknown_events_are_shown_not_dropped():
    st = LiveState(backend={"runtime": "local"})
    assert st.apply(_ev("something_new", detail=1)) == ['something_new: {"detail": 1}']


def test_trace_records_render_generically():
    rec = {"t": "2026-01-01T10:00:00.123+00:00", "kind": "result", "agent": "a1", "action": "run", "action_id": 7, "summary": "ls", "outcome": "ok", "exit_code": 0, "duration_ms": 3.2, "future_field": [1]}
    line = render_record(rec)
    for part in ("result", "a1", "run#7", "ls", "→ ok", "exit 0", "3.2 ms", 'future_field=[1]'):
        assert part in line
    assert render_record({"t": "x", "kind": "error", "error_id": "BAD_REQUEST", "message": "not JSON"}).endswith("BAD_REQUEST  — not JSON")
