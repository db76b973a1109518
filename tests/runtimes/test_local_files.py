"""The local runtime's `read`, `write` and path checks (PATH_DENIED), on real files."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import subprocess
import sys
import textwrap

import pytest

from oh.runtimes.local.files import slice_lines

from .conftest import Harness, error_id

TEXT = "l1\nl2\nl3\nl4\nl5\n"


async def test_read_whole_and_ranges(h: Harness, workspace):
    (workspace / "f.txt").write_text(TEXT)
    obs = await h.do("read", path="f.txt")
    assert obs["observation"] == "read" and obs["content"] == TEXT
    assert obs["extras"] == {"path": "f.txt", "impl_source": "oh_aci"}
    assert (await h.do("read", path="f.txt", start=1, end=3))["content"] == "l2\nl3\n"
    assert (await h.do("read", path="f.txt", start=3, end=-1))["content"] == "l4\nl5\n"
    assert (await h.do("read", path=str(workspace / "f.txt"), view_range=[2, 4]))["content"] == "l2\nl3\nl4\n"
    assert (await h.do("read", path="f.txt", view_range=[4, -1]))["content"] == "l4\nl5\n"
    obs = await h.do("read", path="f.txt", view_range=[7, 8])
    assert error_id(obs) == "TOOL_ERROR" and "[1, 5]" in obs["content"]
    obs = await h.do("read", path="f.txt", view_range=[3, 2])
    assert error_id(obs) == "TOOL_ERROR" and "larger or equal" in obs["content"]


def test_slice_lines_edges():
    assert slice_lines(TEXT, 0, -1) == TEXT
    assert slice_lines(TEXT, 4, 100) == "l5\n"
    assert slice_lines(TEXT, 10, -1) == ""
    assert slice_lines("a\r\nb", 1, -1) == "b"


async def test_read_missing_and_directory(h: Harness, workspace):
    obs = await h.do("read", path="nope.txt")
    assert error_id(obs) == "TOOL_ERROR"
    nope = workspace / "nope.txt"
    assert (
        obs["content"]
        == f"Invalid `path` parameter: {nope}. The path {nope} does not exist. Please provide a valid path."
    )
    obs = await h.do("read", path=".")
    assert error_id(obs) == "TOOL_ERROR" and "is a directory" in obs["content"]


async def test_binary_refused_with_the_base64_hint(h: Harness, workspace):
    (workspace / "nul.bin").write_bytes(b"abc\x00def")
    (workspace / "ctl.bin").write_bytes(bytes(range(256)))
    for name in ("nul.bin", "ctl.bin"):
        obs = await h.do("read", path=name)
        assert error_id(obs) == "TOOL_ERROR" and "is a binary file" in obs["content"], obs
        assert 'args.encoding "base64"' in obs["content"]


async def test_big_read_is_exact(h: Harness, workspace):
    line = "0123456789abcdef" * 4 + "\n"
    data = line * (8 * 1024 * 1024 // len(line))  # 8 MiB: goes through the thread path
    (workspace / "big.txt").write_text(data)
    obs = await h.do("read", path="big.txt")
    assert obs["content"] == data


async def test_write_creates_parents_and_keeps_mode(h: Harness, workspace):
    obs = await h.do("write", path="a/b/new.txt", content="hello\n")
    assert obs["observation"] == "write" and obs["extras"] == {"path": "a/b/new.txt"} and obs["content"] == ""
    assert (workspace / "a/b/new.txt").read_text() == "hello\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((workspace / "a/b/new.txt").stat().st_mode) == 0o666 & ~umask

    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o751)
    await h.do("write", path="run.sh", content="#!/bin/sh\necho hi\n")
    assert script.read_text() == "#!/bin/sh\necho hi\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert not [p for p in os.listdir(workspace) if p.startswith(".oh-")]  # no temp file left


async def test_write_line_range(h: Harness, workspace):
    (workspace / "f.txt").write_text(TEXT)
    await h.do("write", path="f.txt", content="X\nY", start=1, end=3)
    assert (workspace / "f.txt").read_text() == "l1\nX\nY\nl4\nl5\n"


async def test_write_to_directory_refused(h: Harness, workspace):
    (workspace / "d").mkdir()
    obs = await h.do("write", path="d", content="x")
    assert error_id(obs) == "TOOL_ERROR" and "directory" in obs["content"]


def test_write_killed_half_way_leaves_old_or_new(workspace):
    """A writer SIGKILLed mid-write never leaves a torn file: the target is old content or new."""
    target = workspace / "t.txt"
    old = "old\n" * 1000
    target.write_text(old)
    new = "n" * (64 * 1024 * 1024)
    code = textwrap.dedent(
        f"""
        import os
        from oh.runtimes.local.files import write_file
        from oh.runtimes.local.paths import ResolvedPath
        real = {str(target)!r}
        orig = os.fsync
        def slow_fsync(fd):
            print("writing", flush=True)
            import time; time.sleep(30)
        os.fsync = slow_fsync
        write_file(ResolvedPath(real, real), "n" * {len(new)})
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "writing\n"  # data written, not yet renamed
    proc.kill()
    proc.wait()
    assert target.read_text() == old


async def test_fifo_socket_and_device_refused_without_hanging(h: Harness, workspace):
    os.mkfifo(workspace / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(workspace / "sock"))
    (workspace / "zero").symlink_to("/dev/zero")
    try:
        for name, kind in (("fifo", "FIFO"), ("sock", "socket")):
            for action, args in (("read", {}), ("write", {"content": "x"})):
                obs = await asyncio.wait_for(h.do(action, path=name, **args), 5)
                assert error_id(obs) == "TOOL_ERROR" and kind in obs["content"], obs
            obs = await asyncio.wait_for(h.do("edit", path=name, command="view"), 5)
            assert error_id(obs) == "TOOL_ERROR"
        # /dev/zero is outside the workspace: denied before its kind even matters
        assert error_id(await asyncio.wait_for(h.do("read", path="zero"), 5)) == "PATH_DENIED"
    finally:
        sock.close()


async def test_device_refused_when_allowed(workspace):
    from oh.runtimes.local import LocalRuntime

    rt = LocalRuntime(workspace, allowed_roots=[workspace, "/dev"])
    try:
        h = Harness(rt)
        obs = await asyncio.wait_for(h.do("read", path="/dev/zero"), 5)
        assert error_id(obs) == "TOOL_ERROR" and "character device" in obs["content"]
        obs = await asyncio.wait_for(h.do("write", path="/dev/null", content="x"), 5)
        assert error_id(obs) == "TOOL_ERROR" and "character device" in obs["content"]
    finally:
        await rt.close()


# --------------------------------------------------------------------------- PATH_DENIED


@pytest.fixture
def outside(tmp_path):
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("secret\n")
    return out


async def test_dotdot_and_absolute_outside_denied(h: Harness, workspace, outside):
    for path in ("../outside/secret.txt", str(outside / "secret.txt"), "sub/../../outside/secret.txt", "/etc/passwd"):
        obs = await h.do("read", path=path)
        assert error_id(obs) == "PATH_DENIED", path
        assert "outside the allowed roots" in obs["content"] and str(workspace) in obs["content"]


async def test_symlink_escapes_denied_and_nothing_written(h: Harness, workspace, outside):
    (workspace / "dirlink").symlink_to(outside, target_is_directory=True)
    (workspace / "filelink").symlink_to(outside / "secret.txt")
    (workspace / "dangling").symlink_to(outside / "new.txt")
    before = sorted(os.listdir(outside))
    attempts = [
        ("read", {"path": "dirlink/secret.txt"}),
        ("read", {"path": "filelink"}),
        ("write", {"path": "dirlink/new.txt", "content": "x"}),
        ("write", {"path": "filelink", "content": "pwned"}),
        ("write", {"path": "dangling", "content": "pwned"}),
        ("write", {"path": "dirlink/deeper/new.txt", "content": "x"}),
        ("edit", {"path": "filelink", "command": "str_replace", "old_str": "secret", "new_str": "pwned"}),
        ("edit", {"path": "dirlink/c.txt", "command": "create", "file_text": "x"}),
        ("edit", {"path": "dirlink", "command": "view"}),
        ("edit", {"path": "filelink", "command": "insert", "insert_line": 0, "new_str": "x"}),
        ("edit", {"path": "filelink", "command": "undo_edit"}),
    ]
    for kind, args in attempts:
        obs = await h.do(kind, **args)
        assert error_id(obs) == "PATH_DENIED", (kind, args, obs["content"])
    assert sorted(os.listdir(outside)) == before
    assert (outside / "secret.txt").read_text() == "secret\n"


async def test_symlink_inside_workspace_is_followed(h: Harness, workspace):
    (workspace / "real.txt").write_text("a\n")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    await h.do("write", path="alias.txt", content="b\n")
    assert (workspace / "alias.txt").is_symlink()  # the link survives the atomic write
    assert (workspace / "real.txt").read_text() == "b\n"


async def test_extra_allowed_root(workspace, outside):
    from oh.runtimes.local import LocalRuntime

    rt = LocalRuntime(workspace, allowed_roots=[workspace, outside])
    try:
        obs = await Harness(rt).do("read", path=str(outside / "secret.txt"))
        assert obs["content"] == "secret\n"
    finally:
        await rt.close()
