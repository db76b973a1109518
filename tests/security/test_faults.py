"""Faults injected into real processes, and what must survive them (times are measured and reported):

- the headless editor SIGKILLed mid-action -> the agent gets EDITOR_DISCONNECTED within 1 s;
- an agent SIGKILLed -> its shell processes are killed (local runtime; and vscode runtime, where the
  backend sends `cancel` to the editor executing the action);
- the backend SIGKILLed -> `oh attach` stops reconnecting and exits, idle shells exit, the next
  `oh status` removes the stale session file and the workspace can be served again;
- port already taken -> a clear error; trace directory read-only or full -> the backend keeps
  serving and warns; two `oh start` for one workspace at the same instant -> exactly one wins.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from websockets.sync.client import connect

from oh import sessions
from oh.client import SyncClient

from . import helpers
from .conftest import record

AGENT = r"""
import json, sys, time
from websockets.sync.client import connect
url, token, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
with connect(url + "/v1/agent", additional_headers={"Authorization": "Bearer " + token}) as ws:
    ws.send(json.dumps({"id": 1, "action": "run", "args": {"command": "sleep 1000"}, "timeout": timeout}))
    if timeout < 5:  # soft timeout: the observation comes back, the command keeps running
        print(json.dumps(json.loads(ws.recv(timeout=30))), flush=True)
    else:
        print("sent", flush=True)
    time.sleep(1000)  # hold the connection until killed
"""


@pytest.fixture(autouse=True)
def _unsandboxed(oh) -> None:
    """These tests follow the agent's shell by its host pid (`echo $$`, its children) from outside: inside the
    sandbox's pid namespace `$$` is not that pid. The sandbox's own battery is tests/sandbox/."""
    oh.env["OH_SANDBOX"] = "off"


def _session(oh, info) -> sessions.Session:
    return sessions.read(oh.session_file(info["instance_id"]))


def _run_action(command: str, timeout: float | None = None, action_id: int = 1) -> str:
    frame = {"id": action_id, "action": "run", "args": {"command": command}}
    if timeout is not None:
        frame["timeout"] = timeout
    return json.dumps(frame)


# ----------------------------------------------------------------------------- editor killed
def test_editor_sigkilled_mid_action_gives_editor_disconnected_within_1s(oh):
    info = oh.start("vscode")
    session = _session(oh, info)
    latencies, orphans_alive = [], 0
    trials = 8
    for trial in range(trials):
        editor = helpers.EditorProcess(oh.workspace, oh.env)
        sleeper = None
        try:
            helpers.wait_editor(session)
            with connect(
                info["url"] + "/v1/agent", additional_headers={"Authorization": f"Bearer {session.token}"}
            ) as ws:
                ws.send(_run_action("sleep 30", timeout=60, action_id=trial + 1))
                (sleeper,) = helpers.wait_until(
                    lambda: helpers.children_named(editor.pid, "sleep"), 10, what="the editor to start `sleep 30`"
                )
                t0 = time.monotonic()
                os.kill(editor.pid, signal.SIGKILL)
                obs = json.loads(ws.recv(timeout=5))
                latencies.append(time.monotonic() - t0)
            assert obs["observation"] == "error" and obs["extras"]["error_id"] == "EDITOR_DISCONNECTED", obs
            assert obs["cause"] == trial + 1
            editor.proc.wait(timeout=5)
            helpers.wait_until(
                lambda: not helpers.backend_status(session)["editors"], 5, what="the editor to be unregistered"
            )
        finally:
            editor.kill()
            if sleeper is not None:  # a SIGKILLed editor cannot clean up: its running command is orphaned
                orphans_alive += helpers.alive(sleeper.pid)
                helpers.kill_pid(sleeper.pid)
    assert max(latencies) < 1.0, latencies
    st = helpers.backend_status(session)
    assert st["stats"]["pending"] == 0 and st["stats"]["done"] == trials
    record(
        "editor_sigkill_to_EDITOR_DISCONNECTED_s",
        {**helpers.summary(latencies), "orphaned_commands_left_running": orphans_alive},
    )


# ----------------------------------------------------------------------------- agent killed
def _agent_process(url: str, token: str, timeout: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", AGENT, url, token, str(timeout)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_agent_and_time_cleanup(
    agent: subprocess.Popen, sleeper: psutil.Process, shell: psutil.Process | None
) -> float:
    t0 = time.monotonic()
    os.kill(agent.pid, signal.SIGKILL)
    agent.wait(timeout=5)
    helpers.wait_until(lambda: not helpers.alive(sleeper.pid), 5, 0.01, "the agent's `sleep 1000` to be killed")
    elapsed = time.monotonic() - t0
    if shell is not None:
        helpers.wait_until(lambda: not helpers.alive(shell.pid), 5, 0.01, "the agent's shell to be killed")
    return elapsed


@pytest.mark.parametrize("soft", [True, False], ids=["after-soft-timeout", "action-in-flight"])
def test_agent_sigkilled_local_runtime_processes_are_cleaned_up(oh, soft):
    info = oh.start("local")
    session = _session(oh, info)
    times = []
    for _ in range(3):
        agent = _agent_process(info["url"], session.token, 0.5 if soft else 100)
        try:
            line = agent.stdout.readline()
            if soft:
                obs = json.loads(line)
                assert (
                    obs["extras"]["metadata"]["exit_code"] == -1
                    and "still running" in obs["extras"]["metadata"]["suffix"]
                )
            (sleeper,) = helpers.wait_until(
                lambda: helpers.children_named(info["pid"], "sleep"), 10, what="the agent's sleep"
            )
            shell = sleeper.parent()
            times.append(_kill_agent_and_time_cleanup(agent, sleeper, shell))
        finally:
            helpers.kill_tree(agent.pid)
    assert max(times) < 3.0, times
    # The killed shell is reaped by the backend's child watcher a moment after it dies (a zombie
    # until then): wait, bounded, for no shell at all to be left.
    helpers.wait_until(
        lambda: helpers.children_named(info["pid"], "bash") == [], 5, 0.02, "every agent shell to be reaped"
    )
    record(f"agent_sigkill_cleanup_local_{'soft' if soft else 'inflight'}_s", helpers.summary(times))


def test_agent_sigkilled_vscode_runtime_editor_gets_cancel_and_kills_the_command(oh):
    info = oh.start("vscode")
    session = _session(oh, info)
    editor = helpers.EditorProcess(oh.workspace, oh.env)
    times = []
    try:
        helpers.wait_editor(session)
        for _ in range(3):
            agent = _agent_process(info["url"], session.token, 100)
            try:
                assert agent.stdout.readline().strip() == "sent"
                (sleeper,) = helpers.wait_until(
                    lambda: helpers.children_named(editor.pid, "sleep"), 10, what="the editor's sleep"
                )
                times.append(_kill_agent_and_time_cleanup(agent, sleeper, sleeper.parent()))
            finally:
                helpers.kill_tree(agent.pid)
        # the editor survives and serves the next agent with a fresh shell
        with SyncClient.connect(info["url"], session.token) as c:
            assert c.run("echo still-serving").content.strip() == "still-serving"
    finally:
        editor.kill()
    assert max(times) < 3.0, times
    record("agent_sigkill_cleanup_vscode_inflight_s", helpers.summary(times))


# ----------------------------------------------------------------------------- backend killed
def test_backend_sigkilled_attach_exits_and_status_cleans_up(oh):
    info = oh.start("vscode")
    session = _session(oh, info)
    attach = helpers.EditorProcess(oh.workspace, oh.env)
    try:
        helpers.wait_editor(session)
        with SyncClient.connect(info["url"], session.token) as c:
            shell_pid = int(c.run("echo $$").content.strip())  # an idle shell in the editor
        t0 = time.monotonic()
        os.kill(info["pid"], signal.SIGKILL)
        code = attach.proc.wait(timeout=15)
        exit_s = time.monotonic() - t0
        err = attach.stderr_text()
    finally:
        attach.kill()
    assert code == 0, err
    attempts = err.count("attached as editor") + err.count("oh attach: error:")
    assert attempts <= 2 and "session ended" in err, err
    helpers.wait_until(lambda: not helpers.alive(shell_pid), 5, what="the editor's shell to exit")
    assert exit_s < 5.0
    record(
        "backend_sigkill_attach",
        {"attach_exit_code": code, "connection_attempts": attempts, "exit_after_s": round(exit_s, 3)},
    )


def test_backend_sigkilled_idle_shells_exit_and_next_status_cleans_the_session(oh):
    info = oh.start("local")
    session = _session(oh, info)
    with SyncClient.connect(info["url"], session.token) as c:
        shell_pid = int(c.run("echo $$").content.strip())
        t0 = time.monotonic()
        os.kill(info["pid"], signal.SIGKILL)
        helpers.wait_until(
            lambda: not helpers.alive(shell_pid), 5, 0.01, "the idle agent shell to exit (EOF on its command pipe)"
        )
        shell_exit = time.monotonic() - t0
    helpers.wait_until(lambda: not helpers.alive(info["pid"]), 5, what="the backend to die")
    sf = oh.session_file(info["instance_id"])
    assert sf.exists()  # nobody could remove it
    p = oh("status", "--json")
    assert p.returncode == 3 and json.loads(p.stdout)["sessions"] == [] and not sf.exists()
    again = oh.start("local")  # the kernel released the workspace lock
    assert again["instance_id"] != info["instance_id"]
    record("backend_sigkill_idle_shell_exit_s", round(shell_exit, 3))


# ----------------------------------------------------------------------------- port taken
def test_port_already_taken_is_a_clear_error(oh):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        proc, ready = helpers.start_backend_process(
            oh.workspace, helpers.oh_env(oh.home), "t" * 43, runtime="local", extra=["--port", str(port)]
        )
        try:
            assert proc.wait(timeout=20) == 2
        finally:
            helpers.kill_tree(proc.pid)
        assert (
            ready["ready"] is False and f"127.0.0.1:{port}" in ready["error"] and "the port is taken" in ready["error"]
        ), ready
        p = oh("start", "--detach", "--runtime", "local", "--port", str(port), timeout=40)
    assert (
        p.returncode == 1 and "the port is taken" in p.stderr and str(port) in p.stderr and "Traceback" not in p.stderr
    ), p.stderr
    assert list((oh.home / "sessions").glob("*.json")) == []


# ----------------------------------------------------------------------------- trace faults
def _serve_and_check_warning(oh, info, actions: int) -> str:
    session = _session(oh, info)
    with SyncClient.connect(info["url"], session.token) as c:
        for i in range(actions):
            obs = c.write(f"f{i % 5}.txt", f"content {i}\n" * 20) if i % 2 else c.run(f"echo action-{i}")
            assert obs.kind != "error", obs
    # records are flushed every 0.25 s: the failure (and the warning) comes with the next flush
    st = helpers.wait_until(
        lambda: (s := helpers.backend_status(session))["trace_warning"] and s, 5, what="the trace warning"
    )
    assert st["stats"]["done"] == actions and st["stats"]["errors"] == 0
    warning = st["trace_warning"]
    assert warning and "trace disabled: cannot write" in warning, st
    text = oh("status", check=0).stdout
    assert "warning" in text and "trace disabled" in text, text
    return warning


def _root_can_bypass_modes() -> bool:
    return os.geteuid() == 0


def test_read_only_trace_directory_backend_keeps_serving_and_warns(oh):
    traces = oh.home / "traces"
    traces.mkdir(parents=True)
    os.chmod(oh.home, 0o700)
    how = "chmod 0500"
    if _root_can_bypass_modes():
        # root ignores permission bits; the immutable attribute stops root as well.
        if (
            shutil.which("chattr") is None
            or subprocess.run(["chattr", "+i", str(traces)], capture_output=True).returncode != 0
        ):
            pytest.skip("running as root without chattr +i: cannot make the trace directory read-only")
        how = "chattr +i (root)"
    else:
        os.chmod(traces, 0o500)
    try:
        info = oh.start("local")
        warning = _serve_and_check_warning(oh, info, 20)
        log = (oh.home / "logs" / f"{info['instance_id']}.log").read_text()
        assert "trace disabled" in log and "keeps serving" in log
    finally:
        if how.startswith("chattr"):
            subprocess.run(["chattr", "-i", str(traces)], capture_output=True)
        os.chmod(traces, 0o700)
    record("trace_read_only", {"method": how, "actions_served": 20, "warning": warning.split(":")[0]})


def test_full_trace_device_backend_keeps_serving_and_warns(oh):
    """`/dev/full` as the trace file: every write fails with ENOSPC, as on a full disk (no root needed)."""
    instance = "fulltrace0001"
    traces = oh.home / "traces"
    traces.mkdir(parents=True)
    os.symlink("/dev/full", traces / f"{instance}.jsonl")
    env = helpers.oh_env(oh.home)
    proc, ready = helpers.start_backend_process(
        oh.workspace, env, "full-trace-token-" + "z" * 30, runtime="local", extra=["--instance-id", instance]
    )
    try:
        assert ready["ready"], ready
        info = {"instance_id": instance, "url": ready["url"], "pid": ready["pid"]}
        warning = _serve_and_check_warning(oh, info, 20)
        assert "No space left" in warning, warning
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        finally:
            helpers.kill_tree(proc.pid)
    record("trace_full_dev_full", {"actions_served": 20, "warning": warning})


def _can_mount_tmpfs(where: Path) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    return (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(where)], capture_output=True
        ).returncode
        == 0
    )


def test_trace_directory_filling_up_mid_run_backend_keeps_serving(oh):
    """A 64 KiB tmpfs as the trace directory, nearly full: the trace works, then the disk fills up
    mid-run; the backend keeps serving every action and reports the warning."""
    traces = oh.home / "traces"
    traces.mkdir(parents=True)
    if not _can_mount_tmpfs(traces):
        pytest.skip("cannot mount a tmpfs here (needs root/CAP_SYS_ADMIN); the /dev/full test covers ENOSPC")
    try:
        with open(traces / "filler", "wb") as f:  # leave ~8 KiB
            try:
                f.write(b"\0" * (56 * 1024))
            except OSError:
                pass
        info = oh.start("local")
        warning = _serve_and_check_warning(oh, info, 200)
        written = (traces / f"{info['instance_id']}.jsonl").stat().st_size
        assert written > 0  # it did trace until the disk was full
        assert "No space left" in warning
        oh("stop", check=0)
    finally:
        oh.cleanup()
        oh.started.clear()
        subprocess.run(["umount", "-l", str(traces)], capture_output=True)
    record("trace_full_tmpfs_mid_run", {"actions_served": 200, "trace_bytes_before_full": written, "warning": warning})


# ----------------------------------------------------------------------------- racing starts
def test_parallel_starts_for_one_workspace_exactly_one_wins(oh):
    n = 4

    def start(_):
        return oh("start", "--detach", "--json", "--runtime", "vscode", "--no-open", timeout=60)

    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(start, range(n)))
    winners = [r for r in results if r.returncode == 0]
    losers = [r for r in results if r.returncode != 0]
    assert len(winners) == 1, [(r.returncode, r.stderr) for r in results]
    info = json.loads(winners[0].stdout)
    oh.started.append(info)
    for r in losers:
        assert r.returncode == 3, r.stderr  # "already served", never a generic failure
        assert "already serves" in r.stderr and info["instance_id"] in r.stderr, r.stderr
    assert [p.name for p in (oh.home / "sessions").glob("*.json")] == [f"{info['instance_id']}.json"]
    ws = os.path.realpath(oh.workspace)

    def stray_backends():
        found = []
        for p in psutil.process_iter(["pid", "cmdline"]):
            cmd = p.info["cmdline"] or []
            if "oh.backend" in cmd and ws in cmd and p.info["pid"] != info["pid"] and helpers.alive(p.info["pid"]):
                found.append(p.info["pid"])
        return found

    helpers.wait_until(lambda: not stray_backends(), 10, what="the losing backends to exit")
    record("parallel_starts", {"started": n, "winners": 1, "losers_exit_3": len(losers)})
