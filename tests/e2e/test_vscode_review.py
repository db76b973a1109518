"""Proposal (review) mode in a real VS Code (issue 12 #1, docs/protocol.md §3.11): code-server 1.99 with
the oh extension, a backend started with ``oh start --runtime vscode --review``, real ``oh`` agent
processes (their ``oh edit``/``oh write`` wait for the user's decision).

One proposal is accepted with the diff editor's title-bar action (the file changes; one Undo reverts
it), another is rejected from the title bar with a reason typed into the input box (the file is
unchanged, the agent gets REJECTED and the reason), and "Accept all" (one grouped notification names both,
gone when decided: issue 42) applies two proposals as one
WorkspaceEdit (one Undo in one of the files reverts both files); a file the user typed in while its
proposal waited is not overwritten on accept (the agent gets REJECTED: the file changed); a proposal
the user left is found again through the status bar item / "oh: Show pending proposals".
"""

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
        "--review",
        "--review-timeout",
        "300",
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


def _agent(vscode: VsCode, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "oh", *args, "--json"],
        cwd=vscode.workspace,
        env=vscode.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen, timeout: float = 60) -> tuple[int, dict]:
    out, err = proc.communicate(timeout=timeout)
    try:
        return proc.returncode, json.loads(out)
    except ValueError:
        raise AssertionError(f"agent printed no JSON (rc {proc.returncode}): {out!r} {err!r}") from None


def _diff_tab(vscode: VsCode, proposal_text: str) -> str:
    def shown():
        title = vscode.drive("activeTab")["title"]
        return title if "oh proposal" in title else None

    return wait_until(shown, 60, f"the diff editor of the proposal ({proposal_text!r})")


def _title_actions(vscode: VsCode, wanted: str) -> list[str]:
    """The active editor's title-bar action labels, once one starting with ``wanted`` shows."""

    def shown():
        labels = vscode.drive("editorActions")["labels"]
        return labels if any(x.startswith(wanted) for x in labels) else None

    return wait_until(shown, 15, f"the title-bar action {wanted!r}")


def test_the_extension_advertises_review(backend: dict):
    assert "review" in backend["session"]["editors"][0]["capabilities"]


def test_accept_in_the_title_bar_then_one_undo_reverts(vscode: VsCode, backend: dict):
    f = vscode.workspace / "accept_me.py"
    original = "def greet():\n    return 'hello'\n"
    f.write_text(original)
    agent = _agent(vscode, "edit", "accept_me.py", "--replace", "'hello'", "'HELLO'")
    try:
        _diff_tab(vscode, "HELLO")
        assert f.read_text() == original  # a proposal: nothing written yet
        vscode.drive("editorAction", label="Accept proposal")
        rc, obs = _finish(agent)
    except Exception:
        vscode.screenshot("review-accept-failed")
        agent.kill()
        raise
    assert rc == 0 and obs["observation"] == "edit", obs
    assert "accepted" in obs["content"] and obs["extras"]["new_content"] == "def greet():\n    return 'HELLO'\n"
    assert f.read_text() == "def greet():\n    return 'HELLO'\n"
    # The accepted file is shown; one Undo reverts the accepted change.
    wait_until(
        lambda: (
            "accept_me.py" in vscode.drive("activeTab")["title"]
            and "oh proposal" not in vscode.drive("activeTab")["title"]
        ),
        20,
        "the accepted file's editor",
    )
    vscode.drive("focusEditor")
    vscode.drive("press", keys=["Control+z"])
    wait_until(lambda: "'hello'" in vscode.drive("editorText")["text"], 10, "Undo to revert the accepted change")
    vscode.drive("press", keys=["Control+s"])
    wait_until(lambda: f.read_text() == original, 15, "the reverted content on disk")


def test_reject_from_the_title_bar_with_a_reason(vscode: VsCode, backend: dict):
    f = vscode.workspace / "keep_me.txt"
    f.write_text("keep this line\n")
    agent = _agent(vscode, "write", "keep_me.txt", "--content", "agent's replacement\n")
    try:
        _diff_tab(vscode, "agent's replacement")
        vscode.drive("editorAction", label="Reject proposal")
        answer = vscode.drive("inputBox", text="please keep the original wording")
        assert "agent gets this reason" in answer["prompt"]
        rc, obs = _finish(agent)
    except Exception:
        vscode.screenshot("review-reject-failed")
        agent.kill()
        raise
    assert rc == 6 and obs["observation"] == "error" and obs["extras"]["error_id"] == "REJECTED", obs
    assert obs["content"].endswith("Reason: please keep the original wording")
    assert f.read_text() == "keep this line\n"
    wait_until(lambda: "oh proposal" not in vscode.drive("activeTab")["title"], 20, "the diff editor to close")


def test_accept_all_is_one_workspace_edit(vscode: VsCode, backend: dict):
    a, b = vscode.workspace / "all_a.txt", vscode.workspace / "all_b.txt"
    a.write_text("a1\n")
    b.write_text("b1\n")
    first = _agent(vscode, "write", "all_a.txt", "--content", "a2\n")
    try:
        _diff_tab(vscode, "a2")
        second = _agent(vscode, "write", "all_b.txt", "--content", "b2\n")
        _diff_tab(vscode, "b2")
        # Issue 42: ONE notification for both, updated in place (workspace-relative names), gone when decided.
        shown = vscode.drive("toastText", text="2 changes wait for your review")["message"]
        assert "all_a.txt" in shown and "all_b.txt" in shown and str(vscode.workspace) not in shown, shown
        vscode.screenshot("review-grouped-notification")
        vscode.drive("editorAction", label="Accept all proposals")
        results = [_finish(first), _finish(second)]
        vscode.drive("toastGone", text="wait for your review")
    except Exception:
        vscode.screenshot("review-accept-all-failed")
        first.kill()
        raise
    assert [rc for rc, _ in results] == [0, 0], results
    assert a.read_text() == "a2\n" and b.read_text() == "b2\n"
    # ONE Undo in the shown file reverts the whole batch (it was one WorkspaceEdit across both files).
    wait_until(lambda: "all_a.txt" in vscode.drive("activeTab")["title"], 20, "the accepted file's editor")
    vscode.drive("focusEditor")
    vscode.drive("press", keys=["Control+z"])
    wait_until(lambda: "a1" in vscode.drive("editorText")["text"], 10, "Undo to revert the batch")
    # `read` answers from VS Code's buffers: both files are back to their old text, unsaved.
    assert vscode.oh("read", "all_a.txt").stdout == "a1\n"
    assert vscode.oh("read", "all_b.txt").stdout == "b1\n"
    vscode.drive("press", keys=["Control+s"])
    vscode.drive("openFile", path="all_b.txt")
    vscode.drive("focusEditor")
    vscode.drive("press", keys=["Control+s"])
    wait_until(lambda: a.read_text() == "a1\n" and b.read_text() == "b1\n", 15, "both files reverted on disk")


def test_a_file_typed_in_meanwhile_is_not_overwritten(vscode: VsCode, backend: dict):
    f = vscode.workspace / "typed.txt"
    f.write_text("one\n")
    agent = _agent(vscode, "edit", "typed.txt", "--replace", "one", "ONE")
    try:
        _diff_tab(vscode, "ONE")
        # The user opens the file and types before deciding: the reviewed diff is now out of date.
        vscode.drive("openFile", path="typed.txt")
        vscode.drive("focusEditor")
        vscode.drive("press", keys=["Control+End"])
        vscode.drive("type", text="mine\n")
        wait_until(lambda: "mine" in vscode.drive("editorText")["text"], 10, "the typed text")
        vscode.drive("command", title="oh: Accept proposal")
        rc, obs = _finish(agent)
    except Exception:
        vscode.screenshot("review-stale-failed")
        agent.kill()
        raise
    assert (
        rc == 6 and obs["extras"]["error_id"] == "REJECTED" and "file changed since the proposal" in obs["content"]
    ), obs
    text = vscode.drive("editorText")["text"]
    assert "one" in text and "mine" in text and "ONE" not in text
    assert f.read_text() == "one\n"  # nothing written behind the user's back


def test_the_way_back_to_a_proposal_the_user_left(vscode: VsCode, backend: dict):
    f = vscode.workspace / "later.txt"
    agent = _agent(vscode, "edit", "later.txt", "--create", "created after a second look\n")
    try:
        _diff_tab(vscode, "created after a second look")
        vscode.drive("openFile", path="accept_me.py")  # the user goes elsewhere without deciding
        wait_until(lambda: "oh proposal" not in vscode.drive("activeTab")["title"], 15, "another editor")
        assert any("1 to review" in item for item in vscode.drive("statusBar")["items"])
        vscode.drive("command", title="oh: Show pending proposals")
        _diff_tab(vscode, "created after a second look")
        # A new file is one decision: Accept / Reject, no Keep / Undo hunk.
        labels = _title_actions(vscode, "Accept proposal")
        assert not any("hunk" in x for x in labels), labels
        vscode.drive("editorAction", label="Accept proposal")
        rc, obs = _finish(agent)
    except Exception:
        vscode.screenshot("review-reopen-failed")
        agent.kill()
        raise
    assert rc == 0 and obs["extras"]["prev_exist"] is False and "accepted" in obs["content"], obs
    assert f.read_text() == "created after a second look\n"
    wait_until(
        lambda: not any("to review" in item for item in vscode.drive("statusBar")["items"]),
        15,
        "the status bar item to go",
    )


# Issue 39 item 2: a proposal with 3 hunks, reviewed hunk by hunk from the diff editor's title bar.
_LINES = [f"line {i}\n" for i in range(30)]
_BEFORE = "".join(_LINES)
_PROPOSED = _BEFORE.replace("line 2\n", "LINE 2\n").replace("line 15\n", "LINE 15\n").replace("line 28\n", "")
_KEPT_1_3 = _BEFORE.replace("line 2\n", "LINE 2\n").replace("line 28\n", "")
_PARTIAL_NOTE = (
    "[Review mode: the user accepted part of this change to {path}: hunks 1, 3 of 3 were written; hunk 2 was "
    "rejected and not written. Read the file again before building on it.]"
)


def _keep_undo_keep(vscode: VsCode, agent: subprocess.Popen, name: str, reopen: bool = False) -> tuple[int, dict]:
    try:
        _diff_tab(vscode, "LINE 2")
        _title_actions(vscode, "Undo hunk")
        vscode.drive("editorAction", label="Keep hunk")  # hunk 1 (the cursor starts in it), then on to hunk 2
        vscode.drive("editorAction", label="Undo hunk")  # hunk 2 leaves the proposed side; on to hunk 3

        def rerendered():
            sides = vscode.drive("diffSides")
            labels = " | ".join(sides["labels"])
            if "LINE 15" in sides["modified"] or "hunk 2 of 3: undone" not in labels:
                return None
            return sides if "LINE 2" in sides["modified"] and "hunk 1 of 3: kept" in labels else None

        sides = wait_until(rerendered, 15, "the diff without hunk 2, hunks 1 and 2 marked")
        assert "hunk 3 of 3: Keep or Undo" in " | ".join(sides["labels"]), sides
        vscode.screenshot(f"review-hunks-{name}")
        if reopen:  # the user leaves the diff and comes back: the marks and the undone hunk are still there
            vscode.drive("openFile", path="hunks.txt")  # the file itself, in another tab
            wait_until(lambda: "oh proposal" not in vscode.drive("activeTab")["title"], 15, "another editor")
            vscode.drive("command", title="oh: Show pending proposals")
            _diff_tab(vscode, "LINE 2")
            wait_until(rerendered, 15, "the reopened diff with the same marks")
        vscode.drive("editorAction", label="Keep hunk")  # hunk 3: every hunk decided, the proposal is answered
        return _finish(agent)
    except Exception:
        vscode.screenshot(f"review-hunks-{name}-failed")
        agent.kill()
        raise


def test_keep_hunks_1_and_3_undo_hunk_2(vscode: VsCode, backend: dict):
    f = vscode.workspace / "hunks.txt"
    f.write_text(_BEFORE)
    rc, obs = _keep_undo_keep(
        vscode, _agent(vscode, "write", "hunks.txt", "--content", _PROPOSED), "saved", reopen=True
    )
    assert rc == 0 and obs["observation"] == "write", obs
    assert obs["content"].endswith(_PARTIAL_NOTE.format(path=str(f))), obs["content"]
    wait_until(lambda: f.read_bytes() == _KEPT_1_3.encode(), 15, "the kept hunks on disk")
    wait_until(lambda: "oh proposal" not in vscode.drive("activeTab")["title"], 20, "the diff editor to close")


def test_keep_hunks_with_the_users_unsaved_edits_kept(vscode: VsCode, backend: dict):
    f = vscode.workspace / "hunks_dirty.py"
    f.write_text(_BEFORE)
    # The user types at the end of the file and does not save; the agent's proposal is made on that buffer.
    vscode.drive("openFile", path="hunks_dirty.py")
    vscode.drive("focusEditor")
    vscode.drive("press", keys=["Control+End"])
    vscode.drive("type", text="mine\n")
    wait_until(lambda: vscode.oh("read", "hunks_dirty.py").stdout.endswith("mine\n"), 15, "the unsaved edit")
    proposed = _PROPOSED + "mine\n"
    rc, obs = _keep_undo_keep(vscode, _agent(vscode, "write", "hunks_dirty.py", "--content", proposed), "dirty")
    assert rc == 0 and obs["observation"] == "write", obs
    assert obs["content"].endswith(_PARTIAL_NOTE.format(path=str(f))) and "unsaved changes" in obs["content"], obs
    assert vscode.oh("read", "hunks_dirty.py").stdout == _KEPT_1_3 + "mine\n"
    assert f.read_bytes() == _BEFORE.encode()  # the user's unsaved buffer was not saved behind their back
    wait_until(lambda: "hunks_dirty.py" in vscode.drive("activeTab")["title"], 20, "the file's editor")
    vscode.drive("focusEditor")
    vscode.drive("press", keys=["Control+s"])
    wait_until(lambda: f.read_bytes() == (_KEPT_1_3 + "mine\n").encode(), 15, "the saved file")
