"""Path attacks: `..`, file and directory symlink escapes, dangling symlinks, absolute paths outside
the roots, devices (/dev/zero, /dev/random), a FIFO in the workspace, a 2 GiB sparse file. Each is
answered PATH_DENIED (or a clear TOOL_ERROR) quickly — never a hang, never a huge read — and nothing
outside the roots is read, written or created. Run in-process on the local runtime and through a
real backend + headless editor (runtime vscode). Plus: a write SIGKILLed half-way never leaves a torn
file."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oh import sessions
from oh.client import SyncClient
from oh.protocol.errors import ProtocolError
from oh.protocol.events import error_from, parse_action
from oh.runtimes.local import LocalRuntime

from . import helpers
from .conftest import record

SPARSE = 2 * 1024**3
QUICK = 2.0  # seconds: a refusal must not read 2 GiB or wait on a FIFO


@pytest.fixture
def arena(tmp_path: Path):
    """A workspace full of traps, and an `outside` directory that must stay untouched."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET\n")
    (ws / "sub").mkdir()
    (ws / "ok.txt").write_text("inside\n")
    os.symlink(outside / "secret.txt", ws / "link-file")
    os.symlink(outside, ws / "link-dir")
    os.symlink("/dev/zero", ws / "link-dev")
    os.symlink(outside / "created-through-dangling.txt", ws / "dangling")
    os.mkfifo(ws / "fifo")
    with open(ws / "sparse.bin", "wb") as f:
        f.truncate(SPARSE)
    return ws, outside


def _snapshot(root: Path) -> dict[str, tuple]:
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else ""
        out[str(p.relative_to(root))] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, digest)
    return out


DENIED, TOOL = {"PATH_DENIED"}, {"TOOL_ERROR"}


def cases(ws: Path, outside: Path) -> list[tuple[str, str, dict, set[str]]]:
    o = str(outside)
    return [
        # reads
        ("read-dotdot", "read", {"path": "../outside/secret.txt"}, DENIED),
        ("read-deep-dotdot", "read", {"path": "sub/../../outside/secret.txt"}, DENIED),
        ("read-many-dotdot", "read", {"path": "../" * 40 + "etc/passwd"}, DENIED),
        ("read-absolute-outside", "read", {"path": f"{o}/secret.txt"}, DENIED),
        ("read-etc-passwd", "read", {"path": "/etc/passwd"}, DENIED),
        ("read-proc-environ", "read", {"path": "/proc/self/environ"}, DENIED),
        ("read-file-symlink", "read", {"path": "link-file"}, DENIED),
        ("read-dir-symlink", "read", {"path": "link-dir/secret.txt"}, DENIED),
        ("read-symlink-to-dev-zero", "read", {"path": "link-dev"}, DENIED),
        ("read-dev-zero", "read", {"path": "/dev/zero"}, DENIED),
        ("read-dev-random", "read", {"path": "/dev/random"}, DENIED),
        ("read-dev-urandom", "read", {"path": "/dev/urandom"}, DENIED),
        (
            "read-home",
            "read",
            {"path": "~/.bashrc"},
            DENIED | TOOL,
        ),  # local: ~ expands (outside); vscode: a literal "~" dir
        ("read-fifo", "read", {"path": "fifo"}, TOOL),
        ("read-sparse-2gib", "read", {"path": "sparse.bin"}, TOOL),
        ("read-sparse-range", "read", {"path": "sparse.bin", "view_range": [1, 2]}, TOOL),
        ("read-directory", "read", {"path": "sub"}, TOOL),
        (
            "read-nul-byte",
            "read",
            {"path": "ok.txt\x00../../outside/secret.txt"},
            {"BAD_REQUEST", "TOOL_ERROR", "PATH_DENIED"},
        ),
        # writes
        ("write-dotdot", "write", {"path": "../outside/evil.txt", "content": "x"}, DENIED),
        ("write-absolute-outside", "write", {"path": f"{o}/evil2.txt", "content": "x"}, DENIED),
        ("write-through-dir-symlink", "write", {"path": "link-dir/evil3.txt", "content": "x"}, DENIED),
        ("write-new-dirs-through-symlink", "write", {"path": "link-dir/new/deeper/evil.txt", "content": "x"}, DENIED),
        ("write-over-file-symlink", "write", {"path": "link-file", "content": "pwned"}, DENIED),
        ("write-dangling-symlink", "write", {"path": "dangling", "content": "pwned"}, DENIED),
        ("write-dev-null", "write", {"path": "/dev/null", "content": "x"}, DENIED),
        ("write-fifo", "write", {"path": "fifo", "content": "x"}, TOOL),
        ("write-sparse-partial", "write", {"path": "sparse.bin", "content": "x", "start": 1, "end": 2}, TOOL),
        ("write-directory", "write", {"path": "sub", "content": "x"}, TOOL),
        # edits
        ("edit-create-dotdot", "edit", {"path": "../outside/evil4.txt", "command": "create", "file_text": "x"}, DENIED),
        (
            "edit-create-through-dir-symlink",
            "edit",
            {"path": "link-dir/evil5.txt", "command": "create", "file_text": "x"},
            DENIED,
        ),
        ("edit-create-dangling", "edit", {"path": "dangling", "command": "create", "file_text": "x"}, DENIED),
        (
            "edit-replace-file-symlink",
            "edit",
            {"path": "link-file", "command": "str_replace", "old_str": "SECRET", "new_str": "pwned"},
            DENIED,
        ),
        (
            "edit-insert-absolute-outside",
            "edit",
            {"path": f"{o}/secret.txt", "command": "insert", "insert_line": 0, "new_str": "x"},
            DENIED,
        ),
        ("edit-undo-outside", "edit", {"path": "../outside/secret.txt", "command": "undo_edit"}, DENIED),
        ("edit-view-dir-symlink", "edit", {"path": "link-dir", "command": "view"}, DENIED),
        ("edit-view-root", "edit", {"path": "/", "command": "view"}, DENIED),
        ("edit-view-dev-zero", "edit", {"path": "/dev/zero", "command": "view"}, DENIED),
        ("edit-view-fifo", "edit", {"path": "fifo", "command": "view"}, TOOL),
        ("edit-view-sparse", "edit", {"path": "sparse.bin", "command": "view"}, TOOL),
        (
            "edit-replace-sparse",
            "edit",
            {"path": "sparse.bin", "command": "str_replace", "old_str": "a", "new_str": "b"},
            TOOL,
        ),
        ("edit-replace-fifo", "edit", {"path": "fifo", "command": "str_replace", "old_str": "a", "new_str": "b"}, TOOL),
        # a command's working directory
        ("run-cwd-dotdot", "run", {"command": "touch escaped-cwd", "cwd": "../outside"}, DENIED),
        ("run-cwd-dir-symlink", "run", {"command": "touch escaped-cwd2", "cwd": "link-dir"}, DENIED),
        ("run-cwd-root", "run", {"command": "true", "cwd": "/"}, DENIED),
    ]


def _check_untouched(ws: Path, outside: Path, before: dict) -> None:
    assert _snapshot(outside) == before, "something outside the roots changed"
    assert stat.S_ISFIFO((ws / "fifo").lstat().st_mode) and (ws / "sparse.bin").stat().st_size == SPARSE
    assert os.readlink(ws / "dangling") == str(outside / "created-through-dangling.txt")
    assert not (ws / "escaped-cwd").exists()


def _verdict(obs: dict) -> str:
    return obs["extras"]["error_id"] if obs["observation"] == "error" else "ok"


async def test_path_attacks_local_runtime(arena):
    ws, outside = arena
    before = _snapshot(outside)
    rt = LocalRuntime(ws)
    latencies = []
    try:
        for i, (name, kind, args, expected) in enumerate(cases(ws, outside), 1):
            t0 = time.monotonic()
            try:
                action = parse_action({"id": i, "action": kind, "args": args, "timeout": 5})
            except ProtocolError as exc:  # refused by the protocol layer before any runtime sees it
                obs = error_from(exc)
            else:
                obs = await asyncio.wait_for(rt.execute(action, "agent"), 10)
            latencies.append(time.monotonic() - t0)
            assert _verdict(obs) in expected, (name, obs["content"][:300])
            assert latencies[-1] < QUICK, (name, latencies[-1])
            assert obs["content"] and "SECRET" not in obs["content"], name
        # the workspace listing with a FIFO, a device link and a 2 GiB file in it is fine and quick
        t0 = time.monotonic()
        listing = await asyncio.wait_for(
            rt.execute(parse_action({"id": 999, "action": "edit", "args": {"path": ".", "command": "view"}}), "agent"),
            10,
        )
        assert listing["observation"] == "edit" and "fifo" in listing["content"] and time.monotonic() - t0 < QUICK
    finally:
        await rt.close()
    _check_untouched(ws, outside, before)
    record(
        "path_attacks_local",
        {
            "attacks": len(latencies),
            "refused": len(latencies),
            "max_s": round(max(latencies), 4),
            "outside_changed": False,
        },
    )


async def test_devices_are_refused_even_inside_an_allowed_root(arena):
    """With /dev as an extra allowed root, device files are still never opened for reading/writing."""
    ws, _ = arena
    rt = LocalRuntime(ws, [ws, "/dev"])
    try:
        for i, (kind, args) in enumerate(
            [
                ("read", {"path": "/dev/zero"}),
                ("read", {"path": "/dev/random"}),
                ("read", {"path": "/dev/urandom"}),
                ("read", {"path": "link-dev"}),
                ("write", {"path": "/dev/null", "content": "x"}),
                ("edit", {"path": "/dev/zero", "command": "view"}),
                ("edit", {"path": "/dev/zero", "command": "str_replace", "old_str": "a", "new_str": "b"}),
            ],
            1,
        ):
            t0 = time.monotonic()
            obs = await asyncio.wait_for(rt.execute(parse_action({"id": i, "action": kind, "args": args}), "agent"), 10)
            assert _verdict(obs) == "TOOL_ERROR" and "character device" in obs["content"], (kind, args, obs["content"])
            assert time.monotonic() - t0 < QUICK
    finally:
        await rt.close()


def test_path_attacks_through_backend_and_headless_editor(arena, tmp_path):
    """The same attacks over the wire: backend (runtime vscode) -> headless editor process."""
    ws, outside = arena
    before = _snapshot(outside)
    home = tmp_path / "home"
    env = helpers.oh_env(home)
    token = "paths-token-" + "p" * 32
    backend, ready = helpers.start_backend_process(ws, env, token, runtime="vscode")
    editor = None
    latencies = []
    try:
        assert ready["ready"], ready
        session = sessions.read(sessions.path_for(ready["instance_id"], home / "sessions"))
        editor = helpers.EditorProcess(ws, env)
        helpers.wait_editor(session)
        with SyncClient.connect(session.url, token) as c:
            for i, (name, kind, args, expected) in enumerate(cases(ws, outside), 1):
                t0 = time.monotonic()
                obs = c.send({"id": i, "action": kind, "args": args, "timeout": 5}, timeout=15)
                latencies.append(time.monotonic() - t0)
                assert _verdict(obs) in expected, (name, obs.content[:300])
                assert latencies[-1] < QUICK, (name, latencies[-1])
                assert "SECRET" not in obs.content, name
        editor_executed = helpers.backend_status(session)["stats"]
    finally:
        if editor is not None:
            editor.kill()
        helpers.kill_tree(backend.pid)
    _check_untouched(ws, outside, before)
    record(
        "path_attacks_vscode_runtime",
        {
            "attacks": len(latencies),
            "refused": len(latencies),
            "max_s": round(max(latencies), 4),
            "outside_changed": False,
            "backend_stats": editor_executed,
        },
    )


WRITER = r"""
import os, sys, time
# Slow the writer down (1 MiB per write(2), 2 ms apart) so that a kill reliably lands mid-write
# whatever the page cache does; the code under test (temp file, fsync, rename) is unchanged.
_write = os.write
os.write = lambda fd, data: (time.sleep(0.002), _write(fd, bytes(data[: 1 << 20])))[1]
from oh.runtimes.local.files import write_file
from oh.runtimes.local.paths import PathPolicy
ws, size = sys.argv[1], int(sys.argv[2])
rp = PathPolicy(ws).resolve("target.txt")
content = "N" * size
print("go", flush=True)
write_file(rp, content)
print("done", flush=True)
"""


def test_a_write_killed_half_way_never_leaves_a_torn_file(tmp_path):
    """The local runtime's write (temp file, fsync, rename) SIGKILLed at points spread over the write:
    the target is always exactly the old or the new content, and no temp file is left behind."""
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "target.txt"
    old = b"O" * (3 * 1024 * 1024)
    new_size = 32 * 1024 * 1024
    outcomes = {"old": 0, "new": 0, "torn": 0}
    leftovers = 0
    trials = 10
    windows: list[float] = []  # calibration runs: from "go" to the rename
    calibrations = 2
    for trial in range(1 - calibrations, trials + 1):
        target.write_bytes(old)
        before = target.stat().st_ino
        w = subprocess.Popen([sys.executable, "-c", WRITER, str(ws), str(new_size)], stdout=subprocess.PIPE, text=True)
        try:
            assert w.stdout.readline().strip() == "go"
            t0 = time.monotonic()
            if trial <= 0:  # calibration run
                helpers.wait_until(lambda: target.stat().st_ino != before, 10, 0.001, "the rename")
                windows.append(time.monotonic() - t0)
                assert w.stdout.readline().strip() == "done"
                w.wait(timeout=10)
                continue
            window = min(windows)  # the shorter one: a busy machine only makes later writes slower
            # kills spread evenly over the write, the last ones after the rename
            time.sleep(window * (trial - 0.5) / (trials - 2))
            w.send_signal(signal.SIGKILL)
            w.wait(timeout=10)
        finally:
            helpers.kill_tree(w.pid)
        data = target.read_bytes()
        if data == old:
            outcomes["old"] += 1
        elif len(data) == new_size and data.count(b"N") == new_size:
            outcomes["new"] += 1
        else:
            outcomes["torn"] += 1
        for tmp in ws.glob(".oh-*.tmp"):
            leftovers += 1
            tmp.unlink()
    assert outcomes["torn"] == 0, outcomes
    assert outcomes["old"] + outcomes["new"] == trials
    assert outcomes["old"] >= trials // 2, outcomes  # most kills really landed before the rename
    assert leftovers == 0, "a killed writer left its temp file in the workspace"
    record(
        "torn_write_trials",
        {
            **outcomes,
            "trials": trials,
            "killed_before_rename": outcomes["old"],
            "bytes": new_size,
            "write_window_s": round(window, 3),
            "temp_files_left_by_killed_writers": leftovers,
        },
    )
