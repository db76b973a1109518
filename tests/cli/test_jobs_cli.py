"""Issue 11 from the shell: `oh run --background`, `oh jobs` (list, wait, output, cancel, poll),
`oh write --append/--create`, `oh stat`; encoding round trips through the CLI and the Python
client. Real `oh` processes against a real backend (local runtime, and vscode + `oh attach`)."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from .conftest import wait_for


@pytest.fixture
def backend(oh):
    return oh.start("local")


def _bg(oh, *cmd: str) -> str:
    p = oh("run", "--background", "--", *cmd, check=0)
    return p.stdout.strip()


def test_background_job_wait_output_and_list(oh, backend):
    jid = _bg(oh, "echo first; sleep 0.5; echo second; exit 5")
    assert jid.startswith("j")
    listed = oh.json("jobs", "--json")
    assert [j["job_id"] for j in listed] == [jid] and listed[0]["background"] is True
    p = oh("jobs", "wait", jid)
    assert p.returncode == 5 and p.stdout == "first\nsecond\n"
    p = oh("jobs", "output", jid, "--offset", "6", check=0)
    assert p.stdout == "second\n"
    obs = oh.json("jobs", "output", jid, "--json")
    assert obs["extras"]["next_offset"] == 13 and obs["extras"]["eof"] is True
    table = oh("jobs", check=0).stdout
    assert jid in table and "FAILED" in table and "exit 5" in table
    oh("run", "--", "echo unrelated", check=0)
    time.sleep(0.6)  # the trace is flushed every 0.25 s
    log = oh("logs", "--job", jid, "-n", "0", check=0).stdout
    assert "job_started" in log and "job_finished" in log and "unrelated" not in log
    assert all(jid in line for line in log.splitlines())


@pytest.mark.slow
def test_follow_prints_everything_until_the_job_ends(oh, backend):
    jid = _bg(oh, "for i in 1 2 3 4; do echo tick$i; sleep 0.3; done")
    p = oh("jobs", "output", jid, "-f", check=0)
    assert p.stdout == "tick1\ntick2\ntick3\ntick4\n"
    assert oh("jobs", "wait", jid).returncode == 0


@pytest.mark.slow
def test_same_job_is_not_started_twice_unless_forced_and_cancel(oh, backend):
    one = _bg(oh, "sleep 30")
    p = oh("run", "--background", "--", "sleep 30", check=0)
    assert p.stdout.strip() == one and "already running" in p.stderr
    forced = oh("run", "--background", "--force", "--", "sleep 30", check=0).stdout.strip()
    assert forced != one
    for jid in (one, forced):
        p = oh("jobs", "cancel", jid, check=0)
        assert "cancelled" in p.stdout
        assert oh("jobs", "wait", jid).returncode == 130
    assert oh("jobs", "wait", "j999").returncode == 6


def test_wait_timeout_exits_124_and_the_job_keeps_running(oh, backend):
    jid = _bg(oh, "echo started; sleep 60")
    p = oh("jobs", "wait", jid, "--timeout", "0.5")
    assert p.returncode == 124 and "still running" in p.stderr
    p = oh("jobs", "poll", jid, "--json", check=0)
    obs = json.loads(p.stdout)
    assert obs["extras"]["job"]["state"] == "RUNNING" and obs["content"] == "started\n"
    oh("jobs", "cancel", jid, check=0)


def test_write_append_create_and_stat(oh, backend):
    ws = oh.workspace
    p = oh("write", "notes/a.txt", "--create", "--content", "one\n", check=0)
    assert "created" in p.stdout
    p = oh("write", "notes/a.txt", "--create", "--content", "two\n", check=0)
    assert "already exists" in p.stdout
    oh("write", "notes/a.txt", "--append", "--content", "three\n", check=0)
    assert (ws / "notes/a.txt").read_text() == "one\nthree\n"
    info = oh.json("stat", "notes/a.txt", "--json")
    assert info["exists"] is True and info["type"] == "file" and info["size"] == 10 and info["encoding"] == "utf-8"
    assert oh("stat", "notes/missing").returncode == 1
    assert oh("stat", "notes", check=0).stdout.startswith(str(ws / "notes"))
    assert oh("write", "x", "--append", "--create", "--content", "y").returncode == 2


def test_legacy_encoding_round_trips_through_the_cli(oh, backend):
    ws = oh.workspace
    (ws / "latin.txt").write_bytes("naïve café\n".encode("latin-1") * 3)
    p = oh("read", "latin.txt", check=0)
    assert p.stdout.startswith("naïve café\n")
    oh("write", "latin.txt", "--content", "déjà vu\n", check=0)
    assert (ws / "latin.txt").read_bytes() == "déjà vu\n".encode("latin-1")  # kept its encoding
    (ws / "img.bin").write_bytes(b"\x89PNG\x00\x01\xff")
    p = oh("read", "img.bin")
    assert p.returncode == 6 and "base64" in p.stderr


def test_binary_and_encoding_round_trips_through_the_client(oh, backend):
    from oh.client import SyncClient

    ws = oh.workspace
    blob = bytes(range(256))
    with SyncClient.connect(backend["url"], _token(oh, backend)) as c:
        obs = c.write_file(str(ws / "b.bin"), base64.b64encode(blob).decode(), encoding="base64")
        assert obs.kind == "write"
        obs = c.send({"action": "read", "args": {"path": str(ws / "b.bin"), "encoding": "base64"}})
        assert base64.b64decode(obs.content) == blob and obs.extras["mime_type"] == "application/octet-stream"
        obs = c.write_file(str(ws / "c.txt"), "ÿes", encoding="latin-1")
        assert (ws / "c.txt").read_bytes() == b"\xffes"
        assert c.read(str(ws / "c.txt")).content == "ÿes"
        obs = c.write_file(str(ws / "c.txt"), " more", mode="append")
        assert (ws / "c.txt").read_bytes() == b"\xffes more"
        st = c.stat(str(ws / "c.txt"))
        assert st.kind == "stat" and st.extras["size"] == 8
        started = c.run_background("echo client-job")
        done = c.job_wait(started.job_id, timeout=10)
        assert done.job["state"] == "SUCCEEDED" and done.content == "client-job\n"
        assert c.job_output(started.job_id, offset=7).content == "job\n"
        assert [j["job_id"] for j in c.jobs().extras["jobs"]] == [started.job_id]


def _token(oh, info) -> str:
    return json.loads(oh.session_file(info["instance_id"]).read_text())["token"]


@pytest.mark.slow
def test_jobs_of_a_killed_editor_are_lost_and_wait_does_not_hang(oh):
    info = oh.start("vscode")
    attach = subprocess.Popen(
        [sys.executable, "-m", "oh", "attach", "--once"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: json.loads(oh("status", "--json", check=0).stdout)["sessions"][0].get("editors"), timeout=20)
        jid = _bg(oh, "sleep 60")
        waiter = subprocess.Popen(
            [sys.executable, "-m", "oh", "jobs", "wait", jid],
            cwd=oh.workspace,
            env=oh.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)
        os.kill(attach.pid, signal.SIGKILL)
        _, err = waiter.communicate(timeout=20)
        assert waiter.returncode == 6 and "LOST" in err
        listed = oh.json("jobs", "--json")  # no editor now: the backend answers with what it knows, at once
        assert [(j["job_id"], j["state"]) for j in listed] == [(jid, "LOST")]
    finally:
        if attach.poll() is None:
            attach.kill()
        attach.wait(5)
        oh("stop", info["instance_id"], check=0)


def test_group_options_reach_the_job_subcommands(oh, backend, tmp_path):
    """`oh jobs -C DIR wait ID` (options before the subcommand, which the fast path hands to typer) uses
    DIR's backend: from a directory no backend serves it must still find the job."""
    jid = _bg(oh, "echo grouped; exit 4")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = oh("jobs", "-C", str(oh.workspace), "wait", jid, cwd=elsewhere)
    assert p.returncode == 4 and p.stdout == "grouped\n", p.stderr
    p = oh("jobs", "-C", str(oh.workspace), "--json", "poll", jid, cwd=elsewhere, check=0)
    assert json.loads(p.stdout)["extras"]["job"]["job_id"] == jid
    p = oh("jobs", "wait", jid, cwd=elsewhere)
    assert p.returncode == 3  # without -C: no backend serves that directory
