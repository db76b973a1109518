"""The fast entry for the agent verbs (issue 8 §3): same output and exit codes as the typer CLI,
the same security on the wire, and a hand-over to typer for everything it does not handle."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time

import psutil
import pytest

SLOW = {"OH_NO_FASTPATH": "1"}


def _both(oh, *args, **kw):
    fast = oh(*args, **kw)
    slow = oh(*args, env=SLOW, **kw)
    return fast, slow


@pytest.mark.slow
def test_fast_and_full_cli_agree(oh):
    oh.start("local")
    (oh.workspace / "f.txt").write_text("one\ntwo\nthree\n")
    (oh.workspace / "sub").mkdir()
    cases = [
        ("run", "--", "echo", "a b", "it's"),
        ("run", "--", "echo out; echo err >&2; exit 3"),
        ("run", "--json", "--", "printf x"),
        ("run", "--wait"),
        ("run",),
        ("run", "--bogus", "--", "true"),
        ("run", "--timeout", "0", "--", "true"),
        ("read", "f.txt"),
        ("read", "--start", "1", "--end", "2", "f.txt"),
        ("read", "--start=1", "f.txt"),
        ("read", "--start", "5", "--end", "2", "f.txt"),
        ("read", "--start", "-1", "f.txt"),
        ("read", "--start", "abc", "f.txt"),
        ("read", "/etc/hostname"),
        ("read", "missing.txt"),
        ("read",),
        ("write", "w.txt", "--content", "abc"),
        ("write", "-q", "w.txt", "--content", "abc"),
        ("edit", "f.txt", "--view"),
        ("edit", "f.txt", "--view", "--undo"),
        ("edit", "f.txt", "--insert", "x", "y"),
        ("edit", "sub", "--view"),
    ]
    volatile = re.compile(r'"(timestamp|pid)": [^,\n]+')  # differ from one run to the next
    for args in cases:
        fast, slow = _both(oh, *args, cwd=oh.workspace / "sub")
        assert (fast.returncode, volatile.sub("", fast.stdout), fast.stderr) == (
            slow.returncode,
            volatile.sub("", slow.stdout),
            slow.stderr,
        ), args
    p = oh("read", "--start", "abc", "f.txt")
    assert p.returncode == 2 and "Input should be" not in p.stderr and "'abc' is not a whole number" in p.stderr


@pytest.mark.slow
def test_fast_and_full_cli_agree_on_jobs_and_file_checks(oh):
    """`oh run --background`, `oh write --append/--create`, `oh stat` and `oh jobs ...` on the fast path print
    and exit exactly as the typer commands do (both call oh.fastpath.jobs; the parsers and dispatch differ)."""
    oh.start("local")
    (oh.workspace / "f.txt").write_text("one\n")
    (oh.workspace / "sub").mkdir()
    sub = oh.workspace / "sub"
    running = oh("run", "--background", "--", "sleep 300", check=0, cwd=sub).stdout.strip()
    done = oh("run", "--background", "--", "echo done-out; exit 3", check=0, cwd=sub).stdout.strip()
    oh("jobs", "wait", done, "--timeout", "60", check=3)
    cases = [
        ("run", "--background", "--", "sleep 300"),  # already running: the same id, and a note on stderr
        ("run", "-b", "--json", "--", "sleep 300"),
        ("run", "--background"),
        ("run", "--background", "--bogus", "--", "true"),
        ("jobs",),
        ("jobs", "--json"),
        ("jobs", "poll", done),
        ("jobs", "poll", "--json", done),
        ("jobs", "poll", "j999"),
        ("jobs", "wait", done),
        ("jobs", "wait", "-q", done),
        ("jobs", "wait", "--json", done),
        ("jobs", "wait", running, "--timeout", "0.2"),
        ("jobs", "wait", running, "-t", "-1"),
        ("jobs", "wait"),
        ("jobs", "output", done),
        ("jobs", "output", "--offset", "3", done),
        ("jobs", "output", "--offset=-1", done),
        ("jobs", "output", "-f", done),
        ("jobs", "output", "--json", done),
        ("jobs", "cancel", done),
        ("jobs", "cancel", "j999"),
        ("jobs", "--json", "poll", done),  # a group option before the subcommand: left to typer on both paths
        ("jobs", "nosuch"),
        ("stat", "../f.txt"),
        ("stat", "--json", "../f.txt"),
        ("stat", "missing"),
        ("stat", "/etc/hostname"),
        ("stat",),
        ("write", "--append", "log.txt", "--content", "line\n"),
        ("write", "--append", "-q", "log.txt", "--content", "line\n"),
        ("write", "--create", "../f.txt", "--content", "other"),
        ("write", "--create", "--json", "../f.txt", "--content", "other"),
        ("write", "--create", "--append", "x.txt", "--content", "x"),
        ("write", "--append", "/etc/oh-denied", "--content", "x"),
    ]
    # pids, times and the running job's age differ from one run to the next
    volatile = re.compile(r'"(timestamp|pid|duration_s|uptime_s|output_bytes|size|next_offset)": [^,\n]+|\b\d+s\b')
    for args in cases:
        fast, slow = _both(oh, *args, cwd=sub)
        assert (fast.returncode, volatile.sub("", fast.stdout), fast.stderr) == (
            slow.returncode,
            volatile.sub("", slow.stdout),
            slow.stderr,
        ), args
    assert (sub / "log.txt").read_text() == "line\n" * 4 and (oh.workspace / "f.txt").read_text() == "one\n"
    fast = oh("jobs", "wait", done, cwd=sub)
    assert fast.returncode == 3 and "done-out" in fast.stdout
    assert oh("jobs", "wait", running, "--timeout", "0.2").returncode == 124
    assert oh("jobs", "cancel", running).returncode == 0 and oh("jobs", "wait", running).returncode == 130


def test_status_fast_and_full_agree(oh):
    fast, slow = _both(oh, "status")
    assert (fast.returncode, fast.stdout) == (slow.returncode, slow.stdout) and fast.returncode == 3
    oh.start("local")
    other = oh.tmp / "ws2"
    other.mkdir()
    oh.start("vscode", other)
    fast, slow = _both(oh, "status")
    norm = lambda text: re.sub(r"up \d+\S*", "up N", text)  # noqa: E731 - uptime ticks between the calls
    assert fast.returncode == slow.returncode == 0
    assert norm(fast.stdout) == norm(slow.stdout)
    fast, slow = _both(oh, "status", "--json")
    strip = lambda out: [{k: v for k, v in s.items() if k != "uptime_s"} for s in json.loads(out)["sessions"]]  # noqa: E731
    assert strip(fast.stdout) == strip(slow.stdout)
    assert "token" not in fast.stdout.replace("token_fingerprint", "")  # never the token itself
    for info in oh.started:
        assert oh.session(info["instance_id"])["token"] not in fast.stdout


def test_a_stale_session_file_is_left_to_the_full_cli(oh):
    """The fast path never cleans session files (one owner): it hands over, and the owner cleans."""
    oh.start("local")
    stale = oh.home / "sessions" / "deadbeef0000.json"
    data = oh.session(oh.started[0]["instance_id"]) | {
        "instance_id": "deadbeef0000",
        "pid": 2**22 + 7,
        "workspace": "/nonexistent",
    }
    stale.write_text(json.dumps(data))
    stale.chmod(0o600)
    assert oh("run", "--", "echo ok", check=0).stdout == "ok\n"
    assert not stale.exists()


class _Recorder:
    """A TCP listener that plays a backend refusing the token, and keeps the request head."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.heads: list[str] = []
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            self.heads.append(data.decode())
            conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 14\r\n\r\nbad token here")
            conn.close()


def _plant_session(oh, port: int, token: str) -> None:
    me = psutil.Process()
    sessions = oh.home / "sessions"
    sessions.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = sessions / "abcabcabcabc.json"
    path.write_text(
        json.dumps(
            {
                "instance_id": "abcabcabcabc",
                "pid": me.pid,
                "start_time": me.create_time(),
                "host": "127.0.0.1",
                "port": port,
                "runtime": "local",
                "workspace": str(oh.workspace.resolve()),
                "token": token,
                "url": f"ws://127.0.0.1:{port}",
            }
        )
    )
    os.chmod(path, 0o600)


def test_handshake_carries_the_token_in_a_header_and_the_shared_shell_key(oh):
    rec = _Recorder()
    token = "T0k3n-" + "x" * 30
    _plant_session(oh, rec.port, token)
    p = oh("run", "--", "true")
    assert p.returncode == 4 and "refused" in p.stderr and token not in p.stderr + p.stdout
    p = oh("read", "f.txt")
    assert p.returncode == 4
    run_head, read_head = rec.heads[0], rec.heads[1]
    for head in (run_head, read_head):
        request_line, *headers = head.split("\r\n")
        assert request_line == "GET /v1/agent HTTP/1.1" and token not in request_line
        names = {h.split(":", 1)[0].lower(): h.split(":", 1)[1].strip() for h in headers if ":" in h}
        assert names["authorization"] == f"Bearer {token}"
        assert "origin" not in names  # browsers send one; the backend refuses it (403)
        assert names["host"] == f"127.0.0.1:{rec.port}"
        assert names["sec-websocket-version"] == "13"
    assert "x-oh-shell: cli" in run_head.lower()  # SPEC-wave2 A: every `oh run` shares one shell
    assert "x-oh-shell" not in read_head.lower()


def test_a_session_on_a_non_loopback_host_is_never_dialled(oh):
    rec = _Recorder()
    _plant_session(oh, rec.port, "tok")
    path = oh.home / "sessions" / "abcabcabcabc.json"
    path.write_text(
        json.dumps(json.loads(path.read_text()) | {"host": "192.0.2.1", "url": f"ws://192.0.2.1:{rec.port}"})
    )
    p = oh("run", "--", "true")
    assert p.returncode != 0 and not rec.heads


def test_backend_killed_mid_command_gives_a_reason(oh):
    """Issue 9 #22: "connection lost (None)" became a sentence a person can act on."""
    info = oh.start("local")
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "run", "--", "sleep 30"],
        env=oh.env,
        cwd=oh.workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        trace = oh.home / "traces" / f"{info['instance_id']}.jsonl"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and '"request"' not in (trace.read_text() if trace.exists() else ""):
            time.sleep(0.05)
        os.kill(info["pid"], 9)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 5
    assert "None" not in err and "closed the connection" in err and "oh status" in err


def test_a_loose_oh_directory_is_left_to_the_full_cli(oh):
    """Issue 9 #1: a group/world-writable oh directory may hold a planted session and token; the
    fast path never reads one (the full CLI, which owns those checks, decides)."""
    import subprocess
    import sys

    oh.start("local")

    def fast_path_taken() -> bool:
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "oh", "run", "--", "true"],
            env=oh.env,
            cwd=oh.workspace,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return "oh.commands.agent" not in proc.stderr and "oh.fastpath.verbs" in proc.stderr

    assert fast_path_taken()
    for target in (oh.home, oh.home / "sessions"):
        mode = target.stat().st_mode & 0o777
        target.chmod(0o777)
        try:
            assert not fast_path_taken(), target
        finally:
            target.chmod(mode)
    session = oh.session_file(oh.started[0]["instance_id"])
    session.chmod(0o666)
    try:
        assert not fast_path_taken()
    finally:
        session.chmod(0o600)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the fast discovery is Linux-only (else the full CLI runs)")
@pytest.mark.parametrize(
    "env",
    [{"XDG_STATE_HOME": "/x/state"}, {"XDG_STATE_HOME": ""}, {"XDG_STATE_HOME": "relative/dir"}, {"OH_HOME": "/o/h"}],
)
def test_fast_state_dir_matches_the_paths_module(monkeypatch, tmp_path, env):
    from oh.config import paths
    from oh.fastpath import discover

    monkeypatch.delenv("OH_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert discover.state_dir() == str(paths.state_dir())


def test_fast_pid_start_time_matches_psutil():
    from oh.fastpath import discover

    for proc in (psutil.Process(), psutil.Process(1)):
        assert abs(discover.start_time(proc.pid) - proc.create_time()) < 0.05
    assert discover.start_time(2**22 + 11) is None
