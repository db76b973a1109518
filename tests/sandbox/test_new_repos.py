"""A repository the agent creates inside the sandbox is protected from its next command on (issue 27), with a
real ``LocalRuntime`` whose agent shell runs in real bash in real bubblewrap: the shell is restarted before
the next command (its directory and exports kept) and the new repository's hooks and config are read-only
there; the note names hooks the creating command planted. Nested repositories that existed at start, and one
whose ``.git`` is a ``gitdir:`` file, are protected too."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from oh.runtimes.local import LocalRuntime
from sandboxed import needs_bwrap
from waiting import poll_until

from .test_confinement import make_box, run, runtime


@pytest.fixture
def box(tmp_path: Path) -> dict[str, Any]:
    return make_box(tmp_path)


pytestmark = [
    needs_bwrap,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.timeout(120),
]


def _watching(rt: LocalRuntime) -> None:
    """The repository watch finished its first walk (a thread started with the first shell)."""
    poll_until(lambda: rt.sandbox.repo_watch is not None and rt.sandbox.repo_watch.ready, 20, "the first walk", 0.02)


def _prefix(obs: dict[str, Any]) -> str:
    return obs["extras"]["metadata"].get("prefix") or ""


async def test_git_init_then_the_next_command_cannot_write_its_hooks(box):
    ws = box["ws"]
    rt = runtime(box)
    try:
        obs = await run(rt, "echo first")
        _watching(rt)
        obs = await run(
            rt,
            "git init -q sub && echo evil > sub/.git/hooks/pre-commit && export KEEP=kept && cd sub && echo made",
        )
        assert "made" in obs["content"], obs
        hook = ws / "sub" / ".git" / "hooks" / "pre-commit"
        config = ws / "sub" / ".git" / "config"
        before = config.read_text()
        obs = await run(rt, "echo evil2 > .git/hooks/pre-commit; echo '[core]' >> .git/config; echo $KEEP; pwd")
        assert hook.read_text() == "evil\n", obs  # the first command's write stays: the note says so
        assert config.read_text() == before, obs
        assert "kept" in obs["content"] and str(ws / "sub") in obs["content"], obs
        said = _prefix(obs)
        assert "A new git repository appeared (sub/.git) that this shell did not protect" in said, said
        assert "restarted" in said, said
        assert "sub/.git/hooks/pre-commit" in said, said
        # said once: the next command runs in the same (restarted) shell
        obs = await run(rt, "echo evil3 > .git/hooks/new-hook; ls .git/hooks | grep -c new-hook")
        assert "A new git repository" not in _prefix(obs) and not (hook.parent / "new-hook").exists(), obs
        # git itself still works in the new repository
        obs = await run(rt, "git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x && echo committed")
        assert "committed" in obs["content"], obs
    finally:
        await rt.close()


async def test_repositories_nested_at_start_and_behind_a_gitdir_file_are_protected(box):
    ws = box["ws"]
    rt = runtime(box, level="off")
    try:
        await run(rt, "git init -q deep/a/repo && mkdir gd && git init -q --separate-git-dir=gd/x.git linked")
    finally:
        await rt.close()
    assert (ws / "linked" / ".git").is_file()
    rt = runtime(box)
    try:
        await run(rt, "echo first")
        _watching(rt)
        obs = await run(
            rt,
            "echo evil > deep/a/repo/.git/hooks/pre-commit; echo evil > gd/x.git/hooks/pre-commit; "
            "git init -q later/r; mkdir -p m && mv later m/; echo done",
        )
        assert "done" in obs["content"], obs
        assert not (ws / "deep" / "a" / "repo" / ".git" / "hooks" / "pre-commit").exists(), obs
        assert not (ws / "gd" / "x.git" / "hooks" / "pre-commit").exists(), obs
        # a repository moved in with its parent directory is noticed too
        obs = await run(rt, "echo evil > m/later/r/.git/hooks/pre-commit; echo done")
        assert not (ws / "m" / "later" / "r" / ".git" / "hooks" / "pre-commit").exists(), obs
        # a protected git directory renamed away and made again at the same path is a new one (its inode)
        obs = await run(rt, "mv deep/a/repo/.git deep/a/repo/.g && git init -q deep/a/repo && echo remade")
        assert "remade" in obs["content"], obs
        obs = await run(rt, "echo evil > deep/a/repo/.git/hooks/pre-commit; echo done")
        assert not (ws / "deep" / "a" / "repo" / ".git" / "hooks" / "pre-commit").exists(), obs
    finally:
        await rt.close()
