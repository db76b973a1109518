"""Issue 11 in the local runtime: concurrent runs in extra shells, background jobs (lifecycle, de-dup,
cancel, output offsets, retention, spool bound), follow-ups by job id, write modes, stat.
Real bash, real files (docs/protocol.md §3.8-§3.9)."""

from __future__ import annotations

import asyncio
import os
import stat as st

import pytest

from oh.runtimes.base import AgentContext
from oh.runtimes.local import LocalRuntime
from oh.runtimes.local.jobs import Spool

from .conftest import Harness, act, code, error_id, meta


@pytest.fixture
async def wide(workspace, oh_home):
    runtime = LocalRuntime(workspace, max_shells=64)
    yield Harness(runtime)
    await runtime.close()


async def job(h: Harness, op: str, timeout: float | None = None, **args):
    obs = await h.rt.execute(act("job", timeout, op=op, **args), h.agent)
    return obs


@pytest.mark.slow
async def test_fifty_concurrent_runs_all_execute_in_the_main_shells_directory_and_exports(wide: Harness, workspace):
    (workspace / "sub").mkdir()
    await wide.run("export SHARED=yes; cd sub")
    results = await asyncio.gather(*(wide.run(f"echo {i} $SHARED; pwd") for i in range(50)))
    for i, obs in enumerate(results):
        assert code(obs) == 0, obs
        assert obs["content"] == f"{i} yes\n{workspace / 'sub'}\n"
    extra = [o for o in results if "job_id" in meta(o)]
    assert extra, "the main shell cannot have run all 50 at once"
    assert all("extra shell" in meta(o)["prefix"] for o in extra)
    # The main shell kept its state; extra shells are gone once their command ended.
    obs = await wide.run("echo $SHARED; pwd")
    assert obs["content"] == f"yes\n{workspace / 'sub'}\n" and "job_id" not in meta(obs)
    for _ in range(100):
        if not wide.rt._terminals["agent-1"].extras:
            break
        await asyncio.sleep(0.05)
    assert not wide.rt._terminals["agent-1"].extras


async def test_an_extra_shells_cd_and_exports_do_not_reach_the_main_shell(h: Harness, workspace):
    slow = asyncio.create_task(h.run("sleep 0.6; pwd"))
    await asyncio.sleep(0.2)
    obs = await h.run("export LEAK=1; cd /; pwd")
    assert obs["content"] == "/\n" and meta(obs)["job_id"]
    assert (await slow)["content"] == f"{workspace}\n"
    obs = await h.run('echo "[$LEAK]"; pwd')
    assert obs["content"] == f"[]\n{workspace}\n"


async def test_follow_ups_name_their_command_and_default_to_the_latest(h: Harness):
    a = await h.run("echo A-start; read line; echo A-got-$line", timeout=0.3)
    b = await h.run("echo B-start; read line; echo B-got-$line", timeout=0.3)
    ja, jb = meta(a)["job_id"], meta(b)["job_id"]
    assert ja != jb and code(a) == -1 and code(b) == -1 and "A-start" in a["content"] and "B-start" in b["content"]
    assert ja in meta(a)["suffix"]
    obs = await h.run("one", is_input=True, job_id=ja, timeout=5)
    assert obs["content"] == "A-got-one\n" and code(obs) == 0
    obs = await h.run("two", is_input=True, timeout=5)  # no id: the most recent running one (B)
    assert "B-got-two" in obs["content"] and code(obs) == 0
    obs = await h.do("run", command="", job_id=ja)
    assert error_id(obs) == "NO_COMMAND" and ja in obs["content"]
    obs = await h.do("run", command="echo new", job_id=jb)
    assert error_id(obs) == "BAD_REQUEST"


async def test_soft_timeout_then_empty_command_continues_the_same_command(h: Harness):
    first = await h.run("echo one; sleep 0.8; echo two", timeout=0.3)
    assert code(first) == -1 and first["content"] == "one\n"
    other = await h.run("echo other")  # meanwhile, in an extra shell
    assert other["content"] == "other\n"
    obs = await h.run("", timeout=5)
    assert obs["content"] == "two\n" and code(obs) == 0


async def test_background_job_lifecycle_and_output_offsets(h: Harness, workspace):
    obs = await h.run("for i in 1 2 3; do echo line$i; sleep 0.1; done; exit 3", background=True)
    jid = meta(obs)["job_id"]
    assert code(obs) == -1 and jid in meta(obs)["suffix"] and obs["content"] == ""
    listed = await job(h, "list")
    assert listed["observation"] == "job" and [j["job_id"] for j in listed["extras"]["jobs"]] == [jid]
    done = await job(h, "wait", 10, job_id=jid)
    rec = done["extras"]["job"]
    assert rec["state"] == "FAILED" and rec["exit_code"] == 3 and done["content"] == "line1\nline2\nline3\n"
    assert done["extras"]["timed_out"] is False and rec["cwd"] == str(workspace)
    part = await job(h, "output", job_id=jid, offset=6)
    assert part["content"] == "line2\nline3\n" and part["extras"]["next_offset"] == 18 and part["extras"]["eof"] is True
    part = await job(h, "output", job_id=jid, offset=0, limit=7)
    assert part["content"] == "line1\nl" and part["extras"]["next_offset"] == 7 and part["extras"]["eof"] is False
    polled = await job(h, "poll", job_id=jid)
    assert polled["extras"]["job"]["state"] == "FAILED" and polled["content"].endswith("line3\n")
    ok = await h.run("true", background=True)
    assert (await job(h, "wait", 10, job_id=meta(ok)["job_id"]))["extras"]["job"]["state"] == "SUCCEEDED"


async def test_wait_times_out_with_the_job_still_running_and_output_waits_for_new_text(h: Harness):
    obs = await h.run("sleep 0.8; echo late", background=True)
    jid = meta(obs)["job_id"]
    w = await job(h, "wait", 0.2, job_id=jid)
    assert w["extras"]["timed_out"] is True and w["extras"]["job"]["state"] == "RUNNING"
    out = await job(h, "output", job_id=jid, offset=0, wait=5)
    assert out["content"] == "late\n"


async def test_identical_running_job_is_returned_unless_forced(h: Harness, workspace):
    one = await h.run("sleep 5", background=True, env={"K": "s3cretV"})
    again = await h.run("sleep 5", background=True, env={"K": "s3cretV"})
    assert meta(again)["job_id"] == meta(one)["job_id"] and "already running" in meta(again)["suffix"]
    other_env = await h.run("sleep 5", background=True, env={"K": "w"})
    forced = await h.run("sleep 5", background=True, env={"K": "s3cretV"}, force=True)
    (workspace / "d").mkdir()
    other_dir = await h.run("sleep 5", background=True, env={"K": "s3cretV"}, cwd="d")
    ids = {meta(o)["job_id"] for o in (one, other_env, forced, other_dir)}
    assert len(ids) == 4
    listed = (await job(h, "list"))["extras"]["jobs"]
    assert all(j["env_names"] == ["K"] for j in listed) and "s3cretV" not in str(listed)


async def test_cancel_interrupts_then_kills_the_process_group(h: Harness, tmp_path):
    marker = tmp_path / "child-alive"
    obs = await h.run(
        f"trap '' INT; echo started; (while :; do touch {marker}; sleep 0.1; done) & sleep 60", background=True
    )
    jid = meta(obs)["job_id"]
    await job(h, "output", job_id=jid, offset=0, wait=5)
    c = await job(h, "cancel", job_id=jid)
    assert c["extras"]["job"]["state"] == "CANCELLED"
    await asyncio.sleep(0.4)
    marker.unlink(missing_ok=True)
    await asyncio.sleep(0.4)
    assert not marker.exists()  # the whole process group died, the ignored C-c notwithstanding
    again = await job(h, "cancel", job_id=jid)
    assert "already ended" in again["content"]


async def test_unknown_job_and_foreground_ids_are_typed_errors(h: Harness):
    obs = await job(h, "poll", job_id="j999")
    assert error_id(obs) == "NO_JOB" and "op list" in obs["content"]
    fg = await h.run("sleep 5", timeout=0.2)
    obs = await job(h, "wait", job_id=meta(fg)["job_id"])
    assert error_id(obs) == "NO_JOB" and "foreground" in obs["content"]


async def test_jobs_are_private_to_their_shell_key(rt: LocalRuntime):
    mine = AgentContext("a1")
    theirs = AgentContext("a2")
    obs = await rt.execute(act("run", command="sleep 5", background=True), mine)
    jid = meta(obs)["job_id"]
    other = await rt.execute(act("job", op="poll", job_id=jid), theirs)
    assert error_id(other) == "NO_JOB"
    assert (await rt.execute(act("job", op="list"), theirs))["extras"]["jobs"] == []


async def test_finished_jobs_expire_after_retention_and_their_spool_goes(workspace, oh_home):
    rt = LocalRuntime(workspace, job_retention=0.2)
    h = Harness(rt)
    try:
        obs = await h.run("echo x", background=True)
        jid = meta(obs)["job_id"]
        await job(h, "wait", 5, job_id=jid)
        spool = rt._terminals["agent-1"].jobs[jid].spool.path
        assert st.S_IMODE(os.stat(spool).st_mode) == 0o600
        assert st.S_IMODE(os.stat(os.path.dirname(spool)).st_mode) == 0o700
        await asyncio.sleep(0.3)
        assert error_id(await job(h, "poll", job_id=jid)) == "NO_JOB"
        assert not os.path.exists(spool)
    finally:
        await rt.close()


async def test_max_shells_bounds_background_jobs_too(workspace, oh_home):
    rt = LocalRuntime(workspace, max_shells=2)
    h = Harness(rt)
    try:
        await h.run("sleep 5", background=True)
        obs = await h.do("run", command="sleep 6", background=True)
        assert error_id(obs) == "BUSY" and "max_shells = 2" in obs["content"]
        assert (await h.run("echo main"))["content"] == "main\n"  # the main shell is still free
    finally:
        await rt.close()


async def test_closing_the_runtime_marks_running_jobs_lost_and_kills_them(workspace, oh_home, tmp_path):
    rt = LocalRuntime(workspace)
    events = []
    rt.on_job_event = lambda name, rec: events.append((name, rec["state"]))
    h = Harness(rt)
    obs = await h.run("sleep 60", background=True)
    pid = meta(obs)["pid"]
    await rt.close()
    assert ("job_started", "RUNNING") in events and ("job_finished", "LOST") in events
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_spool_keeps_absolute_offsets_when_it_drops_the_oldest_half(tmp_path):
    sp = Spool(str(tmp_path / "s.out"), cap=4096)
    for i in range(100):
        sp.write(f"{i:04d}é" * 20)  # multi-byte characters across the cut
    assert sp.size <= 4096 and sp.base > 0 and sp.total == 100 * 20 * 6
    text, start, nxt = sp.read(0, 1 << 20)
    assert start >= sp.base and nxt == sp.total and "\ufffd" not in text
    assert text.endswith("0099é")
    sp.close()
    assert not (tmp_path / "s.out").exists()


# ------------------------------------------------------------------ write modes and stat
async def test_write_modes_create_and_append(h: Harness, workspace):
    obs = await h.do("write", path="new/a.txt", content="one\n", mode="create")
    assert obs["observation"] == "write" and obs["content"] == ""
    obs = await h.do("write", path="new/a.txt", content="two\n", mode="create")
    assert "already exists" in obs["content"] and "not changed" in obs["content"]
    assert (workspace / "new/a.txt").read_text() == "one\n"
    await h.do("write", path="new/a.txt", content="three\n", mode="append")
    assert (workspace / "new/a.txt").read_text() == "one\nthree\n"
    await h.do("write", path="b.txt", content="x", mode="append")  # absent: created
    assert (workspace / "b.txt").read_text() == "x"
    (workspace / "l1.txt").write_bytes("café\n".encode("latin-1"))
    await h.do("write", path="l1.txt", content="thé\n", mode="append")  # in the file's own encoding
    assert (workspace / "l1.txt").read_bytes() == "café\nthé\n".encode("latin-1")
    await h.do("write", path="bin.dat", content="AAE=", mode="append", encoding="base64")
    await h.do("write", path="bin.dat", content="/w==", mode="append", encoding="base64")
    assert (workspace / "bin.dat").read_bytes() == b"\x00\x01\xff"
    from oh.protocol.errors import ProtocolError

    with pytest.raises(ProtocolError) as exc:
        act("write", path="b.txt", content="x", mode="append", start=1)
    assert exc.value.error_id == "BAD_REQUEST"


async def test_append_refuses_directories_and_hard_links(h: Harness, workspace):
    (workspace / "d").mkdir()
    assert error_id(await h.do("write", path="d", content="x", mode="append")) == "TOOL_ERROR"
    (workspace / "orig").write_text("a")
    os.link(workspace / "orig", workspace / "twin")
    assert error_id(await h.do("write", path="twin", content="x", mode="append")) == "PATH_DENIED"
    assert (workspace / "orig").read_text() == "a"


async def test_stat_reports_type_size_mode_and_encoding(h: Harness, workspace, tmp_path):
    (workspace / "t.txt").write_text("héllo\n")
    (workspace / "l.txt").write_bytes("café crème\n".encode("cp1252") * 5)
    (workspace / "b.bin").write_bytes(b"\x00\x01\x02\xff" * 10)
    os.chmod(workspace / "t.txt", 0o640)
    obs = await h.do("stat", path="t.txt")
    ex = obs["extras"]
    assert obs["observation"] == "stat" and ex["exists"] is True and ex["type"] == "file" and ex["size"] == 7
    assert ex["mode"] == "0640" and ex["encoding"] == "utf-8" and ex["mime_type"] == "text/plain" and ex["mtime"] > 0
    enc = (await h.do("stat", path="l.txt"))["extras"]["encoding"]
    from oh.runtimes.local import encoding

    assert (
        enc not in ("utf-8", "binary") and enc == encoding.decode((workspace / "l.txt").read_bytes())[1]
    )  # what read uses
    assert (await h.do("stat", path="b.bin"))["extras"]["encoding"] == "binary"
    d = (await h.do("stat", path="."))["extras"]
    assert d["type"] == "directory" and d["encoding"] is None
    missing = await h.do("stat", path="nope/x")
    assert (
        missing["observation"] == "stat"
        and missing["extras"]["exists"] is False
        and "does not exist" in missing["content"]
    )
    assert error_id(await h.do("stat", path=str(tmp_path / "outside"))) == "PATH_DENIED"


async def test_an_exclusive_run_while_the_main_shell_is_busy_is_busy_not_an_extra_shell(workspace, oh_home):
    """`args.exclusive` (the OpenHands SDK integration sends it): one shell, as the SDK's terminal has."""
    rt = LocalRuntime(workspace)
    h = Harness(rt)
    try:
        soft = await h.run("sleep 3; echo slept", 0.3)
        assert code(soft) == -1  # still running in the main shell
        obs = await h.do("run", command="echo other", exclusive=True)
        assert error_id(obs) == "BUSY" and "previous command is still running" in obs["content"]
        assert not rt._terminals["agent-1"].extras  # no extra shell was started for it
        assert (await h.run("echo shared"))["content"].strip().endswith("shared")  # without it: an extra shell
    finally:
        await rt.close()
