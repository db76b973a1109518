"""Issue 30 (what a new user hits), items 1, 2, 6, 8, 11, 17, through real `oh` processes and real
backends; a real pty where a terminal matters."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from .conftest import wait_for

pytestmark = pytest.mark.slow


def _in_process_table(pid: int) -> bool:
    """Also a zombie: `kill -0` and `ps` see it, so a script checking the pid sees it too."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _running(oh, command: str) -> bool:
    """`oh jobs` lists running foreground commands of the `oh run` shell too."""
    p = oh("jobs", "--json")
    jobs = json.loads(p.stdout or "[]") if p.returncode == 0 else []
    jobs = jobs.get("jobs", []) if isinstance(jobs, dict) else jobs
    return any(command in (j.get("command") or "") and j.get("state") == "RUNNING" for j in jobs)


# 17: "stopped" only once the backend's pid has left the process table
def test_oh_stop_returns_once_the_backend_pid_is_gone(oh):
    info = oh.start("local")
    oh("run", "--", "echo hi", check=0)
    p = oh("stop", check=0)
    assert "stopped" in p.stdout, p
    assert not _in_process_table(info["pid"]), "oh stop said stopped while the backend's pid still exists"


# 6: input to a command another `oh run` waits for
def test_oh_run_input_to_a_command_another_oh_run_waits_for_exits_0(oh):
    oh.start("local")
    first = subprocess.Popen(
        [sys.executable, "-m", "oh", "run", "--", "read x; echo got $x"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The first `oh run` is attached once the backend lists its command as running.
        wait_for(lambda: _running(oh, "read x"), 15, what="the first oh run's command running")
        p = oh("run", "--input", "hello")
        assert p.returncode == 0, p
        assert "the command ended without an exit code" not in p.stderr, p
        out, err = first.communicate(timeout=20)
        assert first.returncode == 0 and "got hello" in out, (out, err)
    finally:
        if first.poll() is None:
            first.kill()


# 11: the action's timeout bounds the wait for an editor
def test_oh_run_timeout_bounds_the_wait_for_an_editor(oh):
    oh.start("vscode", None, "--editor-timeout", "120")
    # Without the bound this waits 120 s and the subprocess timeout (30 s) fails the test.
    p = oh("run", "--timeout", "2", "--", "true", timeout=30)
    assert p.returncode == 7, p  # NO_EDITOR
    assert "waited 2 s" in p.stderr, p.stderr
    assert "waiting up to 2 s for VS Code" in p.stderr, p.stderr


def _spawn_oh(oh, *args: str):
    import pexpect

    return pexpect.spawn(
        sys.executable,
        ["-m", "oh", *args],
        cwd=str(oh.workspace),
        env=dict(oh.env, TERM="xterm-256color"),
        dimensions=(24, 120),
        encoding="utf-8",
        codec_errors="replace",
        timeout=20,
    )


def _exit_status(child) -> int:
    import pexpect

    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


# The command prints two lines, then blocks until the test creates `go`: lines seen before that were streamed.
BLOCKING = "echo line1; echo line2; while [ ! -e go ]; do sleep 0.1; done; echo line3"


# 1: output as it comes on a terminal; what was printed stays on Ctrl-C
def test_oh_run_streams_on_a_terminal_and_keeps_the_output_on_ctrl_c(oh):
    oh.start("local")
    # Hostile sequences in the output (clear screen, window title, cursor moves) never reach the terminal.
    hostile = r"printf 'x\033[2Jy\033]0;T\007z\033[5;5Hw\033c\n'; "
    child = _spawn_oh(oh, "run", "--", hostile + BLOCKING)
    try:
        child.expect("line1")
        seen = child.before + child.after
        child.expect("line2")  # the command is still blocked: `go` does not exist
        assert not (oh.workspace / "go").exists()
        child.sendintr()
        assert _exit_status(child) == 130  # the loop got Ctrl-C, as in a terminal
        assert "line3" not in child.before
        assert "xyzw" in seen and "\x1b" not in seen, repr(seen)
    finally:
        child.terminate(force=True)
    # Nothing is left running in the `oh run` shell: the next command runs at once.
    assert oh("run", "--", "echo next", check=0).stdout == "next\n"


# 1: a command that ignores Ctrl-C goes on as a job: what it printed before and after is kept
def test_ctrl_c_on_a_command_that_ignores_it_says_how_to_reach_it(oh):
    oh.start("local")
    child = _spawn_oh(oh, "run", "--", "trap '' INT; " + BLOCKING)
    try:
        child.expect("line2")
        child.sendintr()
        child.expect(r"goes on as job (j\d+)")
        jid = child.match.group(1)
        assert _exit_status(child) == 130
    finally:
        child.terminate(force=True)
    listed = oh("jobs", "--json", check=0).stdout
    assert jid in listed and "RUNNING" in listed, listed
    (oh.workspace / "go").touch()
    p = oh("jobs", "wait", jid, check=0)  # the command ends after its client left: its output is kept
    out = oh("jobs", "output", jid, check=0).stdout
    assert "line1\nline2\nline3\n" in out, (p, out)


# 1: without a terminal (an agent reading `oh run`'s stdout) the output is the observation's, as before
def test_oh_run_without_a_terminal_prints_the_observation_once(oh):
    oh.start("local")
    p = oh("run", "--", "printf 'a\\rb\\n'; echo done", check=0)
    assert p.stdout == "b\ndone\n", p  # rendered as a terminal shows it, printed once


def _first_note(proc: subprocess.Popen) -> str:
    """The first stderr line while the action waits; bounded: without the note the action's own
    approval/review timeout (20 s) ends it and the line is its REJECTED/TIMEOUT error instead."""
    return proc.stderr.readline()


# 2: a waiting action says so at once, and how to answer
@pytest.mark.parametrize(
    ("args", "out"),
    [
        (("run", "--", "echo x"), "x\n"),
        (("run", "-b", "--", "true"), None),  # prints its job id once allowed
    ],
)
def test_an_action_waiting_for_consent_says_so_at_once(oh, args, out):
    oh.start("local", None, "--consent", "commands", "--approval-timeout", "20")
    proc = oh.agent(*args)
    try:
        note = _first_note(proc)
        assert "waiting for your consent: c1" in note and "oh approve c1" in note, note
        oh("approve", "c1", check=0)
        stdout, stderr = proc.communicate(timeout=20)
        assert proc.returncode == 0, (stdout, stderr)
        assert stdout == out if out is not None else stdout.startswith("j"), stdout
    finally:
        proc.kill()


def test_a_write_waiting_for_review_says_so_at_once(oh):
    oh.start("local", None, "--review", "--review-timeout", "20")
    proc = oh.agent("write", "f.txt", "--content", "hello\n")
    try:
        note = _first_note(proc)
        assert "waiting for your review: p1" in note and "oh review accept p1" in note, note
        oh("review", "accept", "p1", check=0)
        stdout, stderr = proc.communicate(timeout=20)
        assert proc.returncode == 0, (stdout, stderr)
        assert (oh.workspace / "f.txt").read_text() == "hello\n"
    finally:
        proc.kill()


# 8: `oh ensure` says what runs; --no-wait answers in commands; `oh jobs` lists the installs
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is needed (extension/e2e/setup.sh installs it)")
def test_oh_ensure_says_what_runs_and_its_jobs_are_listed(oh):
    from ensure_projects import node_project

    node_project(oh.workspace)
    # sandbox off: with it, an install asks to leave the sandbox (network) and waits for the user (tests/sandbox)
    oh.start("local", None, "--sandbox", "off")
    p = oh("ensure", "--no-wait", check=0)
    found = re.search(r"node: started (j\d+) \(`.*npm ci.*`\) — oh jobs wait \1", p.stdout)
    assert found, p
    jid = found.group(1)
    assert "args.job_id" not in p.stdout and "job action" not in p.stdout, p.stdout
    assert "running `" in p.stderr and f"as job {jid}" in p.stderr, p.stderr  # said when it started
    listed = oh("jobs", check=0).stdout
    assert jid in listed and "(ensure)" in listed, listed
    oh("jobs", "wait", jid, check=0)
    p = oh("ensure", "--force", check=0)  # waits: the start and the end of the install are said on stderr
    lines = p.stderr.splitlines()
    assert any("node:" in x and "running `" in x for x in lines), p.stderr
    assert any(x.startswith("oh: node: ready: ran `") for x in lines), p.stderr
