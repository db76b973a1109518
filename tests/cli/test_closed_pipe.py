"""A closed pipe ends every command quietly (issue 41: `oh approvals | head` ended in a BrokenPipe traceback).

Each command's output goes to a pipe whose reader takes one byte and closes it, as `| head -c1` does; the
command must end with no traceback on stderr (status 141, as a program killed by SIGPIPE, or its own status
when it had already written everything)."""

from __future__ import annotations

import subprocess
import sys

import pytest

NO_BACKEND = (
    ("doctor",),
    ("config", "list"),
    ("completions", "show", "bash"),
    ("--help",),
    ("run", "--help"),
    ("status", "--help"),
)
WITH_BACKEND = (
    ("run", "--", "seq 1 200000"),
    ("status",),
    ("approvals",),
    ("logs",),
    ("jobs",),
)


def _head_c1(oh, args: tuple[str, ...]) -> tuple[int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", *args],
        cwd=oh.workspace,
        env=dict(oh.env, COLUMNS="80"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(1)
    proc.stdout.close()  # the reader is gone: every later write of the command meets EPIPE
    err = proc.stderr.read().decode(errors="replace")
    return proc.wait(timeout=60), err


@pytest.mark.parametrize("args", NO_BACKEND, ids=lambda a: " ".join(a))
def test_a_closed_pipe_ends_a_command_quietly(oh, args):
    code, err = _head_c1(oh, args)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert code in (0, 1, 3, 141), (code, err)


@pytest.mark.slow
def test_a_closed_pipe_ends_the_agent_verbs_quietly(oh):
    oh.start("local")
    oh("run", "--", "true", check=0)  # something for logs and jobs to show
    for args in WITH_BACKEND:
        code, err = _head_c1(oh, args)
        assert "Traceback" not in err and "BrokenPipe" not in err, (args, err)
        assert code in (0, 141), (args, code, err)
