"""Issue 30 leftovers in the live view: a view that subscribes after a shell note was said still shows it
(the monitor snapshot carries the notes, item 9), and the state lines at the top of the view wrap between
words at 80 columns instead of being cut, while a 200-column terminal gets whole summaries (item 13).
Real backends, real agent shells (a slow rc), real view processes on a pty read through pyte."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from oh.ui.live import LiveState
from waiting import poll_until

from .terminal import Term, read_until

SLOW_RC = {"SHELL": "/bin/bash", "OH_USER_SHELL": "1", "OH_SHELL_STARTUP_TIMEOUT": "1", "OH_SANDBOX": "off"}
NOTE = "shell: Your bash rc files did not finish within 1 s"

# The foreground view of `oh start`, attached to a backend that already runs (the case of a view that
# subscribes late: an agent that acts the moment the session file exists, or a reconnect).
VIEW = textwrap.dedent("""
    import sys
    from oh import sessions
    from oh.fastpath.streams import Streams
    from oh.ui.liveview import foreground
    session = sessions.read(sessions.path_for(sys.argv[1]))
    sys.exit(foreground(Streams.system(), session, "never", sys.argv[2], []))
""")


def _said_before_any_view(oh) -> dict:
    """A detached backend whose agent shell fell back to a clean shell (rc slower than 1 s): the note is
    said (on `oh run`'s stderr and to monitors) while no view is subscribed."""
    (oh.user_home / ".bashrc").write_text("sleep 30\n")
    oh.env.update(SLOW_RC)
    info = oh.start("local")
    p = oh("run", "--", "echo up")
    assert (p.returncode, p.stdout) == (0, "up\n") and "did not finish within 1 s" in p.stderr, p.stderr
    # `oh logs` (the trace, which has it too) says it as prose, not as a JSON-quoted field.
    logs = poll_until(lambda: (lambda t: t if "shell_note" in t else None)(oh("logs").stdout), 30, "the note")
    assert re.search(r" shell_note  — Your bash rc files did not finish within 1 s", logs), logs
    return info


@pytest.mark.slow
def test_a_view_that_subscribes_after_the_note_shows_it(oh):
    info = _said_before_any_view(oh)
    view = subprocess.Popen(
        [sys.executable, "-c", VIEW, info["instance_id"], "plain"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = read_until(view, lambda line: "echo up" in line)  # the snapshot's replay ends with the action
        notes = [line for line in lines if NOTE in line]
        assert len(notes) == 1 and "clean shell" in notes[0], lines
    finally:
        view.kill()
        view.communicate(timeout=30)

    # The rich view on a real terminal, at 80 columns: the note is on screen, wrapped, never cut.
    term = Term(oh, cols=80, rows=30, argv=["-c", VIEW, info["instance_id"], "rich"])
    try:
        term.see("Ctrl-C stops the backend")
        term.wait(lambda text: NOTE in " ".join(text.split()), what="the shell's note")
        assert all(len(line) <= 80 for line in term.text().splitlines())
        term.child.sendintr()  # the foreground view's rule: it stops the backend
        assert term.finish() == 0
    finally:
        term.kill()


def test_notes_in_the_snapshot_are_bounded_and_said_once():
    from oh.backend.history import SHELL_NOTES, MonitorHistory

    history = MonitorHistory()
    for i in range(SHELL_NOTES + 3):
        history.note("shell_note", {"note": f"note {i}"})
    history.note("shell_note", {"note": "note 4"})  # said again: the newest, listed once
    kept = history.shell_notes()
    assert kept == [f"note {i}" for i in (3, 5, 6, 7, 4)], kept

    state = LiveState(backend={"instance_id": "x", "runtime": "local"})
    first = state.apply({"type": "snapshot", "instance_id": "x", "runtime": "local", "shell_notes": kept})
    assert [line for line in first if line.startswith("shell: ")] == [f"shell: {n}" for n in kept]
    assert "shell_notes" not in state.backend
    # A reconnect (token rotation) gets the same notes again: none is said twice.
    again = state.apply({"type": "snapshot", "instance_id": "x", "runtime": "local", "shell_notes": [*kept, "new"]})
    assert [line for line in again if line.startswith("shell: ")] == ["shell: new"], again


def _header(term: Term) -> list[str]:
    lines = term.text().splitlines()
    return lines[: next(i for i, line in enumerate(lines) if line.startswith("time "))]


def _no_word_cut(lines: list[str]) -> None:
    assert not [line for line in lines if "…" in line], lines  # nothing is cut with an ellipsis


@pytest.mark.slow
@pytest.mark.parametrize("cols", [80, 200])
def test_state_lines_wrap_between_words_and_summaries_use_the_width(oh, cols):
    """The sandbox line (and the others above the table) at 80 columns: whole words on as many lines as
    they need; at 200 columns a long command and a background job's command use the width."""
    term = Term(oh, "--runtime", "local", "--no-open", cols=cols, rows=40)
    try:
        term.session()
        term.see("Ctrl-C stops the backend")
        words = " ".join(f"word{i}" for i in range(30))
        assert oh("run", "--", f"echo {words}").returncode == 0
        job = oh("run", "--background", "--", f"sleep 60; echo {words}").stdout.strip()
        term.wait(lambda text: job in text and "RUNNING" in text, what="the job's row")
        header = _header(term)
        _no_word_cut(header)
        said = " ".join(" ".join(header).split())
        assert re.search(r"sandboxed: \S+ \([^)]*secrets hidden\)", said), header
        assert all(len(line) <= cols for line in term.text().splitlines())
        stats = [line for line in term.text().splitlines() if "done ·" in line or "Ctrl-C" in line]
        assert "Ctrl-C stops the backend" in " ".join(stats) and not any("…" in line for line in stats), stats
        if cols == 200:  # the summaries are cut at the width of the terminal, not at 80 characters
            rows = [line for line in term.text().splitlines() if "echo word0" in line]
            assert any("word15" in line for line in rows), rows  # past 80 characters
            (job_row,) = [line for line in term.text().splitlines() if job in line and "RUNNING" in line]
            assert "word15" in job_row, job_row
        oh("jobs", "cancel", job)
        term.child.sendintr()
        assert term.finish() == 0
    finally:
        term.kill()


def _render(state: LiveState, width: int, height: int = 40) -> list[str]:
    from rich.console import Console

    console = Console(width=width, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(state.render(height=height, width=width))
    return console.export_text().splitlines()


def test_every_state_line_of_a_busy_view_fits_80_columns_whole():
    """An editor's view with all its state lines long: a deep workspace with a branch, an editor with two
    folders and a version problem, a disconnect's reason, a waiting consent with its "why", the counts."""
    st = LiveState(backend={"instance_id": "abc", "runtime": "vscode", "pid": 1, "port": 5})
    ws = "/home/user/projects/a-rather-long-project-name/with/deeper/folders/inside/it/more"
    editor = {"editor_id": "e1", "name": "Visual Studio Code", "version": "1.95.3", "workspace_folders": [ws, "/o"]}
    st.apply(
        {
            "type": "snapshot",
            "instance_id": "abc",
            "runtime": "vscode",
            "workspace": ws,
            "trace": "/home/user/.local/state/oh/traces/abcdefabcdef.jsonl",
            "branch": {"state": "on", "name": "oh/agent-claude-code-2026-11-29"},
            "editors": [editor],
            "stats": {"done": 3, "pending": 0, "errors": 1},
        }
    )
    ask = {"id": "c1", "agent_id": "a1", "kind": "run", "what": "make all", "security_risk": "HIGH"}
    reason = "the consent level commands asks for every command; answer here or with oh approve"
    st.apply({"type": "event", "event": "approval_requested", **ask, "reason": reason, "always": ["run: make *"]})
    st.apply({"type": "event", "event": "job_started", "job_id": "j1", "agent_id": "a1", "summary": "sleep 9"})
    check = {"message": "the extension is 0.8.0 and oh is 0.9.0.", "fix": "run `oh vscode install`, reload"}
    st.apply({"type": "event", "event": "editor_connected", "editor": {**editor, "version_check": check}})
    connected = _render(st, 80)
    gone = "the window was closed by the user (websocket close code 1001, going away)"
    st.apply({"type": "event", "event": "editor_disconnected", "editor_id": "e1", "reason": gone})
    disconnected = _render(st, 80)
    for screen in (connected, disconnected):
        top = screen[: next(i for i, line in enumerate(screen) if line.startswith("time "))]
        cut = [line for line in top if "…" in line.replace("connect… (", "")]  # the spinner's own "…" is no cut
        assert all(len(line) <= 80 for line in screen) and not cut, screen
        said = " ".join(" ".join(screen).split())
        for whole in (f"workspace {ws} branch oh/agent-claude-code", reason, "Ctrl-C stops the backend"):
            assert whole.replace("/ ", "/") in said.replace("/ ", "/"), (whole, screen)
    assert "Fix: run `oh vscode install`, reload" in " ".join(" ".join(connected).split())
    assert gone in " ".join(" ".join(disconnected).split()), disconnected
    assert len(_render(st, 200)[1]) > 80, "at 200 columns the workspace line is one line"


def test_a_line_breaks_between_words_or_after_a_slash_and_folds_only_a_longer_piece():
    from oh.ui.live import _breaks

    def lines(plain: str, width: int) -> list[str]:
        cuts = [0, *_breaks(plain, width), len(plain)]
        return [plain[a:b] for a, b in zip(cuts, cuts[1:])]

    assert lines("sandboxed: workspace-write (workspace writable)", 30) == [
        "sandboxed: workspace-write ",
        "(workspace writable)",
    ]
    assert lines("workspace /home/user/projects/deep", 24) == ["workspace /home/user/", "projects/deep"]
    assert lines("a " + "x" * 45 + " b", 20) == ["a ", "x" * 20, "x" * 20, "x" * 5 + " b"]
    assert lines("x" * 40 + " y", 20) == ["x" * 20, "x" * 20 + " ", "y"]
