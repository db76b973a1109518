"""Consent in a real VS Code (issue 19, docs/protocol.md §3.13): code-server with the oh extension, a
backend started with ``oh start --runtime vscode --consent commands``, real ``oh run`` agent processes that
wait for the user. The user answers from the extension's question box: "Allow once" runs the command in
VS Code's terminal; "Reject…" with a reason typed into the input box leaves it unrun and the agent gets
REJECTED with that reason. Issue 42: Escape leaves it waiting behind the status bar's "oh: 1 waits for you",
which brings it back; decided elsewhere, it goes away; "Always…" lists the rules; "Show command" opens a
read-only document. Screenshots of these states are kept with the e2e artifacts."""

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


def _choices(rows: list[str]) -> list[str]:
    """The labels of a question box's rows (a row reads "label description")."""
    labels = ("Allow once", "Always…", "Reject…", "Show command", "Show change")
    return [next((x for x in labels if r.startswith(x)), r) for r in rows]


def _status(vscode: VsCode) -> list[str]:
    return vscode.drive("statusBar")["items"]


def test_allow_once_from_the_question_runs_the_command(vscode: VsCode, backend: dict):
    agent = _agent(vscode, "touch vs-allowed.txt")
    try:
        shown = vscode.drive("quickPick", text="touch vs-allowed.txt", timeout=60)
        assert "wants to run" in shown["text"], shown
        assert _choices(shown["rows"]) == ["Allow once", "Always…", "Reject…", "Show command"], shown
        assert "oh: 1 waits for you" in _status(vscode)
        vscode.screenshot("consent-question")
        assert not (vscode.workspace / "vs-allowed.txt").exists()
        vscode.drive("quickPick", text="touch vs-allowed.txt", pick="Allow once")
        rc, obs = _finish(agent)
    except Exception:
        vscode.screenshot("consent-allow-failed")
        agent.kill()
        raise
    assert rc == 0 and obs["observation"] == "run", obs
    assert "allowed by vscode" in obs["extras"]["metadata"]["prefix"]
    assert (vscode.workspace / "vs-allowed.txt").exists()
    wait_until(lambda: not any("waits for you" in i for i in _status(vscode)), 30, "the status bar count to go")


def test_reject_from_the_question_with_a_reason(vscode: VsCode, backend: dict):
    agent = _agent(vscode, "touch vs-rejected.txt")
    try:
        vscode.drive("quickPick", text="touch vs-rejected.txt", pick="Reject…", timeout=60)
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


def test_escape_leaves_it_waiting_in_the_status_bar_which_brings_it_back(vscode: VsCode, backend: dict):
    """Issue 42 major 1: a hidden question is not lost: the status bar says one waits and reopens it."""
    agent = _agent(vscode, "touch vs-later.txt")
    try:
        vscode.drive("quickPick", text="touch vs-later.txt", timeout=60)
        vscode.drive("press", keys=["Escape"])
        vscode.drive("quickPickGone", text="touch vs-later.txt")
        assert "oh: 1 waits for you" in _status(vscode)
        vscode.screenshot("consent-waiting-in-status-bar")
        vscode.drive("clickStatus", text="waits for you")
        vscode.drive("quickPick", text="touch vs-later.txt", pick="Allow once")
        rc, obs = _finish(agent)
    except Exception:
        vscode.screenshot("consent-escape-failed")
        agent.kill()
        raise
    assert rc == 0 and obs["observation"] == "run", obs
    assert (vscode.workspace / "vs-later.txt").exists()


def test_decided_elsewhere_takes_the_question_away(vscode: VsCode, backend: dict):
    agent = _agent(vscode, "touch vs-elsewhere.txt")
    try:
        vscode.drive("quickPick", text="touch vs-elsewhere.txt", timeout=60)
        rows = vscode.oh_json("approvals", "--json", "-C", str(vscode.workspace))["approvals"]
        assert len(rows) == 1, rows
        proc = vscode.oh("approve", rows[0]["id"], "-C", str(vscode.workspace))
        assert proc.returncode == 0, proc.stderr
        rc, obs = _finish(agent)
        vscode.drive("quickPickGone", text="touch vs-elsewhere.txt")
        wait_until(lambda: not any("waits for you" in i for i in _status(vscode)), 30, "the status bar count to go")
    except Exception:
        vscode.screenshot("consent-elsewhere-failed")
        agent.kill()
        raise
    assert rc == 0 and (vscode.workspace / "vs-elsewhere.txt").exists(), obs


def test_always_lists_each_rule_and_show_command_opens_a_read_only_document(vscode: VsCode, backend: dict):
    """Issue 42 major 2 and the "Untitled-1" minor: short labels for a multi-part command."""
    command = "sh -c \"python3 -c 'print(1)' && echo x && git status --short && git diff --stat && ls\""
    agent = _agent(vscode, command)
    try:
        shown = vscode.drive("quickPick", text="wants to run", timeout=60)
        assert _choices(shown["rows"]) == ["Allow once", "Always…", "Reject…", "Show command"], shown
        vscode.drive("quickPick", text="wants to run", pick="Show command")
        wait_until(lambda: "whole command" in vscode.drive("activeTab")["title"], 30, "the whole command's tab")
        assert "Untitled" not in vscode.drive("activeTab")["title"]
        vscode.drive("quickPick", text="wants to run", pick="Always…")
        rules = vscode.drive("quickPick", text="the rules it saves")
        vscode.screenshot("consent-always-rules")
        assert any(r.startswith("Save these") for r in rules["rows"]), rules
        listed = [r for r in rules["rows"] if r.startswith("run:")]
        assert len(listed) >= 2 and any("echo" in r for r in listed), rules
        vscode.drive("quickPick", text="the rules it saves", pick="Back to the question")
        vscode.drive("quickPick", text="wants to run", pick="Allow once")
        rc, obs = _finish(agent)
        # The question's document closes with it.
        wait_until(lambda: "whole command" not in vscode.drive("activeTab")["title"], 30, "the command's tab to close")
        # Issue 42: the failing command (git outside a repository) is marked as failed in the agent's terminal,
        # with VS Code's own exit-code decoration.
        wait_until(
            lambda: any("error" in c.split() for c in vscode.drive("terminalDecorations")["classes"]),
            30,
            "the failed command's decoration",
        )
        vscode.screenshot("terminal-exit-code-decoration")
    except Exception:
        vscode.screenshot("consent-always-failed")
        agent.kill()
        raise
    # It ran (the workspace is no git repository, so `git status` fails: the exit code is the command's).
    assert obs["observation"] == "run" and obs["extras"]["metadata"]["exit_code"] == rc == 128, obs
