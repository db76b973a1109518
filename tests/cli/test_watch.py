"""`oh watch`: the live view of a backend that already runs (README "The live view"). A real detached
backend, a real `oh watch` process in a real pseudo-terminal (read through pyte) or on pipes, real agents
(`oh run`). Leaving the view (q, Ctrl-C, SIGHUP) leaves the backend running; a backend that stops ends
the view with a message."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from .conftest import pid_alive, wait_for
from .terminal import Term, read_until
from .test_consent_cli import _finish
from .test_live_notes import NOTE, _said_before_any_view

LEAVES = "q or Ctrl-C leaves the view"


def _watch(oh, *args: str, cols: int = 120, rows: int = 30) -> Term:
    return Term(oh, cols=cols, rows=rows, argv=["-m", "oh", "watch", *args])


def _watch_piped(oh, *args: str, cwd=None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "oh", "watch", *args],
        cwd=cwd or oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _said(term: Term) -> str:
    """Everything the view wrote (the rich view's frames and its last words), spaces collapsed."""
    return " ".join(term.raw.split())


def _left_running(oh, info: dict, said: str | None) -> None:
    """The view said it left (``said``: what it wrote; None after a hang-up: nobody to tell) and the backend
    still runs: pid alive, session file there, `oh status` lists it."""
    iid = info["instance_id"]
    if said is not None:
        assert f"oh watch: left the view; backend {iid} keeps running — `oh stop {iid}` to stop it" in said, said[-400:]
    assert pid_alive(info["pid"]) and oh.session_file(iid).exists()
    listed = oh.json("status", "--json")["sessions"]
    assert [s["instance_id"] for s in listed] == [iid]


def test_watch_shows_an_action_run_after_it_attached_and_q_leaves(oh):
    info = oh.start("local")
    term = _watch(oh)
    try:
        term.see(LEAVES)  # the footer: what leaving does
        term.see(f"backend {info['instance_id']}")
        oh("run", "--", "echo watched-marker", check=0)
        term.wait(
            lambda text: any("echo watched-marker" in line and " ok " in line for line in text.splitlines()),
            what="the action's row, finished",
        )
        term.child.send("q")
        assert term.finish() == 0
        _left_running(oh, info, _said(term))
    finally:
        term.kill()


def test_the_leaving_words_wrap_between_words_at_80_columns(oh):
    """Walk 2: at 80 columns the terminal cut the last line, "`oh stop c02274500" / "d7d` to stop it", so the
    id to copy was in two pieces; it wraps between words now, as `oh start`'s warnings do (issue 30 item 13)."""
    info = oh.start("local")
    iid = info["instance_id"]
    term = _watch(oh, cols=80, rows=24)
    try:
        term.see(LEAVES)
        term.child.send("q")
        assert term.finish() == 0
        screen = term.text()
        said = f"oh watch: left the view; backend {iid} keeps running — `oh stop {iid}` to stop it"
        assert said in " ".join(screen.split()), screen
        words = [w for line in screen.splitlines() for w in line.split()]
        assert words.count(f"{iid}`") == 1 and all(len(line) < 80 for line in screen.splitlines()), screen
        _left_running(oh, info, None)
    finally:
        term.kill()


@pytest.mark.parametrize("how", ["ctrl-c", "sighup", "closed"])
def test_ctrl_c_or_a_closed_terminal_leaves_the_backend_running(oh, how):
    """Unlike the foreground `oh start` (tests/cli/test_terminal_safety.py::test_sighup_stops_the_backend,
    tests/cli/test_live_view.py::test_live_view_in_a_pty_waiting_connected_action_ctrl_c). "closed": the
    terminal really goes away (its master side closed): the kernel sends SIGHUP and the view's last redraw
    meets EIO; that is still leaving, exit 0."""
    info = oh.start("local")
    term = _watch(oh)
    try:
        term.see(LEAVES)
        if how == "ctrl-c":
            term.child.sendintr()
        elif how == "sighup":
            term.child.kill(signal.SIGHUP)
        else:
            os.close(term.child.child_fd)
            term.eof = True
            assert term.child.wait() == 0
        if how != "closed":
            assert term.finish() == 0
        _left_running(oh, info, _said(term) if how == "ctrl-c" else None)
        assert oh("run", "--", "echo still-serving", check=0).stdout == "still-serving\n"
    finally:
        term.kill()


def test_a_view_that_attaches_late_shows_the_shell_notes(oh):
    """The note was said while no view watched (a slow rc gave the clean shell): the snapshot carries it."""
    info = _said_before_any_view(oh)
    term = _watch(oh, cols=80, rows=30)
    try:
        term.see(LEAVES)
        term.wait(lambda text: NOTE in " ".join(text.split()), what="the shell's note")
        assert "echo up" in term.text()  # and the action that ran before it came
        term.child.sendintr()
        assert term.finish() == 0
        assert pid_alive(info["pid"])
    finally:
        term.kill()


@pytest.mark.parametrize("how", ["oh stop", "killed"])
def test_the_view_ends_when_the_backend_stops(oh, how):
    """Exit codes as the foreground view's: 0 when the backend shut down cleanly, 1 when it died."""
    info = oh.start("local")
    term = _watch(oh)
    try:
        term.see(LEAVES)
        if how == "oh stop":
            oh("stop", check=0)
        else:
            os.kill(info["pid"], signal.SIGKILL)
        code = term.finish()
        said = _said(term)
        assert f"backend {info['instance_id']} ended: " in said, said
        assert code == (0 if how == "oh stop" else 1), said
        if how == "killed":
            assert f"logs/{info['instance_id']}.log" in said  # where to look
        assert "left the view" not in said
    finally:
        term.kill()


def test_json_mode_emits_ndjson_events(oh):
    info = oh.start("local")
    proc = _watch_piped(oh, "--json")
    try:
        snapshot = json.loads(proc.stdout.readline())
        assert snapshot["type"] == "snapshot" and snapshot["instance_id"] == info["instance_id"]
        assert "token" not in snapshot and "decider_token" not in snapshot
        oh("run", "--", "exit 3", check=3)
        events = [json.loads(line) for line in read_until(proc, lambda line: '"action_finished"' in line)]
        finished = events[-1]
        assert (finished["type"], finished["kind"], finished["exit_code"], finished["summary"]) == (
            "event",
            "run",
            3,
            "exit 3",
        )
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        last = json.loads(out.strip().splitlines()[-1])
        assert last["event"] == "view_left" and last["instance_id"] == info["instance_id"]
        _left_running(oh, info, last["message"])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)


def test_which_backend_none_one_several(oh, tmp_path):
    """None: exit 3 saying what to do. Several and none serves the cwd: exit 2 listing them. The one serving
    the cwd is chosen among several; INSTANCE (a prefix) picks any."""
    p = oh("watch", check=3)
    assert "no backend is running" in p.stderr and "oh start -d" in p.stderr
    other = tmp_path / "other"
    other.mkdir()
    first, second = oh.start("local"), oh.start("local", other)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    p = oh("watch", cwd=outside, check=2)
    assert "2 backends are running" in p.stderr, p.stderr
    for info in (first, second):
        assert info["instance_id"] in p.stderr and info["workspace"] in p.stderr
    for cwd, args, want in ((other, (), second), (outside, (first["instance_id"][:6],), first)):
        proc = _watch_piped(oh, "--json", *args, cwd=cwd)
        try:
            assert json.loads(proc.stdout.readline())["instance_id"] == want["instance_id"]
        finally:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=30)
    assert oh("watch", "nosuchid", check=3).stderr.startswith("oh: no running backend with instance id")


def test_consent_keys_answer_with_the_rights_of_oh_approve(oh):
    """y allows and n rejects the oldest waiting action, sent as `oh approve` sends it (the session file's
    decider credential): the rejection names this view."""
    oh.start("local", None, "--consent", "commands")
    term = _watch(oh)
    try:
        term.see(LEAVES)
        agent = oh.agent("run", "touch by-watch.txt")
        term.wait(lambda text: "wants to run touch by-watch.txt" in text and "y allow" in text, what="the question")
        assert not (oh.workspace / "by-watch.txt").exists()
        term.child.send("y")
        assert _finish(agent)[0] == 0 and (oh.workspace / "by-watch.txt").exists()
        wait_for(lambda: oh.json("approvals", "--json")["approvals"] == [] or None, 10, what="nothing waits")

        agent = oh.agent("run", "touch not-by-watch.txt")
        term.wait(lambda text: "wants to run touch not-by-watch.txt" in text, what="the second question")
        term.child.send("n")
        rc, out, err = _finish(agent)
        assert rc != 0 and "REJECTED" in out + err and "rejected in the live view of oh watch" in out + err
        assert not (oh.workspace / "not-by-watch.txt").exists()
        term.child.send("q")
        assert term.finish() == 0
    finally:
        term.kill()


def test_plain_lines_on_a_terminal_and_q_leaves(oh):
    """--plain on a terminal: timestamped lines (no full-screen frames); q still leaves (stdin is the terminal)."""
    info = oh.start("local")
    term = _watch(oh, "--plain")
    try:
        term.see(f"backend {info['instance_id']} listening on")
        oh("run", "--", "echo plain-watched", check=0)
        term.see("echo plain-watched → ok exit 0")
        assert "\x1b[?25l" not in term.raw  # rich's hidden cursor: no live display here
        term.child.send("q")
        assert term.finish() == 0
        _left_running(oh, info, _said(term))
    finally:
        term.kill()
