"""Secrets: the token never appears in any process's argv or environment (backend, launcher, the
agent's and the headless editor's shells), nor in logs (even at debug level), traces, `oh status`,
`oh doctor`, `oh logs`, `oh config`, the live view, nor in error output and tracebacks. Files `oh`
keeps are 0600 in 0700 directories, and session files are replaced atomically under concurrent
writers and readers."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import psutil
import pytest

from oh import sessions
from oh.client import AuthError, SyncClient

from . import helpers
from .conftest import record


@pytest.fixture(autouse=True)
def _unsandboxed(oh) -> None:
    """These tests follow the agent's shell by its host pid (`echo $$`, its children) from outside: inside the
    sandbox's pid namespace `$$` is not that pid. The sandbox's own battery is tests/sandbox/."""
    oh.env["OH_SANDBOX"] = "off"


def _environ(pid: int) -> bytes:
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f.read()


def _cmdline(pid: int) -> str:
    return " ".join(psutil.Process(pid).cmdline())


def _all_argv() -> str:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, timeout=10)
    return out.stdout


def _files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _assert_absent(token: str, where: str, text: str | bytes) -> None:
    needle = token.encode() if isinstance(text, bytes) else token
    assert needle not in text, f"the token leaked into {where}"


def test_token_is_in_no_argv_environment_log_trace_or_output(oh, tmp_path):
    checked: list[str] = []
    info = oh.start("local")
    token = oh.session(info["instance_id"])["token"]
    assert token == oh("token", "show", "--reveal", check=0).stdout.strip()
    backend = info["pid"]

    # An agent with a live shell (and a child process in it) while we look at every process.
    with SyncClient.connect(info["url"], token, name="leak-check") as agent:
        shell_pid = int(agent.run("echo $$").content.strip())
        agent.run("sleep 30", timeout=0.5)  # soft timeout: keeps running as a child of the shell
        (sleeper,) = helpers.wait_until(lambda: helpers.children_named(shell_pid, "sleep"), 5, what="the agent's sleep")
        env_out = agent.run("env").content
        ps_in_shell = agent.run("ps -eo args").content
        for pid, label in ((backend, "backend"), (shell_pid, "agent bash"), (sleeper.pid, "agent's child")):
            _assert_absent(token, f"argv of the {label}", _cmdline(pid))
            _assert_absent(token, f"environment of the {label}", _environ(pid))
            checked += [f"argv:{label}", f"environ:{label}"]
        _assert_absent(token, "the agent shell's `env`", env_out)
        _assert_absent(token, "`ps -eo args` (run by the agent)", ps_in_shell)
        _assert_absent(token, "`ps -eo args` (every process on the machine)", _all_argv())
        checked += ["agent env output", "ps -eo args (agent)", "ps -eo args (machine)"]
        agent.run("C-c", is_input=True)

    # A foreground launcher (the live view) is a long-lived process too: its argv/env, and its output.
    other = tmp_path / "ws-live"
    other.mkdir()
    live = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "local", "--workspace", str(other)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=oh.env,
        cwd=other,
    )
    try:
        s2 = helpers.wait_until(
            lambda: sessions.for_workspace(other, oh.home / "sessions"), 20, what="the live view's backend"
        )
        _assert_absent(token, "argv of the launcher", _cmdline(live.pid))
        _assert_absent(token, "environment of the launcher", _environ(live.pid))
        _assert_absent(token, "argv of the live view's backend", _cmdline(s2.pid))
        first = live.stdout.readline()  # "listening": the live view's monitor is attached (fast `oh run` could beat it)
        oh("run", "-C", str(other), "--", "echo via-live-view", check=0)
        time.sleep(1.0)  # let the live view print the action
        live.send_signal(signal.SIGINT)
        out, err = live.communicate(timeout=30)
        out = first + out
    finally:
        helpers.kill_tree(live.pid)
    assert "via-live-view" in out or "echo via-live-view" in out
    _assert_absent(token, "the live view's output", out + err)
    live_json = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--json", "--runtime", "local", "--workspace", str(other)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=oh.env,
        cwd=other,
    )
    try:
        helpers.wait_until(
            lambda: sessions.for_workspace(other, oh.home / "sessions"), 20, what="the NDJSON live view's backend"
        )
        oh("run", "-C", str(other), "--", "true", check=0)
        time.sleep(0.5)
        live_json.send_signal(signal.SIGINT)
        out, err = live_json.communicate(timeout=30)
    finally:
        helpers.kill_tree(live_json.pid)
    assert '"backend_started"' in out
    _assert_absent(token, "the NDJSON live view", out + err)
    checked += ["argv:launcher", "environ:launcher", "live view (plain)", "live view (NDJSON)"]

    # Everything a user can print, and every file oh keeps except the token stores themselves.
    for args in (
        ("status", "--json"),
        ("status",),
        ("doctor", "--json"),
        ("doctor",),
        ("logs",),
        ("logs", "--json"),
        ("config", "list", "--show-origin"),
        ("token", "show"),
        ("token", "show", "--json"),
    ):
        p = oh(*args)
        _assert_absent(token, f"`oh {' '.join(args)}`", p.stdout + p.stderr)
        checked.append(f"oh {' '.join(args)}")
    stores = {oh.home / "token"} | set((oh.home / "sessions").glob("*.json"))
    for f in _files_under(oh.home):
        if f not in stores:
            _assert_absent(token, str(f.relative_to(oh.home)), f.read_bytes())
            checked.append(f"file:{f.relative_to(oh.home).parts[0]}")
    assert any((oh.home / "logs").iterdir()) and any((oh.home / "traces").iterdir())
    record("token_leak_checks", {"places_checked": len(checked), "leaks": 0, "places": sorted(set(checked))})


def test_oh_token_in_the_launchers_environment_reaches_no_child(oh):
    """OH_TOKEN overrides the stored token; the launcher must not pass it to the backend, and no
    agent or editor shell may inherit it."""
    custom = "env-token-" + "x" * 40
    info = json.loads(
        oh(
            "start",
            "--detach",
            "--json",
            "--runtime",
            "vscode",
            "--no-open",
            env={"OH_TOKEN": custom},
            check=0,
            timeout=40,
        ).stdout
    )
    oh.started.append(info)
    assert oh.session(info["instance_id"])["token"] == custom  # it is the token in use...
    _assert_absent(custom, "the backend's environment", _environ(info["pid"]))  # ...but not inherited
    # The headless editor started by a user who has OH_TOKEN exported: its shells must not see it.
    editor = helpers.EditorProcess(oh.workspace, dict(oh.env, OH_TOKEN=custom))
    try:
        session = sessions.read(oh.session_file(info["instance_id"]))
        helpers.wait_editor(session)
        with SyncClient.connect(info["url"], custom) as agent:
            obs = agent.run("echo $$; env")
            shell_pid = int(obs.content.splitlines()[0])
            _assert_absent(custom, "the editor shell's `env`", obs.content)
            _assert_absent(custom, "the editor shell's environment", _environ(shell_pid))
            _assert_absent(custom, "the editor shell's argv", _cmdline(shell_pid))
    finally:
        editor.kill()


def test_debug_log_level_does_not_log_the_token(oh):
    """websockets logs every request header at DEBUG (Authorization: Bearer …) and frame prefixes (a
    rotate_token frame carries the new token): the backend must keep those out of its log file."""
    oh("config", "set", "log_level", "debug", check=0)
    info = oh.start("local")
    old = oh.session(info["instance_id"])["token"]
    oh("run", "--", "echo debug-run", check=0)
    rotated = oh.json("token", "rotate", "--json")
    new = oh.session(info["instance_id"])["token"]
    assert new != old and rotated["updated"]
    oh("run", "--", "echo after-rotate", check=0)
    oh("stop", check=0)
    logs = b"".join(f.read_bytes() for f in (oh.home / "logs").iterdir())
    assert b"DEBUG" in logs  # debug logging really was on
    _assert_absent(old, "the debug log", logs)
    _assert_absent(new, "the debug log (rotated token)", logs)
    assert b"Authorization" not in logs


def test_wrong_token_error_paths_print_no_token_and_no_traceback(oh):
    info = oh.start("local")
    sf = oh.session_file(info["instance_id"])
    real = oh.session(info["instance_id"])["token"]
    wrong = "wrong-" + "y" * 40
    data = json.loads(sf.read_text())
    real_editor = data["editor_token"]
    data["token"] = wrong
    data["editor_token"] = "wrong-editor-" + "z" * 40  # `oh attach` presents this one (docs/security.md §2)
    sf.write_text(json.dumps(data))
    outputs = []
    for args in (
        ("run", "--", "echo hi"),
        ("read", "x.txt"),
        ("write", "x.txt", "--content", "x"),
        ("status",),
        ("status", "--json"),
        ("attach", "--once"),
    ):
        p = oh(*args, timeout=30)
        outputs.append((args, p.returncode, p.stdout + p.stderr))
    for args, _code, text in outputs:
        assert "Traceback" not in text, (args, text)
        _assert_absent(wrong, f"`oh {' '.join(args)}` output", text)
        _assert_absent(real, f"`oh {' '.join(args)}` output", text)
        _assert_absent(real_editor, f"`oh {' '.join(args)}` output", text)
        _assert_absent(data["editor_token"], f"`oh {' '.join(args)}` output", text)
    assert outputs[0][1] == 4 and "refused the token" in outputs[0][2]
    # The Python client's exception: message, repr and formatted traceback.
    with pytest.raises(AuthError) as exc:
        SyncClient.connect(info["url"], wrong)
    text = str(exc.value) + repr(exc.value) + "".join(traceback.format_exception(exc.value))
    _assert_absent(wrong, "AuthError", text)
    # The backend's own log of the refusals.
    oh("stop", check=0)
    logs = b"".join(f.read_bytes() for f in (oh.home / "logs").iterdir())
    assert b"refused" in logs
    _assert_absent(wrong, "the backend log", logs)
    _assert_absent(real, "the backend log", logs)
    _assert_absent(real_editor, "the backend log", logs)


def _modes(root: Path) -> tuple[dict[str, int], dict[str, int]]:
    dirs, files = {}, {}
    for p in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(p.lstat().st_mode)
        (dirs if p.is_dir() else files)[str(p.relative_to(root))] = mode
    return dirs, files


def test_files_are_0600_and_directories_0700(oh, tmp_path):
    # Everything under OH_HOME after a full lifecycle.
    oh("config", "set", "editor_timeout", "12", check=0)
    oh.start("local")
    oh("run", "--", "echo modes", check=0)
    oh("token", "rotate", check=0)
    oh("stop", check=0)
    oh.start("vscode")
    dirs, files = _modes(oh.home)
    assert {"sessions", "traces", "logs"} <= set(dirs) and {"config.toml", "token"} <= set(files)
    assert any(f.startswith("sessions/.") and f.endswith(".lock") for f in files)
    assert any(f.startswith("sessions/") and f.endswith(".json") for f in files)
    bad = {k: oct(v) for k, v in dirs.items() if v != 0o700} | {k: oct(v) for k, v in files.items() if v != 0o600}
    assert bad == {}, bad
    n_oh_home = len(dirs) + len(files)
    oh("stop", "--all", check=0)

    # Without OH_HOME: the platform dirs (created by oh) must be 0700 too; `oh doctor` agrees.
    env = {k: v for k, v in oh.env.items() if k != "OH_HOME"}
    home = tmp_path / "plain-home"
    home.mkdir()
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / ".local" / "state"), XDG_CONFIG_HOME=str(home / ".config"))
    ws = tmp_path / "plain-ws"
    ws.mkdir()
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "oh", *a], capture_output=True, text=True, env=env, cwd=ws, timeout=40
    )
    p = run("start", "--detach", "--json", "--runtime", "vscode", "--no-open")
    assert p.returncode == 0, p.stderr
    started = json.loads(p.stdout)
    try:
        state, config = home / ".local" / "state" / "oh", home / ".config" / "oh"
        assert stat.S_IMODE(state.stat().st_mode) == 0o700, oct(state.stat().st_mode)
        assert stat.S_IMODE(config.stat().st_mode) == 0o700
        for root in (state, config):
            d, f = _modes(root)
            bad = {k: oct(v) for k, v in d.items() if v != 0o700} | {k: oct(v) for k, v in f.items() if v != 0o600}
            assert bad == {}, (root, bad)
        doctor = json.loads(run("doctor", "--json").stdout)
        checks = doctor["checks"] if isinstance(doctor, dict) else doctor
        failed = [c for c in checks if c["status"] == "fail" and c["check"].startswith("dir ")]
        assert failed == [], failed
    finally:
        run("stop", "--all")
        helpers.kill_tree(started["pid"])
    record("file_modes", {"oh_home_entries_checked": n_oh_home, "wrong_modes": 0})


WRITER = r"""
import json, sys, time
from pathlib import Path
from oh import sessions
d, seed, seconds = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
n, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    pad = "p" * ((seed * 7919 + n * 104729) % 65536)
    s = sessions.Session(
        "atomic", 1, 1.0, "127.0.0.1", 1, "vscode", "/w", "t" * 43, trace=pad, oh_version=f"{seed}-{n}"
    )
    sessions.write(s, d)
    n += 1
print(n)
"""


def test_session_files_are_replaced_atomically_under_concurrent_writers_and_readers(tmp_path):
    d = tmp_path / "sessions"
    seconds = 2.0
    sessions.write(sessions.Session("atomic", 1, 1.0, "127.0.0.1", 1, "vscode", "/w", "t" * 43), d)
    target = sessions.path_for("atomic", d)
    stop = time.monotonic() + seconds
    counts = {"reads": 0, "partial": 0, "missing": 0, "bad_mode": 0, "thread_writes": 0}
    lock = threading.Lock()

    def writer(seed: int) -> None:
        n = 0
        while time.monotonic() < stop:
            pad = "w" * ((seed * 31 + n * 977) % 65536)  # sizes vary from 0 to 64 KiB
            sessions.write(
                sessions.Session(
                    "atomic", 1, 1.0, "127.0.0.1", 1, "vscode", "/w", "t" * 43, trace=pad, oh_version=f"t{seed}-{n}"
                ),
                d,
            )
            n += 1
        with lock:
            counts["thread_writes"] += n

    def reader() -> None:
        local = {"reads": 0, "partial": 0, "missing": 0, "bad_mode": 0}
        while time.monotonic() < stop:
            try:
                with open(target, "rb") as f:
                    raw = f.read()
                    mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
            except FileNotFoundError:
                local["missing"] += 1
                continue
            local["reads"] += 1
            if mode != 0o600:
                local["bad_mode"] += 1
            try:
                obj = json.loads(raw)
                assert obj["instance_id"] == "atomic" and obj["token"] == "t" * 43
            except (ValueError, AssertionError, KeyError):
                local["partial"] += 1
        with lock:
            for k, v in local.items():
                counts[k] += v

    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(d), str(i), str(seconds)], stdout=subprocess.PIPE, text=True
        )
        for i in range(2)
    ]
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)] + [
        threading.Thread(target=reader) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 10)
    process_writes = 0
    for p in procs:
        out, _ = p.communicate(timeout=seconds + 20)
        process_writes += int(out.strip() or 0)
    assert counts["reads"] > 100 and counts["thread_writes"] > 10 and process_writes > 10, (counts, process_writes)
    assert counts["partial"] == 0 and counts["missing"] == 0 and counts["bad_mode"] == 0, counts
    assert [p.name for p in d.iterdir()] == ["atomic.json"]  # no temp file left behind
    record(
        "session_atomicity",
        {
            **counts,
            "process_writes": process_writes,
            "writers": "3 threads + 2 processes",
            "readers": 3,
            "seconds": seconds,
        },
    )
