"""Issue 30 leftovers in the live view: a view that subscribes after a shell note was said still shows it
(the monitor snapshot carries the notes, item 9), and the state lines at the top of the view wrap between
words at 80 columns instead of being cut, while a 200-column terminal gets whole summaries (item 13).
Real backends, real agent shells (a slow rc), real view processes on a pty read through pyte."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from oh.ui.live import LiveState

from .terminal import Term, read_until

pytestmark = pytest.mark.slow

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
    return info


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
