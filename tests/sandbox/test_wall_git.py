"""git's own files are read-only in the sandbox (issue 36, item 3; docs/security.md §11.3).

A real ``LocalRuntime`` runs the agent's commands in real bash in real bubblewrap; the agent tries to plant what
would make the user's next git command run its code (a ``commondir`` naming a git directory it controls, a
``config.worktree``, an alternates file, a hook, a submodule's git directory), then the USER runs real ``git status``
and ``git commit`` outside: the marker that the agent's code would make stays absent. The agent's own ``git add``
and ``git commit`` still work. And git's documented repository layout (gitrepository-layout(5), read from the man
page where it is installed) is held against what the sandbox binds: every entry is protected or named here as
safe to write, with the reason."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from oh.runtimes.local.sandbox import GIT_PLACEHOLDERS, GIT_PROTECTED
from sandboxed import needs_bwrap

from .test_confinement import make_box, run, runtime

pytestmark = [
    needs_bwrap,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.timeout(120),
]

USER = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}


def user_git(ws: Path, *args: str) -> subprocess.CompletedProcess:
    """The user's own git, outside the sandbox, after the agent is done."""
    env = {**os.environ, **USER, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(ws.parent / "userhome")}
    return subprocess.run(["git", "-C", str(ws), *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def box(tmp_path: Path) -> dict[str, Any]:
    b = make_box(tmp_path)
    ws = b["ws"]
    (tmp_path / "userhome").mkdir()
    assert user_git(ws, "init", "-q").returncode == 0
    (ws / "f.txt").write_text("one\n")
    assert user_git(ws, "add", "f.txt").returncode == 0
    assert user_git(ws, "commit", "-qm", "one").returncode == 0
    # sparse-checkout and worktree users have it on: config.worktree is read then
    assert user_git(ws, "config", "extensions.worktreeConfig", "true").returncode == 0
    return b


PLANT = r"""
M={marker}
mkdir -p evil/hooks evil/objects evil/refs
printf '#!/bin/sh\necho "$0" >> %s\n' "$M" > evil/run.sh; chmod +x evil/run.sh
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = %s\n\thooksPath = %s\n' \
  "$PWD/evil/run.sh" "$PWD/evil/hooks" > evil/config
cp evil/run.sh evil/hooks/pre-commit; cp evil/run.sh evil/hooks/post-commit; cp evil/run.sh evil/hooks/post-index-change
echo "$PWD/evil" > .git/commondir 2>/dev/null || echo no-commondir
printf '[core]\n\tfsmonitor = %s\n' "$PWD/evil/run.sh" > .git/config.worktree 2>/dev/null || echo no-config-worktree
mkdir -p .git/objects/info 2>/dev/null
echo "$PWD/evil/objects" > .git/objects/info/alternates 2>/dev/null || echo no-alternates
cp evil/run.sh .git/hooks/pre-commit 2>/dev/null || echo no-hook
mkdir -p .git/modules/sub 2>/dev/null && cp evil/config .git/modules/sub/config 2>/dev/null || echo no-module
mkdir -p .git/worktrees/w 2>/dev/null && echo "$PWD/evil" > .git/worktrees/w/commondir 2>/dev/null || echo no-worktree
echo '* filter=evil' > .git/info/attributes 2>/dev/null || echo no-attributes
mv .git/commondir .git/x 2>/dev/null; ln -s "$PWD/evil/config" .git/config.worktree.new 2>/dev/null
mv -f .git/config.worktree.new .git/config.worktree 2>/dev/null || echo no-rename
echo planted
"""


async def test_what_the_agent_plants_in_git_runs_nothing_at_the_users_next_git_command(box):
    ws, marker = box["ws"], box["outside"] / "marker"
    rt = runtime(box)
    try:
        obs = await run(rt, PLANT.format(marker=marker), timeout=60)
        said = obs["content"]
        assert "planted" in said, said
        for refused in ("no-commondir", "no-config-worktree", "no-alternates", "no-hook", "no-module", "no-rename"):
            assert refused in said, (refused, said)
        # the agent's own git still works: add and commit (index.lock, objects, refs, logs)
        obs = await run(rt, "echo two >> f.txt && git -c user.email=a@b -c user.name=a commit -qam two && echo ok")
        assert "ok" in obs["content"], obs["content"]
    finally:
        await rt.close()
    assert (ws / ".git" / "commondir").read_text() == ".\n"  # the placeholder oh made, unchanged
    assert (ws / ".git" / "config.worktree").read_text() == ""
    assert not (ws / ".git" / "objects" / "info" / "alternates").exists()
    # the user's own git, outside: status, a commit (hooks), the log
    status = user_git(ws, "status", "--short")
    assert status.returncode == 0, status.stderr
    (ws / "g.txt").write_text("user\n")
    assert user_git(ws, "add", "g.txt").returncode == 0
    done = user_git(ws, "commit", "-qm", "user")
    assert done.returncode == 0, done.stderr
    assert user_git(ws, "log", "--format=%s").stdout.split() == ["user", "two", "one"]
    assert user_git(ws, "rev-parse", "--git-common-dir").stdout.strip() == str(ws / ".git")
    assert not marker.exists(), marker.read_text()


async def test_a_gitdir_file_is_read_only(box, tmp_path):
    """A workspace whose .git is a `gitdir:` file (a linked worktree, a submodule): the agent cannot point it at a
    git directory of its own."""
    ws = box["ws"]
    linked = tmp_path / "ws2"
    assert user_git(ws, "worktree", "add", "-q", str(linked)).returncode == 0
    pointer = (linked / ".git").read_text()
    box2 = dict(box, ws=linked)
    rt = runtime(box2)
    try:
        obs = await run(
            rt, "mkdir -p evil && echo 'gitdir: evil' > .git 2>/dev/null || echo refused; rm -f .git || echo kept"
        )
        assert "refused" in obs["content"] and "kept" in obs["content"], obs["content"]
    finally:
        await rt.close()
    assert (linked / ".git").read_text() == pointer


# ------------------------------------------------------------------------------ the documented layout
# gitrepository-layout(5) of git 2.39 (used where the man page is not installed; where it is, its list must be
# a subset of this one: a newer git's new entry fails the test until it is classified).
LAYOUT: dict[str, str] = {
    "objects": "writable: the agent's commits write objects (loose and packs)",
    "objects/[0-9a-f][0-9a-f]": "writable: loose objects, content-addressed (a forged one has another name)",
    "objects/pack": "writable: packs, content-addressed",
    "objects/info": "protected",
    "objects/info/packs": "protected",
    "objects/info/alternates": "protected",
    "objects/info/http-alternates": "protected",
    "refs": "writable: the agent's commits move branches (no program, no path git follows)",
    "refs/heads/name": "writable: branches",
    "refs/tags/name": "writable: tags",
    "refs/remotes/name": "writable: remote-tracking branches",
    "refs/replace/<obj-sha1>": "writable: in refs/ (what `git log` shows, not what runs); docs/security.md §11.3",
    "packed-refs": "writable: refs (a file at the top, written by rename)",
    "HEAD": "writable: a ref (written by rename; the agent's checkout)",
    "config": "protected",
    "config.worktree": "protected",
    "branches": "writable: a legacy remote's URL (a URL, no program: git's ext:: transport is off by default)",
    "hooks": "protected",
    "common": "writable: data shared by worktrees (nothing git runs or follows)",
    "index": "writable: the staging area (the agent's `git add`; written by rename from index.lock)",
    "sharedindex.<SHA-1>": "writable: split index data",
    "info": "protected",
    "info/refs": "protected",
    "info/grafts": "protected",
    "info/exclude": "protected",
    "info/attributes": "protected",
    "info/sparse-checkout": "protected",
    "remotes": "writable: a legacy remote's URL (see branches)",
    "logs": "writable: reflogs (the agent's commits append)",
    "logs/refs/heads/name": "writable: reflogs",
    "logs/refs/tags/name": "writable: reflogs",
    "shallow": "writable: shallow clone boundary (commit ids)",
    "commondir": "protected",
    "modules": "protected",
    "worktrees": "protected",
    "worktrees/<id>/gitdir": "protected",
    "worktrees/<id>/locked": "protected",
    "worktrees/<id>/config.worktree": "protected",
}


def _documented() -> list[str]:
    page = Path("/usr/share/man/man5/gitrepository-layout.5.gz")
    if not page.exists():
        return list(LAYOUT)
    text = gzip.decompress(page.read_bytes()).decode("utf-8", "replace")
    names = re.findall(r"^\.PP\n(\S[^\n]*)$", text, re.M)
    out = []
    for n in names:
        n = re.sub(r"\\f[BRIP]", "", n).replace("\\-", "-").replace("\\&", "")
        out.append(n.strip())
    return [n for n in out if n and not n.startswith(".")]


def _covered(entry: str) -> bool:
    return any(entry == p or entry.startswith(p + "/") for p in GIT_PROTECTED)


def test_every_documented_entry_is_protected_or_named_safe():
    documented = _documented()
    assert len(documented) >= 30, documented  # the man page was read
    unknown = [e for e in documented if e not in LAYOUT]
    assert unknown == [], f"classify these gitrepository-layout entries in LAYOUT: {unknown}"
    for entry, verdict in LAYOUT.items():
        if verdict == "protected":
            assert _covered(entry), f"{entry} is meant protected but GIT_PROTECTED does not cover it"
        else:
            assert verdict.startswith("writable: ") and not _covered(entry), (entry, verdict)
    assert set(GIT_PLACEHOLDERS) == set(GIT_PROTECTED) - {"config"}  # every protected name exists once bound


def _concrete(entry: str) -> str:
    return (
        entry.replace("[0-9a-f][0-9a-f]", "ab")
        .replace("<obj-sha1>", "0" * 40)
        .replace("<SHA-1>", "0" * 40)
        .replace("<id>", "w")
        .replace("name", "agent")
    )


async def test_each_documented_entry_is_writable_in_the_sandbox_exactly_when_named_safe(box):
    """The agent tries to create (or append to) each entry of the layout; the host shows the write exactly
    where LAYOUT says writable."""
    ws = box["ws"]
    git = ws / ".git"
    entries = {e: _concrete(e) for e in LAYOUT}
    script = []
    for entry, rel in entries.items():
        path = f".git/{rel}"
        # a directory entry: a file created inside it; a file entry: appended to (created if missing)
        if os.path.isdir(git / rel) or entry in ("objects/[0-9a-f][0-9a-f]", "branches", "remotes", "common"):
            script.append(f"mkdir -p {path} 2>/dev/null; echo x > {path}/oh-probe 2>/dev/null")
        else:
            script.append(f"mkdir -p $(dirname {path}) 2>/dev/null; echo x >> {path} 2>/dev/null")
    rt = runtime(box)
    try:
        await run(rt, "true")  # the shell is up: oh made its placeholders
        before = {e: _state(git / rel) for e, rel in entries.items()}
        await run(rt, "; ".join(script) + "; echo done", timeout=60)
    finally:
        await rt.close()
    for entry, rel in entries.items():
        changed = _state(git / rel) != before[entry]
        if LAYOUT[entry] == "protected":
            assert not changed, f"{entry}: the agent wrote {git / rel}"
        else:
            assert changed, f"{entry}: the agent could not write {git / rel} ({LAYOUT[entry]})"


def _state(p: Path) -> Any:
    if p.is_dir():
        return ("d", sorted(os.listdir(p)))
    if p.exists():
        return ("f", p.read_bytes())
    return None


async def test_a_nested_gitdir_file_is_read_only(box):
    """A linked worktree inside the workspace (a submodule's checkout is the same): its `.git` file names where git
    finds everything; the agent cannot point it at a git directory of its own."""
    from waiting import poll_until

    ws = box["ws"]
    assert user_git(ws, "worktree", "add", "-q", str(ws / "inner")).returncode == 0
    pointer = (ws / "inner" / ".git").read_text()
    rt = runtime(box)
    try:
        await run(rt, "echo first")
        poll_until(lambda: rt.sandbox.repo_watch is not None and rt.sandbox.repo_watch.ready, 20, "the first walk")
        obs = await run(
            rt, "echo 'gitdir: ../evil' > inner/.git 2>/dev/null || echo refused; rm -f inner/.git || echo kept"
        )
        assert "refused" in obs["content"] and "kept" in obs["content"], obs["content"]
    finally:
        await rt.close()
    assert (ws / "inner" / ".git").read_text() == pointer
