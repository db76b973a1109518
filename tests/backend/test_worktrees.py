"""A git worktree per agent (issue 37 item 3, docs/protocol.md §3.19), against a real backend, real git and the
real `oh merge` / `oh worktrees` processes.

Isolated agents keep using the workspace's paths; their changes land in their own worktrees (under oh's state
dir) and reach the user's branch only through `oh merge`, which merges cleanly or stops naming the conflicting
files with nothing changed. oh's own git calls in these agent-writable repositories run none of the hooks,
fsmonitor, filters or merge drivers an agent could plant (docs/security.md §13.1)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import websockets

from oh.client import Client
from oh.config import paths
from oh.text.status import render_text

from .conftest import TOKEN

GIT_ENV = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _repo(ws: Path, files: dict[str, str]) -> None:
    _git(ws, "init", "-q", "-b", "main")
    for name, text in files.items():
        (ws / name).write_text(text)
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "start")


def _oh(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The real `oh` CLI (a process of its own; OH_HOME from the fixture: the same state dir)."""
    return subprocess.run(
        [sys.executable, "-m", "oh", *args], cwd=cwd, env={**os.environ}, capture_output=True, text=True, timeout=120
    )


async def _backend(make_backend, ws: Path, mode: str = "worktree"):
    root = paths.ensure_worktrees_dir(str(ws))
    return await make_backend(isolate=mode, worktree_root=str(root), allowed_roots=[str(root)])


def _url(b) -> str:
    return f"ws://127.0.0.1:{b.port}"


async def test_two_agents_same_file_first_merges_second_conflicts(make_backend, workspace, oh_home):
    _repo(workspace, {"calc.py": "def f():\n    return 1\n"})
    b = await _backend(make_backend, workspace)
    target = str(workspace / "calc.py")
    async with await Client.connect(_url(b), TOKEN, name="alice") as alice:
        async with await Client.connect(_url(b), TOKEN, name="bob") as bob:
            for who, value in ((alice, "2"), (bob, "3")):
                seen = await who.read(target)
                assert seen.kind == "read" and "return 1" in seen.content
                done = await who.edit(target, "str_replace", old_str="return 1", new_str=f"return {value}")
                assert done.kind == "edit", done.content
                assert done.extras.get("path") in (None, target)  # the agent's own (workspace) path, mapped back
    assert (workspace / "calc.py").read_text() == "def f():\n    return 1\n"  # the user's tree untouched
    assert _git(workspace, "status", "--porcelain") == ""  # no untracked junk either
    listed = _oh("worktrees", "--json", cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    assert '"alice"' in listed.stdout and '"bob"' in listed.stdout
    root = paths.worktrees_dir(str(workspace))
    assert (root / "bob" / "calc.py").read_text().endswith("return 3\n")  # bob's work kept in his worktree

    first = _oh("merge", "alice", cwd=workspace)
    assert first.returncode == 0, first.stderr
    assert "calc.py" in first.stdout and "fast-forward" in first.stdout
    assert (workspace / "calc.py").read_text().endswith("return 2\n")
    assert not (root / "alice").exists()
    head = _git(workspace, "rev-parse", "HEAD")

    second = _oh("merge", "bob", cwd=workspace)
    assert second.returncode == 1
    assert "calc.py" in second.stderr and "nothing was changed" in second.stderr
    assert (workspace / "calc.py").read_text().endswith("return 2\n")
    assert _git(workspace, "rev-parse", "HEAD") == head
    assert _git(workspace, "status", "--porcelain") == ""  # no conflict markers, no MERGE_HEAD left behind
    assert (root / "bob" / "calc.py").read_text().endswith("return 3\n")  # and bob's work is still there


async def test_isolated_read_modify_write_then_merged_loses_nothing(make_backend, workspace, oh_home):
    """N agents each do read-modify-write cycles on their own line of one shared file, in their worktrees;
    merged one after the other, every update is in the user's file: 0 lost."""
    n, rounds = 4, 3
    # Two unchanged lines between the agents' lines: their changes merge as separate hunks.
    _repo(workspace, {"counts.txt": "".join(f"agent{i}: 0\n--\n--\n" for i in range(n))})
    b = await _backend(make_backend, workspace)
    clients = [await Client.connect(_url(b), TOKEN, name=f"agent{i}") for i in range(n)]
    try:
        for _ in range(rounds):
            for i, c in enumerate(clients):
                seen = await c.read("counts.txt")
                line = next(x for x in seen.content.splitlines() if x.startswith(f"agent{i}:"))
                count = int(line.split(":")[1])
                done = await c.edit("counts.txt", "str_replace", old_str=line, new_str=f"agent{i}: {count + 1}")
                assert done.kind == "edit", done.content
    finally:
        for c in clients:
            await c.close()
    for i in range(n):
        merged = _oh("merge", f"agent{i}", cwd=workspace)
        assert merged.returncode == 0, merged.stderr
    final = (workspace / "counts.txt").read_text()
    lost = sum(rounds - int(x.split(":")[1]) for x in final.splitlines() if x.startswith("agent"))
    assert lost == 0, final


async def test_a_request_to_a_backend_without_worktrees_is_refused(make_backend, workspace, oh_home):
    _repo(workspace, {"a.txt": "a\n"})
    b = await make_backend()
    with pytest.raises(Exception) as info:
        await Client.connect(_url(b), TOKEN, name="x", isolate=True)
    assert "isolate" in str(info.value).lower() or "409" in str(info.value)


async def test_on_request_only_the_asking_agent_is_isolated(make_backend, workspace, oh_home):
    _repo(workspace, {"a.txt": "a\n"})
    b = await _backend(make_backend, workspace, mode="on-request")
    async with await Client.connect(_url(b), TOKEN, name="solo", isolate=True) as solo:
        async with await Client.connect(_url(b), TOKEN, name="shared") as shared:
            assert (await solo.write("a.txt", "solo\n")).kind == "write"
            assert (await shared.write("b.txt", "shared\n")).kind == "write"
            pwd = await solo.run("pwd")
            assert pwd.content.strip() == str(paths.worktrees_dir(str(workspace)) / "solo")
            status = b.status()
            text = render_text(
                [{**status, "url": "u", "pid": 1, "token_fingerprint": "f"}], uses_editor=lambda _: False
            )
            assert "  worktree   solo (a1): oh/wt/solo" in text, text
            assert [a["name"] for a in status["agents"] if a.get("worktree")] == ["solo"]
    assert (workspace / "a.txt").read_text() == "a\n"
    assert (workspace / "b.txt").read_text() == "shared\n"


def test_start_refuses_isolate_outside_a_repository(workspace, oh_home):
    done = _oh("start", "--isolate", "worktree", "--detach", "--runtime", "local", cwd=workspace)
    assert done.returncode == 2
    assert "not in a git repository" in done.stderr


def _plant(ws: Path, wt: Path, marker: Path) -> None:
    """What an agent with write access to the repository could leave for oh's next git call: hooks, an
    fsmonitor, a clean filter and a merge driver (config and attributes), all writing ``marker``."""
    hook = f'#!/bin/sh\necho "$0" >> {marker}\n'
    hooks = ws / ".git" / "hooks"
    for name in ("pre-commit", "commit-msg", "post-commit", "post-merge", "pre-merge-commit", "post-checkout"):
        (hooks / name).write_text(hook)
        (hooks / name).chmod(0o755)
    with open(ws / ".git" / "config", "a") as f:
        f.write(
            f"[core]\n\tfsmonitor = echo fsmonitor >> {marker}; false\n"
            f"[filter \"x\"]\n\tclean = sh -c 'echo clean >> {marker}; cat'\n"
            f"\tsmudge = sh -c 'echo smudge >> {marker}; cat'\n"
            f"[merge \"y\"]\n\tdriver = sh -c 'echo driver >> {marker}'\n"
        )
    (wt / ".gitattributes").write_text("* filter=x merge=y\n")


async def test_merge_runs_no_planted_hook_filter_or_driver(make_backend, workspace, oh_home, tmp_path):
    _repo(workspace, {"a.txt": "one\n", "b.txt": "b\n"})
    b = await _backend(make_backend, workspace)
    async with await Client.connect(_url(b), TOKEN, name="mallory") as agent:
        assert (await agent.write("a.txt", "two\n")).kind == "write"
    _git(workspace, "commit", "-qm", "user", "--allow-empty")  # the merge is a real one, not a fast-forward
    wt = paths.worktrees_dir(str(workspace)) / "mallory"
    marker = tmp_path / "marker"
    _plant(workspace, wt, marker)
    merged = _oh("merge", "mallory", cwd=workspace)
    assert merged.returncode == 0, merged.stderr
    assert "merge commit" in merged.stdout
    assert (workspace / "a.txt").read_text() == "two\n"
    assert not marker.exists(), marker.read_text()
    # Positive control: the same plant is live for a plain git call (so the absence above means something).
    subprocess.run(["git", "status"], cwd=workspace, capture_output=True, env={**os.environ, **GIT_ENV})
    assert marker.exists()


async def test_no_worktree_when_git_fails_closes_the_connection(make_backend, workspace, oh_home):
    """A repository without a commit: the agent's connection is closed with the reason (no silent sharing)."""
    from websockets.asyncio.client import connect

    _git(workspace, "init", "-q")
    b = await _backend(make_backend, workspace)
    headers = {"Authorization": f"Bearer {TOKEN}", "X-OH-Client": "early"}
    async with connect(_url(b) + "/v1/agent", additional_headers=headers) as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 30)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011
    assert "no commit" in closed.value.rcvd.reason, closed.value.rcvd.reason


async def test_an_agent_that_reconnects_gets_its_worktree_back(make_backend, workspace, oh_home):
    _repo(workspace, {"a.txt": "a\n"})
    b = await _backend(make_backend, workspace)
    for round_ in range(2):
        async with await Client.connect(_url(b), TOKEN, name="again") as c:
            seen = await c.read("a.txt")
            assert seen.content.strip().endswith("a" if round_ == 0 else "mine"), seen.content
            if round_ == 0:
                assert (await c.write("a.txt", "mine\n")).kind == "write"
    listed = _oh("worktrees", "--json", cwd=workspace)
    assert listed.stdout.count('"oh/wt/again"') == 1, listed.stdout


def test_oh_start_on_request_and_the_cli_verbs_asking_with_oh_agent_isolate(workspace, oh_home):
    """The whole path with real processes: `oh start --isolate on-request`, then `oh write` / `oh run` with
    OH_AGENT_ISOLATE=worktree land in that agent's worktree (its shell runs there, in the sandbox), without it in the
    workspace; `oh merge oh-cli` brings the work back."""
    _repo(workspace, {"a.txt": "a\n"})
    started = _oh("start", "--isolate", "on-request", "--detach", "--runtime", "local", cwd=workspace)
    assert started.returncode == 0, started.stderr
    try:
        env = {**os.environ, "OH_AGENT_ISOLATE": "worktree"}
        run = subprocess.run(
            [sys.executable, "-m", "oh", "run", "pwd; echo isolated > a.txt"],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == str(paths.worktrees_dir(str(workspace)) / "oh-cli")
        shared = _oh("write", "b.txt", "--content", "shared\n", cwd=workspace)
        assert shared.returncode == 0, shared.stderr
        assert (workspace / "a.txt").read_text() == "a\n" and (workspace / "b.txt").read_text() == "shared\n"
    finally:
        _oh("stop", cwd=workspace)
    merged = _oh("merge", "oh-cli", cwd=workspace)
    assert merged.returncode == 0, merged.stderr
    assert (workspace / "a.txt").read_text() == "isolated\n"


async def test_merge_into_your_uncommitted_change_of_that_file_changes_nothing(make_backend, workspace, oh_home):
    _repo(workspace, {"a.txt": "a\n"})
    b = await _backend(make_backend, workspace)
    async with await Client.connect(_url(b), TOKEN, name="eve") as c:
        assert (await c.write("a.txt", "agent\n")).kind == "write"
        assert (await c.write("new.txt", "agent's new file\n")).kind == "write"
    (workspace / "a.txt").write_text("yours, not committed\n")
    (workspace / "new.txt").write_text("yours, untracked\n")
    head = _git(workspace, "rev-parse", "HEAD")
    refused = _oh("merge", "eve", cwd=workspace)
    assert refused.returncode == 1 and "Nothing was merged" in refused.stderr, refused.stderr
    assert (workspace / "a.txt").read_text() == "yours, not committed\n"
    assert (workspace / "new.txt").read_text() == "yours, untracked\n"
    assert _git(workspace, "rev-parse", "HEAD") == head
    assert (paths.worktrees_dir(str(workspace)) / "eve" / "a.txt").read_text() == "agent\n"  # kept


async def test_the_users_own_global_filter_still_applies(make_backend, workspace, oh_home, tmp_path, monkeypatch):
    """Only the repository's configuration is distrusted: a filter of the user's global configuration (git-lfs's
    kind) still cleans what `oh merge` commits."""
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text('[filter "up"]\n\tclean = tr a-z A-Z\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    _repo(workspace, {".gitattributes": "*.up filter=up\n", "a.txt": "a\n"})
    b = await _backend(make_backend, workspace)
    async with await Client.connect(_url(b), TOKEN, name="lfs") as c:
        assert (await c.write("x.up", "abc\n")).kind == "write"
    merged = _oh("merge", "lfs", cwd=workspace)
    assert merged.returncode == 0, merged.stderr
    assert _git(workspace, "show", "HEAD:x.up") == "ABC\n"
