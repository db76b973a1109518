"""Issue 30 (what a new user hits), items 1, 2, 6, 8, 11, 17, through real `oh` processes and real
backends; a real pty where a terminal matters."""

from __future__ import annotations

import json
import os
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
