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
    lines = st.apply(
        {
            "type": "snapshot",
            "instance_id": "abc",
            "runtime": "vscode",
            "workspace": "/w",
            "editors": [],
            "agents": [],
            "stats": {"done": 0, "pending": 0, "errors": 0},
            "uptime_s": 5,
        }
    )
    assert st.editor_state == "waiting" and "waiting for VS Code to connect…" in lines
    assert "waiting for VS Code to connect" in _text(st)
    st.apply(
        _ev(
            "editor_connected",
            editor={"editor_id": "e1", "name": "Visual Studio Code", "version": "1.99.3", "workspace_folders": ["/w"]},
        )
    )
    assert st.editor_state == "connected"
    assert "editor connected: Visual Studio Code 1.99.3 (e1) — /w" in _text(st)
    lines = st.apply(_ev("editor_disconnected", editor_id="e1", reason="window closed"))
    assert st.editor_state == "disconnected" and "window closed" in lines[0]


def test_actions_table_rows_outcomes_and_stats():
    st = LiveState(backend={"instance_id": "abc", "runtime": "local"})
    st.apply(_ev("agent_connected", agent_id="a1", name="my-agent"))
    st.apply(_ev("action_started", agent_id="a1", action_id=1, kind="run", summary="pytest -q"))
    assert st.stats["pending"] == 1 and "running…" in _text(st)
    lines = st.apply(
        _ev(
            "action_finished",
            agent_id="a1",
            action_id=1,
            kind="run",
            summary="pytest -q",
            outcome="ok",
            exit_code=1,
            duration_ms=1234.6,
        )
    )
    assert lines == ["my-agent run pytest -q → ok exit 1 in 1235 ms"]
    st.apply(
        _ev(
            "action_finished",
            agent_id="a1",
            action_id=2,
            kind="read",
            summary="/etc/x",
            outcome="PATH_DENIED",
            exit_code=None,
            duration_ms=0.3,
        )
    )
    assert st.stats == {"done": 2, "pending": 0, "errors": 1}
    out = _text(st)
    assert "pytest -q" in out and "PATH_DENIED" in out and "my-agent" in out and "no sandbox" in out


def test_a_shell_note_is_shown_escaped():
    st = LiveState(backend={"runtime": "local"})
    note = "Your bash rc files did not finish within 5 s.\x1b[2J The agent's shell is the clean shell."
    (line,) = st.apply(_ev("shell_note", note=note))
    assert line.startswith("shell: Your bash rc files did not finish within 5 s.") and "\x1b" not in line
    assert line.endswith("The agent's shell is the clean shell.")


def test_unknown_events_are_shown_not_dropped():
    st = LiveState(backend={"runtime": "local"})
    assert st.apply(_ev("something_new", detail=1)) == ['something_new: {"detail": 1}']


def test_trace_records_render_generically():
    rec = {
        "t": "2026-01-01T10:00:00.123+00:00",
        "kind": "result",
        "agent": "a1",
        "action": "run",
        "action_id": 7,
        "summary": "ls",
        "outcome": "ok",
        "exit_code": 0,
        "duration_ms": 3.2,
        "future_field": [1],
    }
    line = render_record(rec)
    for part in ("result", "a1", "run#7", "ls", "→ ok", "exit 0", "3.2 ms", "future_field=[1]"):
        assert part in line
    assert render_record({"t": "x", "kind": "error", "error_id": "BAD_REQUEST", "message": "not JSON"}).endswith(
        "BAD_REQUEST  — not JSON"
    )


def _ansi(state: LiveState, width: int = 160) -> str:
    console = Console(width=width, force_terminal=True, color_system="standard")
    with console.capture() as cap:
        console.print(state.render(40, width))
    return cap.get()


def test_security_risk_is_shown_and_high_is_red():
    st = LiveState(backend={"instance_id": "abc", "runtime": "local"})
    lines = st.apply(
        _ev("action_started", agent_id="a1", action_id=1, kind="run", summary="rm -rf build", security_risk="HIGH")
    )
    assert lines == ["a1 run rm -rf build [risk HIGH] …"]
    st.apply(_ev("action_started", agent_id="a1", action_id=2, kind="run", summary="ls", security_risk="low"))
    out = _ansi(st)
    assert "\x1b[1;31mHIGH" in out and "LOW" in out and "risk" in out
    # Without any risk given, there is no risk column at all.
    plain = LiveState(backend={"runtime": "local"})
    plain.apply(_ev("action_started", agent_id="a1", action_id=1, kind="run", summary="ls"))
    assert "risk" not in _text(plain)


def test_refused_and_soft_timed_out_runs():
    st = LiveState(backend={"runtime": "local"})
    st.apply(_ev("action_started", agent_id="a1", action_id=1, kind="run", summary="sleep 30"))
    lines = st.apply(
        _ev(
            "action_finished",
            agent_id="a1",
            action_id=1,
            kind="run",
            summary="sleep 30",
            outcome="ok",
            exit_code=-1,
            duration_ms=1000,
        )
    )
    assert lines == ["a1 run sleep 30 → still running in 1000 ms"]
    st.apply(_ev("action_started", agent_id="a1", action_id=2, kind="run", summary="echo 2"))
    st.apply(
        _ev(
            "action_finished",
            agent_id="a1",
            action_id=2,
            kind="run",
            summary="echo 2",
            outcome="BUSY",
            exit_code=None,
            duration_ms=1,
        )
    )
    assert st.stats == {"done": 2, "pending": 0, "errors": 1}
    out = _ansi(st)
    assert "\x1b[31mBUSY" in out and "\x1b[33mstill running" in out
    assert "1 error " in _text(st) and "1 errors" not in _text(st)


def test_agent_text_is_escaped_and_never_markup():
    st = LiveState(backend={"runtime": "local"})
    st.apply(_ev("agent_connected", agent_id="a1", name="[bold]x\x1b[2J"))
    lines = st.apply(
        _ev("action_started", agent_id="a1", action_id=1, kind="run", summary="grep -rn '[/]' . \x1b]0;t\x07\u202e")
    )
    assert lines == ["[bold]x\\x1b[2J run grep -rn '[/]' . \\x1b]0;t\\x07\\u202e …"]
    out = _text(st)  # would raise MarkupError if any of it were parsed as markup
    assert "[bold]x\\x1b[2J" in out and "\\x1b]0;t\\x07\\u202e" in out and "\x1b" not in out


def test_snapshot_counts_earlier_actions_as_hidden():
    st = LiveState(backend={"runtime": "local"})
    st.apply(
        {
            "type": "snapshot",
            "runtime": "local",
            "editors": [],
            "agents": [],
            "stats": {"done": 5, "pending": 1, "errors": 0},
        }
    )
    assert "6 earlier actions hidden" in _text(st)
    st.apply(
        _ev(
            "action_finished",
            agent_id="a1",
            action_id=9,
            kind="run",
            summary="x",
            outcome="ok",
            exit_code=0,
            duration_ms=1,
        )
    )
    assert st.stats["pending"] == 0 and "5 earlier actions hidden" in _text(st)


def test_visible_escapes_controls_and_format_characters():
    import json

    from oh.text.sanitize import json_visible, visible

    assert (
        visible("a\tb\nc\x1b\x9b\x7f\u200b\u2066\U000e0041 é ✓ 日本")
        == "a\\x09b\\x0ac\\x1b\\x9b\\x7f\\u200b\\u2066\\U000e0041 é ✓ 日本"
    )
    text = json.dumps({"s": "\x9b\u202e\U000e0041"}, ensure_ascii=False)
    assert json.loads(json_visible(text)) == json.loads(text) and "\u202e" not in json_visible(text)


def test_status_text_escapes_agent_and_editor_names_and_says_error_singular():
    from oh.commands.status import render_text

    row = {
        "instance_id": "abc",
        "runtime": "vscode",
        "url": "ws://127.0.0.1:1",
        "pid": 1,
        "uptime_s": 1,
        "workspace": "/w",
        "reachable": True,
        "token_fingerprint": "f",
        "stats": {"done": 1, "pending": 0, "errors": 1},
        "editors": [{"name": "Code\x1b]0;x\x07", "workspace_folders": ["/w"]}],
        "agents": [{"name": "a\x1b[2J[b]"}],
    }
    text = render_text([row], [{"instance_id": "old", "pid": 2, "workspace": "/v", "log": "/l/old.log"}])
    assert "\x1b" not in text and "Code\\x1b]0;x\\x07" in text and "a\\x1b[2J[b]" in text
    assert "1 error" in text and "1 errors" not in text and "old died" in text and "/l/old.log" in text


def test_version_problems_are_drawn_under_the_editor_line():
    """Issue 20: a refused editor (red) and a connected one of another release (yellow), each with its fix."""
    st = LiveState(backend={"instance_id": "abc", "runtime": "vscode", "workspace": "/w", "pid": 1, "port": 9})
    st.apply(
        {
            "type": "snapshot",
            "instance_id": "abc",
            "runtime": "vscode",
            "workspace": "/w",
            "editors": [],
            "agents": [],
            "stats": {"done": 0, "pending": 0, "errors": 0},
            "uptime_s": 5,
            "editor_refused": {"message": "oh 0.1.0 is too old for the oh extension 9.0.0. Fix: Upgrade oh."},
        }
    )
    assert "editor refused: oh 0.1.0 is too old for the oh extension 9.0.0. Fix: Upgrade oh." in _text(st)
    lines = st.apply(
        _ev(
            "editor_connected",
            editor={
                "editor_id": "e1",
                "name": "Code",
                "version": "1",
                "extension_version": "0.0.1",
                "version_check": {
                    "status": "warn",
                    "message": "different releases \x1b[31m.",
                    "fix": "Run `oh vscode install`.",
                },
            },
        )
    )
    assert (
        lines[1] == "extension version: different releases \\x1b[31m. Fix: Run `oh vscode install`."
    )  # escaped: editor-controlled text
    text = _text(st)
    assert (
        "extension version: different releases" in text and "editor refused" not in text
    )  # an editor got in: the refusal is old news
