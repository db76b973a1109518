"""Issue 9 #4, #5, #6: agent text never drives the user's terminal, and the backend never outlives
the `oh start` that shows it (Ctrl-C, a closed terminal, a failed write)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from .conftest import pid_alive, wait_for
from .terminal import Term, assert_backend_gone, ctrl_c, hostile_in, read_until

pytestmark = pytest.mark.slow

# A command an agent might send: rich markup that is not valid ([/] closes nothing), a window-title
# OSC, clear-screen, a hyperlink in rich markup and a bidi override. Under the backend's 80-character
# summary limit so the whole text reaches the view.
EVIL = "echo '[/]' '\x1b]0;pwned\x07' '\x1b[2J' '[link=https://e.x]c[/link]' '\u202eabc'"
SHOWN = ("[/]", "\\x1b]0;pwned\\x07", "\\x1b[2J", "[link=https://e.x]c[/link]", "\\u202eabc")


def test_markup_and_escapes_in_the_live_view_are_shown_not_obeyed(oh):
    t = Term(oh, "--runtime", "local", cols=160, rows=30)
    try:
        info = t.session()
        t.see("no actions yet")
        oh("run", "--", EVIL, check=0)
        t.wait(lambda s: all(x in s for x in SHOWN), what="the escaped command")
        assert t.screen.title == "", "an agent set the window title"
        assert hostile_in(t.raw) == []
        # The view is not frozen: later actions still appear.
        oh("run", "--", "echo after-the-markup", check=0)
        t.see("echo after-the-markup")
        t.child.sendintr()
        assert t.finish() == 0
        assert_backend_gone(oh, info)
    finally:
        t.kill()


def test_plain_view_and_oh_logs_escape_agent_text(oh):
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "local"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "listening on" in proc.stdout.readline()
        oh.started.append(json.loads(next((oh.home / "sessions").glob("*.json")).read_text()))
        oh("run", "--", EVIL, check=0)
        seen = read_until(proc, lambda line: "→" in line)
        text = "".join(seen)
        assert "\x1b" not in text and "\u202e" not in text
        assert all(x in text for x in SHOWN), text
        assert ctrl_c(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    shown = oh("logs", check=0).stdout
    assert "\x1b" not in shown and "\u202e" not in shown
    assert all(x in shown for x in SHOWN), shown
    raw = oh("logs", "--json", check=0).stdout
    assert "\x1b" not in raw and "\u202e" not in raw
    records = [json.loads(line) for line in raw.splitlines()]
    assert any(r.get("summary") == EVIL for r in records), "--json must keep the exact text (JSON-escaped)"


def test_closing_the_terminal_stops_the_backend(oh):
    """The pty master goes away (terminal window closed): the kernel hangs up the launcher and its
    writes fail with EIO. The backend must stop and its session file go."""
    t = Term(oh, "--runtime", "local")
    try:
        info = t.session()
        t.see("no actions yet")
        t.child.ptyproc.fileobj.close()  # the terminal emulator is gone
        t.child.ptyproc.closed = True
        assert_backend_gone(oh, info, timeout=30)
        wait_for(lambda: os.waitpid(t.child.pid, os.WNOHANG)[0] != 0, 30, what="the launcher to exit")
    finally:
        t.kill()


def test_sighup_stops_the_backend(oh):
    t = Term(oh, "--runtime", "local")
    try:
        info = t.session()
        t.see("no actions yet")
        t.child.kill(signal.SIGHUP)
        assert t.finish() == 0
        assert_backend_gone(oh, info)
    finally:
        t.kill()


def test_a_closed_terminal_stops_the_backend_and_exits_0(oh):
    """The terminal really goes away (its master side closed): the kernel sends SIGHUP and the view's last
    redraw meets EIO. That is the stop the SIGHUP asked for, exit 0 as `oh start --help` says, not a failed view."""
    t = Term(oh, "--runtime", "local")
    try:
        info = t.session()
        t.see("no actions yet")
        os.close(t.child.child_fd)
        t.eof = True
        assert t.child.wait() == 0
        assert_backend_gone(oh, info)
    finally:
        t.kill()


def test_a_failed_write_stops_the_backend_and_exits_1(oh):
    """Any exception that ends the view (here EPIPE: the reader of the plain lines went away) stops
    the backend first; the exit status says it did not end on request."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "local"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "listening on" in proc.stdout.readline()
        (sf,) = (oh.home / "sessions").glob("*.json")
        info = json.loads(sf.read_text())
        oh.started.append(info)
        # The start lines (sandbox, consent) are read before the pipe closes: were one of them still to
        # come, its write would fail before the run below connects, and the run would find no backend.
        start_lines: list[str] = []
        while len(start_lines) < 8 and not (start_lines and start_lines[-1].split(" ", 1)[-1].startswith("consent:")):
            start_lines.append(proc.stdout.readline())
        assert start_lines[-1].split(" ", 1)[-1].startswith("consent:"), start_lines
        proc.stdout.close()
        # The live view's next write fails: the agent's connect line, its start line or its end line. When it is
        # the start line, the backend stops while the command is in flight, and the run is answered
        # "the backend is shutting down" instead: both are this test's point, which is what the view does.
        ran = oh("run", "--", "echo nobody-reads-this")
        assert ran.returncode == 0 or "shutting down" in ran.stderr, (ran.returncode, ran.stderr)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 1, err
        assert f"backend {info['instance_id']} was stopped" in err
        assert "Traceback" not in err
        assert_backend_gone(oh, info)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_sighup_during_start_does_not_orphan_the_backend(oh):
    """A hang-up that lands while the backend is still starting is remembered, then acted on."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "local"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pid = wait_for(lambda: _backend_child(proc.pid), 20, interval=0.01, what="the backend process")
        oh.started.append({"pid": pid})
        proc.send_signal(signal.SIGHUP)
        proc.communicate(timeout=30)
        wait_for(lambda: not pid_alive(pid), 20, what="the backend to stop")
        assert list((oh.home / "sessions").glob("*.json")) == []
    finally:
        if proc.poll() is None:
            proc.kill()


def _backend_child(launcher_pid: int) -> int | None:
    import psutil

    try:
        kids = psutil.Process(launcher_pid).children()
    except psutil.NoSuchProcess:
        return None
    return next((k.pid for k in kids if "oh.backend" in " ".join(k.cmdline())), None)
