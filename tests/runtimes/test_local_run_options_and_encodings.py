"""Local-runtime options (docs/protocol.md §3.1, §3.4): reset, env, max_output, BUSY /
NO_COMMAND, metadata, shell keys, working directories, encodings, base64, SDK editor texts,
long names, listings that stay inside the allowed roots, hard links. Real bash, real files."""

from __future__ import annotations

import asyncio
import base64
import os
import time

import pytest

from oh.protocol.events import parse_action
from oh.runtimes.base import AgentContext
from oh.runtimes.local import LocalRuntime

from .conftest import Harness, act, code, error_id, meta


async def test_reset_kills_what_runs_and_gives_a_fresh_shell_in_the_workdir(h: Harness, workspace, tmp_path):
    marker = tmp_path / "late"
    obs = await h.run(f"export KEEP=1; cd /; (sleep 2; touch {marker}) & sleep 30", timeout=0.3)
    assert code(obs) == -1
    old_pid = meta(obs)["pid"]
    obs = await h.run("", reset=True)
    assert code(obs) == 0 and obs["content"] == "Terminal session has been reset."
    assert meta(obs)["working_dir"] == str(workspace)
    new_pid = meta(obs)["pid"]
    assert new_pid > 0 and new_pid != old_pid
    obs = await h.run('echo "[$KEEP]"; pwd')
    assert obs["content"] == f"[]\n{workspace}\n" and meta(obs)["pid"] == new_pid
    await asyncio.sleep(2.3)
    assert not marker.exists()  # the background job died with the old shell's process group


async def test_the_agent_shell_starts_with_default_signal_dispositions(h: Harness):
    """Under `nohup oh start` (or a background start) the agent's shells inherited ignored SIGHUP/SIGINT/SIGQUIT,
    which bash cannot undo: a reset's hang-up then left their jobs running until the SIGKILL."""
    import signal

    ignored = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
    saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in ignored}  # as nohup and `&` leave them
    try:
        obs = await h.run("grep SigIgn /proc/self/status")  # grep: a command the shell started
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    mask = int(obs["content"].split()[-1], 16)
    assert [sig for sig in ignored if mask & (1 << (sig - 1))] == [], obs["content"]


async def test_reset_of_a_shell_that_keeps_forking_leaves_nothing_running(h: Harness, tmp_path):
    """A job forked while the shell is being hung up is no descendant once the shell has died (init adopts
    it), yet it must die with the shell: it keeps the shell's session. (CI once saw a reset's background
    job outlive the old shell; with a loop that forks without pause the first look always missed some.)"""
    marks = tmp_path / "marks"
    marks.mkdir()
    await h.run("true")
    await h.run(f"while :; do (sleep 2; touch {marks}/m$BASHPID) & done", timeout=0.5)
    reset_at = time.time()
    await h.run("", reset=True)
    await asyncio.sleep(2.5)
    assert sorted((p.name, round(p.stat().st_mtime - reset_at, 2)) for p in marks.iterdir()) == []


async def test_reset_then_command_runs_in_the_fresh_shell(h: Harness, workspace):
    await h.run("export X=1; cd /")
    obs = await h.run('echo "[$X]"; pwd', reset=True)
    assert code(obs) == 0 and obs["content"] == f"[]\n{workspace}\n"
    assert meta(obs)["prefix"].startswith("Terminal session has been reset.")


async def test_reset_with_is_input_is_a_bad_request():
    from oh.protocol.errors import ProtocolError

    with pytest.raises(ProtocolError) as exc:
        act("run", command="x", reset=True, is_input=True)
    assert exc.value.error_id == "BAD_REQUEST"


async def test_env_is_exported_and_persists_and_keeps_line_numbers(h: Harness):
    obs = await h.run('echo "$TOKEN_A|$B"', env={"TOKEN_A": "s3cr et'\"$x", "B": "two\nlines"})
    assert obs["content"] == "s3cr et'\"$x|two\nlines\n"
    obs = await h.run('echo "$TOKEN_A"')  # still exported in that shell
    assert obs["content"] == "s3cr et'\"$x\n"
    obs = await h.run("nosuchcommand_xyz", env={"C": "1"})
    # exactly what the interactive shell says for the agent's own command: the exports ran apart from it
    assert obs["content"] == "bash: nosuchcommand_xyz: command not found\n"


async def test_env_names_are_validated():
    from oh.protocol.errors import ProtocolError

    for bad in ({"1X": "v"}, {"A-B": "v"}, {"A": 3}, {"A": "x\x00"}, ["A"]):
        with pytest.raises(ProtocolError) as exc:
            act("run", command="true", env=bad)
        assert exc.value.error_id == "BAD_REQUEST"
        assert "x\x00" not in exc.value.message


async def test_max_output(h: Harness):
    obs = await h.run("head -c 50000 /dev/zero | tr '\\0' a", max_output=0)
    assert obs["content"] == "a" * 50000
    obs = await h.run("head -c 50000 /dev/zero | tr '\\0' a")
    assert "characters truncated" in obs["content"] and len(obs["content"]) < 31000
    obs = await h.run("seq 1 1000", max_output=100)
    assert (
        "characters truncated" in obs["content"]
        and obs["content"].startswith("1\n2\n")
        and obs["content"].endswith("1000\n")
    )


async def test_timeout_zero_means_no_timeout_given(h: Harness):
    action = parse_action({"id": 1, "action": "run", "args": {"command": "echo hi"}, "timeout": 0})
    assert action.timeout is None
    obs = await h.rt.execute(action, "agent-1")
    assert code(obs) == 0 and obs["content"] == "hi\n"


async def test_busy_and_no_command_are_errors_naming_no_tool(workspace):
    rt = LocalRuntime(workspace, max_shells=1)  # no extra shells and no queue: a second command is BUSY
    rt.queue_limit = 0
    try:
        await _busy_and_no_command(Harness(rt))
    finally:
        await rt.close()


async def _busy_and_no_command(h: Harness):
    obs = await h.do("run", command="")
    assert error_id(obs) == "NO_COMMAND"
    await h.run("sleep 30", timeout=0.2)
    obs = await h.do("run", command="echo no")
    assert error_id(obs) == "BUSY" and "execute_bash" not in obs["content"]
    obs = await h.run("", timeout=0.2)
    assert "execute_bash" not in meta(obs)["suffix"] and "empty command ''" in meta(obs)["suffix"]
    obs = await h.run("C-c", is_input=True, timeout=5)
    assert code(obs) == 130


async def test_metadata_is_filled(h: Harness, workspace, tmp_path):
    import getpass
    import socket

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").write_text("#!/bin/sh\n")
    (bindir / "python").chmod(0o755)
    (workspace / "sub").mkdir()
    obs = await h.run(f"cd sub && export PATH={bindir}:$PATH")
    md = meta(obs)
    assert md["working_dir"] == str(workspace / "sub")
    assert md["username"] == getpass.getuser()
    assert md["hostname"] == socket.gethostname().split(".")[0]
    assert md["py_interpreter_path"] == str(bindir / "python")
    assert md["pid"] > 0 and md["exit_code"] == 0


async def test_shared_shell_keys_and_private_shells(rt: LocalRuntime, workspace):
    a = AgentContext("a1", "one", None, "team")
    b = AgentContext("a2", "two", None, "team")
    c = AgentContext("a3", "three")
    h = Harness(rt)
    await h.rt.execute(act("run", command="export SHARED=yes"), a)
    obs = await rt.execute(act("run", command='echo "[$SHARED]"'), b)
    assert obs["content"] == "[yes]\n"
    obs = await rt.execute(act("run", command='echo "[$SHARED]"'), c)
    assert obs["content"] == "[]\n"
    await rt.agent_closed(a)  # a shared shell outlives its agents
    obs = await rt.execute(act("run", command='echo "[$SHARED]"'), b)
    assert obs["content"] == "[yes]\n"
    await rt.agent_closed(c)
    assert "a3" not in rt._terminals and "team" in rt._terminals
    await rt.close_shell("team")
    obs = await rt.execute(act("run", command='echo "[$SHARED]"'), b)
    assert obs["content"] == "[]\n"


async def test_workdir_is_where_the_shell_starts_and_relative_paths_resolve(rt: LocalRuntime, workspace):
    sub = workspace / "pkg"
    sub.mkdir()
    (sub / "f.txt").write_text("in pkg\n")
    ctx = AgentContext("a1", "x", str(sub))
    obs = await rt.execute(act("run", command="pwd"), ctx)
    assert obs["content"] == f"{sub}\n"
    obs = await rt.execute(act("read", path="f.txt"), ctx)
    assert obs["content"] == "in pkg\n"
    obs = await rt.execute(act("write", path="new/g.txt", content="x"), ctx)
    assert obs["observation"] == "write" and (sub / "new" / "g.txt").read_text() == "x"


async def test_legacy_text_encodings_round_trip(h: Harness, workspace):
    p = workspace / "latin.txt"
    p.write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1"))
    obs = await h.do("read", path="latin.txt")
    assert obs["content"] == "caf\xe9 cr\xe8me br\xfbl\xe9e\n"
    obs = await h.do("edit", path="latin.txt", command="str_replace", old_str="cr\xe8me", new_str="cr\xe8me fra\xeeche")
    assert obs["observation"] == "edit"
    assert p.read_bytes() == "caf\xe9 cr\xe8me fra\xeeche br\xfbl\xe9e\n".encode("latin-1")  # kept its encoding
    await h.do("write", path="latin.txt", content="\xe0 la carte\n")
    assert p.read_bytes() == "\xe0 la carte\n".encode("latin-1")
    await h.do("write", path="explicit.txt", content="\xe9t\xe9\n", encoding="latin-1")
    assert (workspace / "explicit.txt").read_bytes() == b"\xe9t\xe9\n"
    cyr = workspace / "cyr.txt"
    text = "Привет, как дела? Всё хорошо, спасибо.\n"
    cyr.write_bytes(text.encode("cp1251"))
    obs = await h.do("edit", path="cyr.txt", command="view")
    assert "Привет" in obs["content"]


async def test_base64_read_and_write(rt: LocalRuntime, workspace):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    (workspace / "img.png").write_bytes(png)
    action = act("read", path="img.png", encoding="base64")
    obs = await rt.execute(action, "a")
    assert obs["observation"] == "read", obs
    assert base64.b64decode(obs["content"]) == png
    assert obs["extras"]["encoding"] == "base64" and obs["extras"]["mime_type"] == "image/png"
    obs = await rt.execute(act("read", path="img.png"), "a")
    assert obs["extras"]["error_id"] == "TOOL_ERROR" and "base64" in obs["content"]
    obs = await rt.execute(act("read", path="img.png", encoding="auto"), "a")
    assert obs["observation"] == "error"
    obs = await rt.execute(act("edit", path="img.png", command="view"), "a")
    assert obs["extras"]["error_id"] == "TOOL_ERROR" and "is an image" in obs["content"] and "base64" in obs["content"]
    (workspace / "t.txt").write_text("plain\n")
    obs = await rt.execute(act("read", path="t.txt"), "a")
    assert set(obs["extras"]) == {"path", "impl_source"}  # extras keys only when asked
    data = os.urandom(3000)
    obs = await rt.execute(
        act("write", path="deep/er/blob.bin", content=base64.b64encode(data).decode(), encoding="base64"), "a"
    )
    assert obs["observation"] == "write" and (workspace / "deep" / "er" / "blob.bin").read_bytes() == data
    obs = await rt.execute(act("write", path="bad.bin", content="not base64!!", encoding="base64"), "a")
    assert obs["extras"]["error_id"] == "BAD_REQUEST" and not (workspace / "bad.bin").exists()


async def test_edit_has_whole_file_contents_and_sdk_windows(h: Harness, workspace):
    p = workspace / "f.py"
    src = "".join(f"line{i}\n" for i in range(1, 21))
    p.write_text(src)
    obs = await h.do("edit", path="f.py", command="insert", insert_line=10, new_str="NEW")
    after = p.read_text()
    assert obs["extras"]["old_content"] == src and obs["extras"]["new_content"] == after
    # SDK window: lines max(1, 10-3)=7 .. 10+4+1=15, numbered from 7.
    assert "     7\tline7\n" in obs["content"] and "     6\t" not in obs["content"]
    assert (
        "    11\tNEW\n" in obs["content"] and "    15\tline14\n" in obs["content"] and "    16\t" not in obs["content"]
    )
    # str_replace retries with old_str stripped, as the SDK does
    obs = await h.do("edit", path="f.py", command="str_replace", old_str="\n  line15\n\n", new_str="L15")
    assert obs["observation"] == "edit" and "L15\nline16" in p.read_text()
    obs = await h.do("edit", path="f.py", command="undo_edit")
    assert obs["extras"]["new_content"] == after and obs["extras"]["old_content"] != after


async def test_view_clips_like_the_sdk(h: Harness, workspace):
    (workspace / "big.txt").write_text("x" * 40000)
    obs = await h.do("edit", path="big.txt", command="view")
    assert (
        "<response clipped><NOTE>Due to the max output limit, only part of this file has been shown to you."
        in obs["content"]
    )
    assert len(obs["content"]) < 17000


async def test_a_name_over_255_bytes_is_a_tool_error(h: Harness):
    long = "n" * 256
    for kind, args in (
        ("read", {}),
        ("write", {"content": "x"}),
        ("edit", {"command": "view"}),
        ("edit", {"command": "create", "file_text": "x"}),
    ):
        obs = await h.do(kind, path=f"d/{long}", **args)
        assert error_id(obs) == "TOOL_ERROR" and "File name too long" in obs["content"]
    obs = await h.do("write", path="é" * 128, content="x")  # 256 bytes in UTF-8
    assert error_id(obs) == "TOOL_ERROR"


async def test_view_of_a_directory_skips_entries_outside_the_allowed_roots(h: Harness, workspace, tmp_path):
    outside = tmp_path / "outside"
    (outside / "secretdir").mkdir(parents=True)
    (outside / "secret.txt").write_text("s")
    (workspace / "link_out").symlink_to(outside)
    (workspace / "file_out").symlink_to(outside / "secret.txt")
    (workspace / "inside").mkdir()
    (workspace / "link_in").symlink_to(workspace / "inside")
    obs = await h.do("edit", path=".", command="view")
    assert "link_out" not in obs["content"] and "secret" not in obs["content"] and "file_out" not in obs["content"]
    assert f"{workspace}/link_in/" in obs["content"] and f"{workspace}/inside/" in obs["content"]


async def test_hard_linked_files_are_not_read_or_edited(h: Harness, workspace, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("outside secret\n")
    try:
        os.link(outside, workspace / "hl.txt")
    except OSError:
        pytest.skip("hard links not permitted here")
    for kind, args in (
        ("read", {}),
        ("edit", {"command": "view"}),
        ("edit", {"command": "str_replace", "old_str": "outside", "new_str": "x"}),
    ):
        obs = await h.do(kind, path="hl.txt", **args)
        assert error_id(obs) == "PATH_DENIED" and "hard links" in obs["content"], obs
        assert "outside secret" not in obs["content"]
    # A whole-file write replaces the name with a new file: the other link keeps its content.
    obs = await h.do("write", path="hl.txt", content="mine\n")
    assert obs["observation"] == "write"
    assert outside.read_text() == "outside secret\n" and (workspace / "hl.txt").read_text() == "mine\n"
