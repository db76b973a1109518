"""`oh.terminalMode: fast` in a real VS Code (code-server 1.99 + headless Chromium), real `oh` processes:
the agent's terminal is a pseudoterminal over one persistent bash (extension/src/executors/fastshell.ts).
The setting is in the workspace's settings.json before the workbench starts (TERMINAL_MODE, read by
conftest); every check goes through the real backend and CLI, as an agent's would.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from .conftest import VsCode, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]
TERMINAL_MODE = "fast"  # written into the workspace's settings.json before the workbench starts (conftest)


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
    proc = vscode.oh(
        "start",
        "--runtime",
        "vscode",
        "--workspace",
        str(vscode.workspace),
        "--detach",
        "--no-open",
        "--json",
        timeout=60,
    )
    assert proc.returncode == 0, f"oh start failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    info = json.loads(proc.stdout)

    def registered():
        return any(s.get("instance_id") == info["instance_id"] and s.get("editors") for s in vscode.sessions())

    wait_until(registered, 60, "the extension to register with the backend")
    info["session_file"] = json.loads((vscode.oh_home / "sessions" / f"{info['instance_id']}.json").read_text())
    yield info
    vscode.oh("stop", info["instance_id"], timeout=60)


def _client(backend: dict):
    from oh.client.sync import SyncClient

    s = backend["session_file"]
    return SyncClient.connect(s["url"], s["token"], name="e2e-fast")


def test_output_exit_codes_and_persistent_state(vscode: VsCode, backend: dict):
    proc = vscode.oh("run", "--", "bash", "-c", "echo out; echo err >&2; exit 3", timeout=90)
    assert proc.returncode == 3, proc
    assert proc.stdout == "out\nerr\n", proc  # one stream, in order, as in a terminal
    assert "ready (fast mode, persistent bash" in vscode.extension_log(), "the agent's terminal is the fast one"
    with _client(backend) as client:
        for cmd, code, out in [
            ("echo hi", 0, "hi\n"),
            ("false", 1, ""),
            ("(exit 42)", 42, ""),
            ("printf 'a\\nb'", 0, "a\nb"),
        ]:
            obs = client.run(cmd, timeout=60)
            assert obs["content"] == out and obs["extras"]["metadata"]["exit_code"] == code, (cmd, obs)
        assert (
            client.run("mkdir -p sub && cd sub && export OH_FAST_VAR=kept", timeout=60)["extras"]["metadata"][
                "exit_code"
            ]
            == 0
        )
        obs = client.run("echo $OH_FAST_VAR; pwd", timeout=60)
    sub = os.path.realpath(vscode.workspace / "sub")
    assert obs["content"] == f"kept\n{sub}\n", obs
    assert obs["extras"]["metadata"]["working_dir"] == sub


def test_soft_timeout_then_continue_input_and_ctrl_c(vscode: VsCode, backend: dict):
    with _client(backend) as client:
        obs = client.run("echo start; sleep 2; echo done", timeout=0.5)
        md = obs["extras"]["metadata"]
        assert md["exit_code"] == -1 and "still running" in md["suffix"], obs
        assert obs["content"] == "start\n", obs
        obs = client.run("", timeout=20)
        assert obs["content"] == "done\n" and obs["extras"]["metadata"]["exit_code"] == 0, obs
        obs = client.run("read answer; echo got $answer", timeout=0.5)
        assert obs["extras"]["metadata"]["exit_code"] == -1, obs
        obs = client.run("hello", is_input=True, timeout=20)
        assert obs["content"].endswith("got hello\n") and obs["extras"]["metadata"]["exit_code"] == 0, obs
        obs = client.run("sleep 30; echo not reached", timeout=0.5)
        assert obs["extras"]["metadata"]["exit_code"] == -1, obs
        obs = client.run("C-c", is_input=True, timeout=20)
        assert obs["extras"]["metadata"]["exit_code"] == 130 and "not reached" not in obs["content"], obs
        assert client.run("echo after", timeout=60)["content"] == "after\n"
        # C-d: the reading command sees end-of-file; the next command's input still reaches it
        assert client.run("cat; echo eof", timeout=0.5)["extras"]["metadata"]["exit_code"] == -1
        client.run("line", is_input=True, timeout=0.5)
        obs = client.run("C-d", is_input=True, timeout=20)
        assert obs["content"].endswith("eof\n") and obs["extras"]["metadata"]["exit_code"] == 0, obs
        client.run("read again; echo again $again", timeout=0.5)
        obs = client.run("yes", is_input=True, timeout=20)
        assert obs["content"].endswith("again yes\n"), obs
        # env values (secrets) reach the command, never the extension's log
        obs = client.run("echo $OH_FAST_PASSWORD", env={"OH_FAST_PASSWORD": "pa55-fast-e2e"}, timeout=60)
        assert obs["content"] == "pa55-fast-e2e\n", obs
    assert "pa55-fast-e2e" not in vscode.extension_log()


def test_hard_timeout_exits_124_and_the_shell_survives(vscode: VsCode, backend: dict):
    t0 = time.monotonic()
    proc = vscode.oh("run", "--timeout", "1", "--", "sleep", "30")
    assert proc.returncode == 124, proc
    assert time.monotonic() - t0 < 15
    proc = vscode.oh("run", "--timeout", "1", "--", "bash -c \"trap '' INT; sleep 30\"")
    assert proc.returncode == 124 and "killed" in proc.stderr, proc
    assert vscode.oh("run", "--", "echo", "still usable").stdout == "still usable\n"
    with _client(backend) as client:
        assert client.run("export OH_FAST_SURVIVES=yes", timeout=60)["extras"]["metadata"]["exit_code"] == 0
        obs = client.run("sleep 30", timeout=1, blocking=True)
        assert obs["extras"]["metadata"]["exit_code"] == -1 and "timed out" in obs["extras"]["metadata"]["suffix"], obs
        obs = client.run("echo $OH_FAST_SURVIVES", timeout=60)
    assert obs["content"] == "yes\n", "the agent's shell (and its exports) survived the hard timeout"


def test_terminal_visible_by_name(vscode: VsCode, backend: dict):
    names = wait_until(
        lambda: [n for n in vscode.drive("terminals")["names"] if n.startswith("oh")] or None,
        30,
        "the agent's terminal tab",
    )
    assert any(n.startswith("oh") for n in names), names
