"""Undo an agent's action in a real VS Code (issue 29, docs/protocol.md §3.15.2): code-server with the oh
extension, `oh start --runtime vscode --history`, a real `oh run` agent that edits a file with `sed -i` and
creates another in VS Code's agent shell. The user, with the file open and an unsaved edit of their own, runs
"oh: Revert an Agent's Action…" and picks the action: the agent's line goes back, the created file is deleted,
the user's unsaved text stays (merged, still unsaved), and one Ctrl+Z in the file takes the revert back."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import VsCode, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
    (vscode.workspace / "app.py").write_text("A = 1\nB = 2\nC = 3\nD = 4\nE = 5\nF = 6\n")
    info = vscode.start_backend("--history")
    yield info
    vscode.oh("stop", info["instance_id"], timeout=60)


def _history(vscode: VsCode) -> list[dict]:
    return vscode.oh_json("history", "--json")["entries"]


def test_revert_an_agent_action_keeps_the_unsaved_text_and_ctrl_z_takes_it_back(vscode: VsCode, backend: dict):
    app, made = vscode.workspace / "app.py", vscode.workspace / "made.txt"
    done = subprocess.run(
        [sys.executable, "-m", "oh", "run", "--json", "sed -i 's/B = 2/B = 20/' app.py && echo new > made.txt"],
        cwd=vscode.workspace,
        env=vscode.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "B = 20" in app.read_text() and made.exists()
    (run,) = wait_until(lambda: [e for e in _history(vscode) if e["kind"] == "run"], 30, "the run's history entry")
    try:
        vscode.drive("openFile", path="app.py")
        vscode.drive("focusEditor")
        wait_until(lambda: "B = 20" in vscode.drive("editorText")["text"], 15, "the editor to show the agent's line")
        vscode.drive("press", keys=["Control+End"])
        vscode.drive("type", text="# mine")
        wait_until(lambda: "# mine" in vscode.drive("editorText")["text"], 10, "the user's unsaved text")
        vscode.drive("command", title="oh: Revert an Agent's Action")
        vscode.drive("inputBox", text=f"#{run['id']} ")
        wait_until(lambda: not made.exists(), 30, "the created file to be deleted by the revert")

        def reverted() -> str | None:
            t = vscode.drive("editorText")["text"]
            return t if "B = 2" in t and "B = 20" not in t else None

        text = wait_until(reverted, 15, "the agent's line reverted in the editor")
        assert "# mine" in text  # the user's unsaved edit is kept (merged), and not saved for them
        assert "# mine" not in app.read_text()
        vscode.drive("toastText", text="reverted")
        # Ctrl+Z in the file takes the revert back (it is a WorkspaceEdit on the undo stack).
        vscode.drive("focusEditor")
        vscode.drive("press", keys=["Control+z"])
        wait_until(lambda: "B = 20" in vscode.drive("editorText")["text"], 10, "Ctrl+Z to take the revert back")
        assert "# mine" in vscode.drive("editorText")["text"]
    except Exception:
        vscode.screenshot("undo-revert-failed")
        raise
    undo = wait_until(lambda: [e for e in _history(vscode) if e["kind"] == "undo"], 30, "the undo's entry")
    assert undo[0]["undoes"] == [run["id"]] and undo[0]["status"] == "done", undo
