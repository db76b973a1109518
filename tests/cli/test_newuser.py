"""Issue 18 (C7-C17) through real `oh` processes: what a new user saw at 80×24 (a real pty read through
pyte), plain output without a TTY, exit statuses of `oh` itself, signals. In-process parts:
test_inprocess_newuser.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from oh.client.sync import SyncClient

from .terminal import Term, ctrl_c, read_until

pytestmark = pytest.mark.slow


def _client(info: dict, oh, name: str) -> SyncClient:
    return SyncClient.connect(info["url"], oh.session(info["instance_id"])["token"], name=name)


def _row(text: str, needle: str) -> str:
    found = [line for line in text.splitlines() if needle in line]
    assert found, f"no row with {needle!r}:\n{text}"
    return found[-1]


# C7 (hard and soft timeouts) and C14 (`oh run --wait` rows)
def test_timeouts_and_follow_ups_in_the_rich_view_at_80x24_and_in_oh_logs(oh):
    t = Term(oh, "--runtime", "local", cols=80, rows=24)
    try:
        info = t.session()
        t.see("no actions yet")
        p = oh("run", "--timeout", "1", "--", "sleep 30")
        assert p.returncode == 124 and "timed out after 1 seconds and was killed" in p.stderr, p
        t.see("timed out, killed")
        row = _row(t.text(), "sleep 30")
        assert "timed out, killed" in row and " 124 " in row, row
        with _client(info, oh, "agent") as c:
            first = c.run("sleep 2; echo done", timeout=1)  # soft: the command goes on
            assert first.exit_code == -1
            t.see("timed out, running")
            later = c.run("")  # the follow-up waits until it ends
            assert later.exit_code == 0 and "done" in later.content
        t.see("finished later")
        text = t.text()
        assert "finished later" in _row(text, " sleep 2; echo done")
        follow = _row(text, "wait for output")
        assert "wait for output: sleep 2" in follow and "ok" in follow and " 0 " in follow, follow
        assert all(len(line) <= 80 for line in text.splitlines())
        logs = oh("logs", info["instance_id"], check=0).stdout
        (killed,) = [line for line in logs.splitlines() if "sleep 30" in line and "result" in line]
        assert "→ timed out, killed  exit 124" in killed and "exit -1" not in killed, killed
        (soft,) = [line for line in logs.splitlines() if "sleep 2; echo done" in line and "result" in line and "wait" not in line]
        assert "→ timed out, running" in soft and "exit -1" not in soft, soft
        t.child.sendintr()
        assert t.finish() == 0
    finally:
        t.kill()


def test_a_killed_run_in_the_plain_view(oh):
    proc = subprocess.Popen([sys.executable, "-m", "oh", "start", "--runtime", "local"], cwd=oh.workspace, env=oh.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        read_until(proc, lambda line: "listening" in line or "backend" in line)
        p = oh("run", "--timeout", "1", "--", "sleep 30")
        assert p.returncode == 124, p
        lines = read_until(proc, lambda line: "sleep 30 →" in line)
        assert "→ timed out, killed exit 124 in" in lines[-1], lines[-1]
        assert ctrl_c(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# C8: a deleted session file
def test_a_backend_whose_session_file_was_deleted_is_found_again(oh):
    from .conftest import pid_alive, wait_for

    info = oh.start("local")
    sf = oh.session_file(info["instance_id"])
    sf.unlink()
    p = oh("start", "--detach", "--runtime", "local", timeout=40)  # at once: the session file may not be back yet
    assert p.returncode == 3 and f"instance {info['instance_id']} (pid {info['pid']}" in p.stderr, p
    wait_for(sf.exists, 10, what="the session file written again")
    status = oh.json("status", "--json")
    assert [b["instance_id"] for b in status["sessions"]] == [info["instance_id"]], status
    assert info["instance_id"] in oh("doctor").stdout
    p = oh("stop", "--all", check=0)
    assert info["instance_id"] in p.stdout and not pid_alive(info["pid"])
    assert not sf.exists()


# C17: exit codes and messages of `oh` itself
def test_bare_oh_is_a_usage_error_and_negative_values_are_values(oh):
    p = oh()
    assert p.returncode == 2 and p.stdout == "" and "Usage: oh [OPTIONS] COMMAND" in p.stderr and "Commands" in p.stderr
    p = oh("config", "set", "port", "-1")
    assert p.returncode == 2 and "port must be an integer from 0 to 65535 (got -1)" in p.stderr and "No such option" not in p.stderr, p
    p = oh("stop", "--all", "--workspace", str(oh.workspace))
    assert p.returncode == 2 and "--workspace and --all exclude each other" in p.stderr, p


# C16: a backend killed with kill -9, then `oh run` first
def test_status_tells_a_killed_backend_once_even_after_oh_run_cleaned_it(oh):
    import json
    import os
    import signal

    from .conftest import pid_alive, wait_for

    info = oh.start("local")
    os.kill(info["pid"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(info["pid"]), 10, what="the backend to die")
    p = oh("run", "--", "echo hi")
    assert p.returncode == 3, p  # no backend: the stale session file is cleaned here
    assert not oh.session_file(info["instance_id"]).exists()
    p = oh("status", "--json", check=3)
    assert [d["instance_id"] for d in json.loads(p.stdout)["died"]] == [info["instance_id"]]
    assert f"backend {info['instance_id']} (pid {info['pid']}" in p.stderr and "died" in p.stderr
    assert f"logs/{info['instance_id']}.log" in p.stderr
    again = oh("status", "--json", check=3)  # once
    assert json.loads(again.stdout) == {"sessions": []} and again.stderr == ""
    notes = [n.name for n in (oh.home / "sessions").iterdir() if n.name.endswith(".died")]
    assert notes == []
