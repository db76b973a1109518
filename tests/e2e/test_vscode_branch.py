"""Git-branch mode (issue 12 #2, docs/protocol.md §3.12) in a real VS Code: code-server 1.99 with its
built-in Git extension, real ``oh`` processes, a real git repository as the workspace.

``oh start --runtime vscode --branch`` + ``oh write``: the extension creates and switches the branch
through the Git extension's API before the write (checked with git itself). A dirty tree: the
extension asks with a modal; the chosen answer (stash) happens, and Cancel refuses the action.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from .conftest import VsCode, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        shutil.which("git") is None, reason="branch mode needs git (extension/e2e/setup.sh installs it)"
    ),
]

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def git(vscode: VsCode, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(vscode.workspace), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        env={**os.environ, **GIT_ENV},
    ).stdout.strip()


@pytest.fixture(scope="module")
def repo(vscode: VsCode) -> VsCode:
    git(vscode, "init", "-q", "-b", "main")
    (vscode.workspace / "README").write_text("hello\n")
    git(vscode, "add", "README")
    git(vscode, "commit", "-q", "-m", "first")
    return vscode


def start(vscode: VsCode, *flags: str) -> dict:
    proc = vscode.oh(
        "start",
        "--runtime",
        "vscode",
        "--workspace",
        str(vscode.workspace),
        "--detach",
        "--no-open",
        "--json",
        *flags,
        timeout=60,
    )
    assert proc.returncode == 0, f"oh start failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    info = json.loads(proc.stdout)

    def registered():
        return next(
            (s for s in vscode.sessions() if s.get("instance_id") == info["instance_id"] and s.get("editors")), None
        )

    info["session"] = wait_until(registered, 60, "the extension to register with the backend")
    return info


def stop(vscode: VsCode, info: dict) -> None:
    vscode.oh("stop", info["instance_id"], timeout=30)


def test_branch_created_and_switched_through_the_git_extension(repo: VsCode):
    info = start(repo, "--branch")
    try:
        assert "branch" in info["session"]["editors"][0]["capabilities"]
        assert repo.oh("read", "README").returncode == 0
        assert git(repo, "branch", "--show-current") == "main"  # a read is no change
        proc = repo.oh("write", "notes.txt", "--content", "from the agent\n", timeout=120)
        assert proc.returncode == 0, proc.stderr
        branch = git(repo, "branch", "--show-current")
        assert re.fullmatch(r"oh/\d{8}-\d{4}-oh-cli(-\d+)?", branch), branch
        assert (repo.workspace / "notes.txt").read_text() == "from the agent\n"
        assert git(repo, "status", "--porcelain") == "?? notes.txt"  # what Source Control lists
        # The switch was the extension's (its action log), not a git call of the backend's.
        assert wait_until(
            lambda: f'branch "git branch {branch}" -> ok' in repo.extension_log(),
            20,
            "the extension's branch action in its log",
        )
        # VS Code itself shows the new branch (the Git extension's status bar item), not only git.
        wait_until(
            lambda: any(branch in item for item in repo.drive("statusBar")["items"]),
            30,
            f"{branch} in VS Code's status bar",
        )
        (row,) = [s for s in repo.sessions() if s["instance_id"] == info["instance_id"]]
        assert row["branch"] == {"state": "on", "name": branch, "created": True, "previous": "main"}
        assert f"branch     {branch} (new, from main)" in repo.oh("status").stdout
    finally:
        stop(repo, info)
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "agent work")


def _write_in_background(vscode: VsCode, name: str) -> subprocess.Popen:
    # `oh write` waits while VS Code shows the dialog: run it alongside the click.
    return subprocess.Popen(
        [sys.executable, "-m", "oh", "write", name, "--content", "agent\n"],
        cwd=vscode.workspace,
        env=vscode.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_dirty_tree_asks_and_stash_is_what_happens(repo: VsCode):
    before = git(repo, "branch", "--show-current")
    (repo.workspace / "README").write_text("the user's unsaved idea\n")
    info = start(repo, "--branch")  # no terminal here: the question is VS Code's to ask
    writer = _write_in_background(repo, "dirty.txt")
    try:
        answer = repo.drive("dialog", button="Stash changes and switch", timeout=120)
        assert "has uncommitted changes" in answer["message"], answer
        assert "Carry changes to the branch" in answer["message"] and "Don't use a branch" in answer["message"]
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        branch = git(repo, "branch", "--show-current")
        assert branch.startswith("oh/") and branch != before
        assert (repo.workspace / "README").read_text() == "hello\n"  # the user's change went to the stash
        assert "oh: before switching to " + branch in git(repo, "stash", "list")
        assert (repo.workspace / "dirty.txt").read_text() == "agent\n"
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(10)
        stop(repo, info)


def test_cancel_in_the_dialog_refuses_the_action(repo: VsCode):
    git(repo, "stash", "pop", "--quiet")  # the user's change back: dirty again
    before = git(repo, "branch", "--show-current")
    info = start(repo, "--branch")
    writer = _write_in_background(repo, "refused.txt")
    try:
        repo.drive("dialog", button="Cancel", timeout=120)
        _, err = writer.communicate(timeout=120)
        assert writer.returncode != 0 and "BRANCH_FAILED" in err and "cancelled" in err, err
        assert not (repo.workspace / "refused.txt").exists()  # not executed on the wrong branch
        assert git(repo, "branch", "--show-current") == before
        assert (repo.workspace / "README").read_text() == "the user's unsaved idea\n"
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(10)
        stop(repo, info)
