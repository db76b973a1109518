"""Issue 30 (what a new user hits), items 1, 2, 6, 8, 11, 17, through real `oh` processes and real
backends; a real pty where a terminal matters."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.slow


def _in_process_table(pid: int) -> bool:
    """Also a zombie: `kill -0` and `ps` see it, so a script checking the pid sees it too."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# 17: "stopped" only once the backend's pid has left the process table
def test_oh_stop_returns_once_the_backend_pid_is_gone(oh):
    info = oh.start("local")
    oh("run", "--", "echo hi", check=0)
    p = oh("stop", check=0)
    assert "stopped" in p.stdout, p
    assert not _in_process_table(info["pid"]), "oh stop said stopped while the backend's pid still exists"
