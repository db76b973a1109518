"""`oh run/read/write/edit/logs` through a real backend with the local runtime."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import wait_for


@pytest.fixture
def backend(oh):
    return oh.start("local")


def test_run_prints_output_and_exits_with_the_command_code(oh, backend):
    p = oh("run", "--", "echo", "hello world")  # several words: shell-quoted and joined
    assert p.returncode == 0 and p.stdout == "hello world\n"
    p = oh("run", "--", "echo out; echo err >&2; exit 42")  # one word: a shell command line
    assert p.returncode == 42 and "out" in p.stdout and "err" in p.stdout
    sub = oh.workspace / "sub"
    sub.mkdir()
    assert oh("run", "--", "pwd", cwd=sub, check=0).stdout.strip() == str(sub.resolve())
    obs = oh.json("run", "--json", "--", "printf x")
    assert obs["observation"] == "run" and obs["content"] == "x" and obs["extras"]["metadata"]["exit_code"] == 0


def test_run_timeout_exits_124(oh, backend):
    t0 = time.monotonic()
    p = oh("run", "--timeout", "1", "--", "sleep 20")
    assert p.returncode == 124 and "timed out" in p.stderr
    assert time.monotonic() - t0 < 15


def test_write_read_edit_roundtrip(oh, backend):
    oh("write", "notes.txt", "--content", "alpha\nbeta\n", check=0)
    assert (oh.workspace / "notes.txt").read_text() == "alpha\nbeta\n"
    oh("write", "piped.txt", input="from stdin\n", check=0)
    assert (oh.workspace / "piped.txt").read_text() == "from stdin\n"
    assert oh("read", "notes.txt", check=0).stdout == "alpha\nbeta\n"
    p = oh("edit", "notes.txt", "--replace", "beta", "gamma", check=0)
    assert "gamma" in p.stdout and (oh.workspace / "notes.txt").read_text() == "alpha\ngamma\n"
    oh("edit", "notes.txt", "--insert", "0", "top", check=0)
    assert (oh.workspace / "notes.txt").read_text().splitlines()[0] == "top"
    oh("edit", "notes.txt", "--undo", check=0)
    assert (oh.workspace / "notes.txt").read_text() == "alpha\ngamma\n"
    oh("edit", "new.py", "--create", "print(1)\n", check=0)
    assert (oh.workspace / "new.py").read_text() == "print(1)\n"
    view = oh("edit", "new.py", "--view", check=0).stdout
    assert "1\tprint(1)" in view


def test_error_observations_have_distinct_exit_codes(oh, backend):
    p = oh("read", "/etc/hostname")
    assert p.returncode == 6 and "PATH_DENIED" in p.stderr
    p = oh("edit", "notes.txt", "--create", "a", "--undo")
    assert p.returncode == 2 and "exactly one" in p.stderr
    oh("write", "dup.txt", "--content", "x\nx\n", check=0)
    p = oh("edit", "dup.txt", "--replace", "x", "y")
    assert p.returncode == 6 and "TOOL_ERROR" in p.stderr
    obs = oh.json("read", "--json", "/etc/hostname")
    assert obs["observation"] == "error" and obs["extras"]["error_id"] == "PATH_DENIED"


def test_no_backend_for_the_directory_exits_3(oh, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = oh("run", "--", "true", cwd=elsewhere)
    assert p.returncode == 3 and "no running backend serves" in p.stderr and "oh start" in p.stderr


def test_vscode_runtime_without_editor_exits_7(oh):
    oh.start("vscode", None, "--editor-timeout", "0.5")
    p = oh("run", "--", "true")
    assert p.returncode == 7 and "NO_EDITOR" in p.stderr


def test_logs_render_raw_and_follow(oh, backend):
    oh("run", "--", "echo logged", check=0)
    oh("read", "/etc/hostname")
    wait_for(
        lambda: (oh.home / "traces" / f"{backend['instance_id']}.jsonl").read_text().count("\n") >= 4,
        5,
        what="trace flush",
    )
    text = oh("logs", check=0).stdout
    assert "echo logged" in text and "exit 0" in text and "PATH_DENIED" in text
    raw = [json.loads(line) for line in oh("logs", "--json", "-n", "2", check=0).stdout.splitlines()]
    assert len(raw) == 2 and raw[-1]["kind"] == "error" and raw[-1]["outcome"] == "PATH_DENIED"
    assert oh("logs", backend["instance_id"][:5], "-n", "1", "--json", check=0).stdout.count("\n") == 1

    import subprocess
    import sys

    follower = subprocess.Popen(
        [sys.executable, "-m", "oh", "logs", "-f", "-n", "0"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.5)
        oh("run", "--", "echo followed", check=0)
        got = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any("followed" in g and "exit 0" in g for g in got):
            got.append(follower.stdout.readline())
        assert any("echo followed" in g and "exit 0" in g for g in got)
        oh("stop", check=0)
        follower.wait(10)  # follow ends when the backend stops
        assert "stopped" in follower.stderr.read()
    finally:
        if follower.poll() is None:
            follower.kill()
    # the trace outlives the backend
    assert "echo followed" in oh("logs", backend["instance_id"], check=0).stdout


def test_doctor_reports_sessions_and_token_storage(oh, backend):
    report = oh.json("doctor", "--json")
    by = {c["check"]: c for c in report["checks"]}
    assert by["token"]["storage"] == "file" and "no usable keyring" in by["token"]["detail"]
    s = by[f"session {backend['instance_id']}"]
    assert s["status"] == "ok" and s["picked"] is True and "contains the current directory" in s["detail"]
    assert by["dir sessions"]["mode"] == "0700"
    assert report["ok"] is True
    (oh.home / "sessions").chmod(0o755)
    p = oh("doctor")
    assert p.returncode == 1 and "chmod 700" in p.stdout
