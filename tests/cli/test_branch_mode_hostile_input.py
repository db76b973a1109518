"""Git-branch mode against hostile input, from outside: hostile branch names, git hooks that leave processes behind,
git missing from PATH, agent names that slug to nothing. Real git, real `oh` processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess

import pytest

from .test_branch_mode import branches, git, repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed for branch mode")


@pytest.mark.parametrize(
    "name",
    [
        "-x",
        "a..b",
        "x@{1}",
        "has space",
        ".hidden",
        "a/.b",
        "HEAD",
        "a.lock",
        "a/",
        "a~1",
        "a^b",
        "a:b",
        "a\\b",
        "a*b",
        "a?b",
        "a[b",
    ],
)
def test_names_git_refuses_are_refused_at_start_with_exit_2(oh, name) -> None:
    repo(oh.workspace)
    proc = oh("start", "--detach", "--json", "--runtime", "local", "--no-open", "--branch-name", name)
    if proc.returncode == 0:
        oh.started.append(json.loads(proc.stdout))
    assert proc.returncode == 2 and "branch" in proc.stderr, (name, proc.returncode, proc.stderr)
    # git itself agrees that the name is not a branch name
    assert (
        subprocess.run(["git", "check-ref-format", "--branch", name], cwd=oh.workspace, capture_output=True).returncode
        != 0
    )


@pytest.mark.parametrize("name", ["x" * 300, "ünï"])
def test_names_beyond_the_documented_set_are_refused_at_start_too(oh, name) -> None:
    # git would take them; oh's setting allows letters, digits, . _ - + / up to 200 characters (by design)
    repo(oh.workspace)
    proc = oh("start", "--detach", "--json", "--runtime", "local", "--no-open", "--branch-name", name)
    if proc.returncode == 0:
        oh.started.append(json.loads(proc.stdout))
    assert proc.returncode == 2 and "git branch name" in proc.stderr


def test_a_hook_that_leaves_a_process_behind_does_not_hang_the_switch(oh) -> None:
    repo(oh.workspace)
    pidfile = oh.tmp / "hook.pid"
    hook = oh.workspace / ".git" / "hooks" / "post-checkout"
    # Like `ctags -R &`: a background process that keeps git's stdout open long after git exits.
    hook.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\n")
    hook.chmod(0o755)
    oh.start("local", None, "--branch")
    try:
        p = oh("write", "f.txt", "--content", "x", "--json", timeout=90)
        obs = json.loads(p.stdout)
        assert p.returncode == 0 and "Branch mode" in obs["content"], (p.stdout, p.stderr)
        assert any(b.startswith("oh/") for b in branches(oh.workspace))
    finally:
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def test_an_agent_name_that_slugs_to_nothing_gets_a_usable_branch(oh) -> None:
    from oh.client import SyncClient

    repo(oh.workspace)
    info = oh.start("local", None, "--branch")
    token = oh.session(info["instance_id"])["token"]
    with SyncClient.connect(info["url"], token, name="!!! ---") as c:
        obs = c.write(str(oh.workspace / "n.txt"), "x")
    assert obs.kind == "write", obs
    created = [b for b in branches(oh.workspace) if b.startswith("oh/")]
    assert len(created) == 1 and created[0].endswith("-agent")
    assert git(oh.workspace, "symbolic-ref", "--short", "HEAD") == created[0]


def test_git_missing_from_path_is_a_clear_branch_failed(oh, tmp_path) -> None:
    repo(oh.workspace)
    bindir = tmp_path / "nogit"
    bindir.mkdir()
    os.symlink(shutil.which("sh"), bindir / "sh")
    os.symlink(shutil.which("bash"), bindir / "bash")
    import sys

    os.symlink(sys.executable, bindir / "python3")
    proc = oh("start", "--detach", "--json", "--runtime", "local", "--no-open", "--branch", env={"PATH": str(bindir)})
    if proc.returncode == 0:
        oh.started.append(json.loads(proc.stdout))
        p = oh("write", "g.txt", "--content", "x", "--json")
        obs = json.loads(p.stdout)
        assert (
            p.returncode == 6
            and obs["extras"]["error_id"] == "BRANCH_FAILED"
            and "git is not installed" in obs["content"]
        )
        assert not (oh.workspace / "g.txt").exists()
    else:
        assert proc.returncode in (1, 2) and "git" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_bare_repository_is_refused_never_git_inited(oh) -> None:
    bare = oh.tmp / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=30)
    proc = oh(
        "start",
        "--detach",
        "--json",
        "--runtime",
        "local",
        "--no-open",
        "--workspace",
        str(bare),
        "--branch",
        "--git-init",
    )
    if proc.returncode == 0:
        oh.started.append(json.loads(proc.stdout))
        oh("write", "x.txt", "--content", "x", cwd=bare)
    assert proc.returncode == 1 and "bare git repository" in proc.stderr, (proc.returncode, proc.stderr)
    # the repository is still bare: its own files never became an untracked work tree
    assert (
        subprocess.run(["git", "config", "core.bare"], cwd=bare, capture_output=True, text=True).stdout.strip()
        == "true"
    )


def test_inside_a_dot_git_directory_is_refused(oh) -> None:
    repo(oh.workspace)
    proc = oh(
        "start",
        "--detach",
        "--json",
        "--runtime",
        "local",
        "--no-open",
        "--workspace",
        str(oh.workspace / ".git" / "refs"),
        "--branch",
        "--git-init",
    )
    if proc.returncode == 0:
        oh.started.append(json.loads(proc.stdout))
    assert proc.returncode == 1 and ".git directory" in proc.stderr, (proc.returncode, proc.stderr)
    assert not (oh.workspace / ".git" / "refs" / ".git").exists()


def test_a_workspace_in_a_subdirectory_of_a_repo_switches_the_repo(oh) -> None:
    repo(oh.workspace)
    sub = oh.workspace / "pkg"
    sub.mkdir()
    oh.start("local", sub, "--branch")
    p = oh("write", "a.txt", "--content", "x", "--json", cwd=sub)
    assert p.returncode == 0 and "Branch mode" in json.loads(p.stdout)["content"], p.stderr
    assert git(oh.workspace, "symbolic-ref", "--short", "HEAD").startswith("oh/")


def test_detached_head_gets_a_branch_from_that_commit(oh) -> None:
    repo(oh.workspace)
    head = git(oh.workspace, "rev-parse", "HEAD")
    git(oh.workspace, "checkout", "-q", "--detach")
    oh.start("local", None, "--branch")
    p = oh("write", "d.txt", "--content", "x", "--json")
    assert p.returncode == 0, p.stderr
    name = git(oh.workspace, "symbolic-ref", "--short", "HEAD")
    assert name.startswith("oh/") and git(oh.workspace, "rev-parse", "HEAD") == head


def test_a_repo_mid_merge_is_a_clear_branch_failed_and_nothing_runs(oh) -> None:
    ws = oh.workspace
    repo(ws)
    git(ws, "checkout", "-q", "-b", "other")
    (ws / "README").write_text("theirs\n")
    git(ws, "commit", "-q", "-am", "theirs")
    git(ws, "checkout", "-q", "main")
    (ws / "README").write_text("ours\n")
    git(ws, "commit", "-q", "-am", "ours")
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "merge", "other"],
        cwd=ws,
        capture_output=True,
        timeout=30,
    )
    oh.start("local", None, "--branch", "--on-dirty", "stash")
    p = oh("write", "m.txt", "--content", "x", "--json")
    obs = json.loads(p.stdout)
    assert p.returncode == 6 and obs["extras"]["error_id"] == "BRANCH_FAILED" and "needs merge" in obs["content"]
    assert not (ws / "m.txt").exists() and git(ws, "symbolic-ref", "--short", "HEAD") == "main"


def test_branch_and_review_together(oh) -> None:
    from .test_review_cli import _agent, _finish, _pending

    repo(oh.workspace)
    oh.start("local", None, "--branch", "--review", "--review-timeout", "120")
    agent = _agent(oh, "write", "r.txt", "--content", "x\n")
    [row] = _pending(oh, 1)
    # the branch is in place before the proposal is shown: accepting writes on it
    assert git(oh.workspace, "symbolic-ref", "--short", "HEAD").startswith("oh/")
    assert not (oh.workspace / "r.txt").exists()
    oh("review", "accept", row["id"], check=0)
    rc, obs = _finish(agent)
    assert rc == 0 and "Branch mode" in obs["content"] and "accepted" in obs["content"]
    assert (oh.workspace / "r.txt").read_text() == "x\n"
