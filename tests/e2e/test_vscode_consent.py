"""Consent in a real VS Code (issue 19, docs/protocol.md §3.13): code-server with the oh extension, a
backend started with ``oh start --runtime vscode --consent commands``, real ``oh run`` agent processes that
wait for the user. The user answers from the extension's notification: "Allow once" runs the command in
VS Code's terminal; "Reject…" with a reason typed into the input box leaves it unrun and the agent gets
REJECTED with that reason; the agent's security_risk is in the notification."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import VsCode, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
    proc = vscode.oh(
        "start",
        "--runtime",
        "vscode",
        "--consent",
        "commands",
        "--workspace",
        str(vscode.workspace),
        "--detach",
        "--no-open",
        "--json",
        timeout=60,
    )
    assert proc.returncode == 0, f"oh start failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    info = json.loads(proc.stdout)

    def editor_registered():
        for s in vscode.sessions():
            if s.get("instance_id") == info["instance_id"] and s.get("editors"):
                return s
        return None

    info["session"] = wait_until(editor_registered, 60, "the extension to register with the backend")
    return info


def _agent(vscode: VsCode, command: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "oh", "run", "--json", command],
        cwd=vscode.workspace,
        env=vscode.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen, timeout: float = 90) -> tuple[int, dict]:
    out, err = proc.communicate(timeout=timeout)
    try:
        return proc.returncode, json.loads(out)
    except ValueError:
        raise AssertionError(f"agent printed no JSON (rc {proc.returncode}): {out!r} {err!r}") from None


def test_the_extension_advertises_consent(backend: dict):
    assert "consent" in backend["session"]["editors"][0]["capabilities"]


def test_allow_once_from_the_notification_runs_the_command(vscode: VsCode, backend: dict):
    agent = _agent(vscode, "touch vs-allowed.txt")
    try:
        shown = vscode.drive("toastText", text="touch vs-allowed.txt", timeout=60)["message"]
        assert "wants to run" in shown and "Always allow run: touch *" in shown
        assert not (vscode.workspace / "vs-allowed.txt").exists()
        vscode.drive("notification", button="Allow once", text="touch vs-allowed.txt")
        rc, obs = _finish(agent)
    except Exception:
        vscode.screenshot("consent-allow-failed")
        agent.kill()
        raise
    assert rc == 0 and obs["observation"] == "run", obs
    assert "allowed by vscode" in obs["extras"]["metadata"]["prefix"]
    assert (vscode.workspace / "vs-allowed.txt").exists()


def test_reject_from_the_notification_with_a_reason(vscode: VsCode, backend: dict):
    agent = _agent(vscode, "touch vs-rejected.txt")
    try:
        vscode.drive("notification", button="Reject", text="touch vs-rejected.txt", timeout=60)
        answer = vscode.drive("inputBox", text="not in this workspace")
        assert "agent gets this reason" in answer["prompt"]
        rc, obs = _finish(agent)
    except Exception:
        vscode.screenshot("consent-reject-failed")
        agent.kill()
        raise
    assert (
        obs["observation"] == "error"
        and obs["extras"]["error_id"] == "REJECTED"
        and obs["extras"]["decided_by"] == "vscode"
    ), obs
    assert obs["content"].endswith("Reason: not in this workspace")
    assert not (vscode.workspace / "vs-rejected.txt").exists()
    assert json.loads(vscode.oh("approvals", "--json", "-C", str(vscode.workspace)).stdout)["approvals"] == []
