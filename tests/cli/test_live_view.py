"""The live view of `oh start` in a real pseudo-terminal, plain mode without a TTY, NDJSON with --json."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pexpect
import pytest

from .conftest import wait_for
from .terminal import read_until


def styled(*words: str) -> str:
    """A regex for words that rich may print with style escapes (and spaces) between them."""
    import re

    return r"(?:\x1b\[[0-9;]*m|\s)*".join(re.escape(w) for w in words)


def _sessions(oh):
    d = oh.home / "sessions"
    return sorted(d.glob("*.json")) if d.is_dir() else []


def _attach(oh) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "oh", "attach"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_live_view_in_a_pty_waiting_connected_action_ctrl_c(oh):
    child = pexpect.spawn(
        sys.executable,
        ["-m", "oh", "start", "--runtime", "vscode", "--no-open"],
        cwd=str(oh.workspace),
        env=oh.env,
        dimensions=(40, 160),
        encoding="utf-8",
        timeout=20,
    )
    editor = None
    try:
        (sf,) = wait_for(lambda: _sessions(oh), 15, what="session file")
        instance = json.loads(sf.read_text())["instance_id"]
        child.expect(styled("backend", instance, "runtime", "vscode"))
        child.expect("waiting for VS Code to connect")
        editor = _attach(oh)
        child.expect(styled("editor connected:", "oh headless editor"))
        p = oh("run", "--", "echo live-view-marker")
        assert p.returncode == 0 and "live-view-marker" in p.stdout
        child.expect("echo live-view-marker")
        child.expect("ok")
        p = oh("read", "missing.txt")
        assert p.returncode == 6
        child.expect("TOOL_ERROR")
        child.sendintr()  # Ctrl-C
        child.expect(f"backend {instance} stopped")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
        assert not sf.exists()
        editor.wait(10)  # the editor sees the backend go away and exits
        assert "disconnected (1001" in editor.stderr.read()
    finally:
        if child.isalive():
            child.kill(signal.SIGKILL)
        if editor is not None:
            _stop(editor)


def test_plain_lines_when_stdout_is_not_a_tty(oh):
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "vscode", "--no-open"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    editor = None
    try:
        first = proc.stdout.readline()
        assert "listening on ws://127.0.0.1:" in first and "runtime vscode" in first and "\x1b[" not in first
        # Start lines (waiting for VS Code, the editor shell's sandbox and consent) come in their own order.
        read_until(proc, lambda line: "waiting for VS Code to connect" in line)
        editor = _attach(oh)
        read_until(proc, lambda line: "editor connected:" in line)
        oh("run", "--", "echo plain-marker", check=0)
        lines = read_until(proc, lambda line: "echo plain-marker →" in line)
        assert "echo plain-marker → ok exit 0" in lines[-1] and all("\x1b[" not in line for line in lines), lines
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
        assert proc.returncode == 0 and "stopped (shutdown)" in out
        assert _sessions(oh) == []
    finally:
        _stop(proc)
        if editor is not None:
            _stop(editor)


def test_json_mode_prints_ndjson_events(oh):
    proc = subprocess.Popen(
        # --sandbox off: the unconfined backend's warning is the event this test reads
        [sys.executable, "-m", "oh", "start", "--runtime", "local", "--json", "--sandbox", "off"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        started = json.loads(proc.stdout.readline())
        assert started["event"] == "backend_started" and started["runtime"] == "local" and "token" not in started
        warning = json.loads(proc.stdout.readline())  # JSON mode: the no-sandbox warning is an event, not stderr
        assert (
            warning["event"] == "warning"
            and warning["id"] == "no_sandbox"
            and "no sandbox" in warning["message"].lower()
        )
        snapshot = json.loads(proc.stdout.readline())
        assert snapshot["type"] == "snapshot" and snapshot["instance_id"] == started["instance_id"]
        oh("run", "--", "exit 3", check=3)
        events = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not any(e.get("event") == "action_finished" for e in events):
            events.append(json.loads(proc.stdout.readline()))
        finished = next(e for e in events if e.get("event") == "action_finished")
        assert finished["kind"] == "run" and finished["exit_code"] == 3 and finished["summary"] == "exit 3"
        proc.send_signal(signal.SIGTERM)  # like Ctrl-C: stops the backend
        out, err = proc.communicate(timeout=20)
        last = json.loads(out.strip().splitlines()[-1])
        assert last == {
            "type": "event",
            "event": "backend_stopped",
            "instance_id": started["instance_id"],
            "how": "shutdown",
        }
        assert "sandbox" not in err.lower()
        assert _sessions(oh) == []
    finally:
        _stop(proc)


def test_foreground_ends_when_backend_is_stopped_elsewhere(oh):
    """`oh stop` from another terminal: the live view ends cleanly (exit 0)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "vscode", "--no-open"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "listening" in proc.stdout.readline()
        oh("stop", check=0)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert "ended: " in out.splitlines()[-1]
    finally:
        _stop(proc)


@pytest.mark.parametrize("mode", ["auto", "always"])
def test_open_editor_runs_code_without_the_token(oh, tmp_path, mode):
    """`code` cannot run here: a recording stand-in on PATH checks what oh would ask VS Code."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "code-calls.txt"
    fake = bindir / "code"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {record}\n')
    fake.chmod(0o755)
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    flag = ["--open"] if mode == "always" else []
    p = oh("start", "--runtime", "vscode", "--detach", "--json", *flag, env=env, timeout=40)
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    oh.started.append(info)
    token = oh.session(info["instance_id"])["token"]
    calls = record.read_text().splitlines()
    # first whether the extension is installed (issue 20: said at once, naming `oh vscode install`)
    assert calls[0] == "--list-extensions --show-versions" and [w["id"] for w in info["warnings"]] == ["no_extension"]
    assert calls[1:] == [
        str(oh.workspace.resolve()),
        f"--open-url vscode://oh-dev.oh-vscode/connect?session={info['instance_id']}",
    ]
    assert all(token not in c for c in calls)


def test_no_open_never_touches_vscode(oh, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "code-calls.txt"
    (bindir / "code").write_text(f'#!/bin/sh\necho "$@" >> {record}\n')
    (bindir / "code").chmod(0o755)
    oh.env["PATH"] = f"{bindir}{os.pathsep}{os.environ['PATH']}"
    oh.start("vscode")  # passes --no-open
    # asked only which extensions it has (issue 20: a missing extension is said at once), never to open anything
    assert record.read_text().splitlines() == ["--list-extensions --show-versions"]


def test_foreground_reports_a_crashed_backend(oh):
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "vscode", "--no-open"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "listening" in proc.stdout.readline()
        (sf,) = _sessions(oh)
        info = json.loads(sf.read_text())
        os.kill(info["pid"], signal.SIGKILL)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 1
        assert "connection lost" in err and f"logs/{info['instance_id']}.log" in err
        assert not sf.exists()
    finally:
        _stop(proc)


def test_the_clean_shell_note_shows_in_the_live_view_on_a_terminal(oh):
    """Issue 30 item 9: an rc slower than shell_startup_timeout gives the clean shell and a note, said on `oh run`'s
    stderr and, on a terminal, in the live view itself (its rows: it was only in the plain/NDJSON views)."""
    from .terminal import Term

    (oh.user_home / ".bashrc").write_text("sleep 30\n")
    env = {"SHELL": "/bin/bash", "OH_USER_SHELL": "1", "OH_SHELL_STARTUP_TIMEOUT": "1", "OH_SANDBOX": "off"}
    term = Term(oh, "--runtime", "local", "--no-open", cols=80, rows=30, env=env)
    try:
        term.session()
        term.see("Ctrl-C stops the backend")
        p = oh("run", "--", "echo up", env=env)
        assert (p.returncode, p.stdout) == (0, "up\n") and "did not finish within 1 s" in p.stderr, p.stderr
        term.wait(lambda text: "did not finish within 1 s" in " ".join(text.split()), what="the shell's note")
        said = " ".join(term.text().split())
        assert "shell: Your bash rc files did not finish within 1 s" in said and "clean shell" in said, term.text()
        assert all(len(line) <= 80 for line in term.text().splitlines())  # wrapped to the width, not cut
        term.child.sendintr()
        assert term.finish() == 0
    finally:
        term.kill()
