"""The local runtime's `run`: a real persistent bash per agent."""

from __future__ import annotations

import asyncio
import os
import time

import psutil
import pytest

from oh.runtimes.local import LocalRuntime

from .conftest import Harness, code, error_id, meta


async def pid_gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        await asyncio.sleep(0.02)
    return False


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_exit_codes_are_exact(h: Harness):
    obs = await h.run("true")
    assert code(obs) == 0
    pid = meta(obs)["pid"]
    assert code(await h.run("false")) == 1
    assert code(await h.run("(exit 3)")) == 3
    obs = await h.run("definitely-not-a-command-xyz")
    assert code(obs) == 127
    assert obs["success"] is False
    # bash's own message as the user's terminal shows it, without the private file the command is sourced from
    assert obs["content"] == "bash: definitely-not-a-command-xyz: command not found\n"
    # a subshell's exit (even with its own EXIT trap) is not the shell's exit
    obs = await h.run("x=$(exit 4); echo $?; ( trap 'echo sub-exit' EXIT; exit 6 )")
    assert code(obs) == 6 and obs["content"] == "4\nsub-exit\n"
    assert meta(obs)["pid"] == pid and meta(obs)["suffix"] == ""


async def test_output_is_exact_and_stderr_merged_in_order(h: Harness):
    obs = await h.run("echo a; echo b >&2; echo c; printf 'no newline'")
    assert obs["content"] == "a\nb\nc\nno newline"
    assert obs["message"] == "Command `echo a; echo b >&2; echo c; printf 'no newline'` executed with exit code 0."
    assert meta(obs)["suffix"] == "" and meta(obs)["prefix"] == ""


async def test_cwd_and_env_persist(h: Harness, workspace):
    (workspace / "sub").mkdir()
    obs = await h.run("cd sub && export FOO=bar && BAZ=qux")
    assert meta(obs)["working_dir"] == str(workspace / "sub")
    obs = await h.run("pwd; echo $FOO $BAZ")
    assert obs["content"] == f"{workspace / 'sub'}\nbar qux\n"
    assert meta(obs)["pid"] > 0


async def test_multiline_heredoc_and_declare(h: Harness):
    obs = await h.run("cat <<'EOF'\nline 1\n  $NOT_EXPANDED\nEOF\nif true; then\n  echo yes\nfi")
    assert obs["content"] == "line 1\n  $NOT_EXPANDED\nyes\n"
    await h.run("declare -a arr=(x y z); f() { local l=1; echo f$l; }")
    obs = await h.run("echo ${arr[2]} $(f) ${l:-nolocal}")
    assert obs["content"] == "z f1 nolocal\n"


async def test_soft_timeout_wait_then_ctrl_c(h: Harness):
    obs = await h.run("echo start; sleep 30; echo never", timeout=0.5)
    assert code(obs) == -1
    assert obs["content"] == "start\n"
    assert "still running" in meta(obs)["suffix"] and "empty command ''" in meta(obs)["suffix"]
    pid = meta(obs)["pid"]

    obs = await h.run("", timeout=0.3)  # wait for more
    assert code(obs) == -1 and obs["content"] == ""
    assert meta(obs)["prefix"] == "[Below is the output of the previous command.]\n"

    obs = await h.run("echo other")  # the shell is busy: it runs in an extra shell (docs/protocol.md §3.8)
    assert obs["content"] == "other\n" and code(obs) == 0
    assert meta(obs)["job_id"] and "extra shell" in meta(obs)["prefix"]

    obs = await h.run("C-c", timeout=5, is_input=True)
    assert code(obs) == 130
    assert "never" not in obs["content"]
    obs = await h.run("echo after")
    assert obs["content"] == "after\n" and code(obs) == 0
    assert meta(obs)["pid"] == pid  # the shell survived the interrupt


async def test_ctrl_c_aborts_the_whole_command_line(h: Harness):
    obs = await h.run("for i in 1 2 3; do sleep 5; done; echo finished", timeout=0.3)
    assert code(obs) == -1
    obs = await h.run("C-c", timeout=3, is_input=True)
    assert code(obs) == 130 and "finished" not in obs["content"]


async def test_input_reaches_the_running_command(h: Harness):
    obs = await h.run("read x; echo got $x", timeout=0.3)
    assert code(obs) == -1
    obs = await h.run("hello world", timeout=5, is_input=True)
    assert code(obs) == 0
    assert obs["content"] == "got hello world\n"


async def test_input_without_running_command(h: Harness):
    obs = await h.do("run", command="hi", is_input=True)
    assert error_id(obs) == "NO_COMMAND" and obs["content"] == "No previous running command to interact with."
    obs = await h.do("run", command="")
    assert error_id(obs) == "NO_COMMAND" and obs["content"] == "No previous running command to retrieve logs from."


async def test_ctrl_d_ends_input_and_shell_gets_fresh_stdin(h: Harness):
    obs = await h.run("cat", timeout=0.3)
    assert code(obs) == -1
    obs = await h.run("abc", timeout=0.3, is_input=True)
    assert obs["content"] == "abc\n"
    obs = await h.run("C-d", timeout=5, is_input=True)
    assert code(obs) == 0
    obs = await h.run("read z; echo z=$z", timeout=0.3)
    assert code(obs) == -1
    obs = await h.run("q", timeout=5, is_input=True)
    assert obs["content"] == "z=q\n" and code(obs) == 0


async def test_ctrl_z_stops_the_job_and_the_prompt_comes_back(h: Harness):
    # A real terminal with job control (docs/protocol.md §3.4.1): C-z stops the foreground job, the
    # command ends with 128+SIGTSTP, the shell takes the next command, and the job can be killed.
    await h.run("sleep 20", timeout=0.2)
    obs = await h.run("C-z", timeout=5, is_input=True)
    assert code(obs) == 148, obs
    obs = await h.run("jobs -l; kill -9 %1; echo next")
    assert "sleep 20" in obs["content"] and obs["content"].endswith("next\n"), obs


async def test_hard_timeout_kills_group_and_restarts_in_same_cwd(h: Harness, workspace):
    (workspace / "deep").mkdir()
    await h.run("export KEEP=1")
    obs = await h.run("cd deep; sleep 1000 & echo child=$!; sleep 1000", timeout=0.5, blocking=True)
    assert code(obs) == -1
    assert "killed" in meta(obs)["suffix"]
    child = int(obs["content"].strip().split("=")[1])
    old_shell = meta(obs)["pid"]
    assert await pid_gone(child) and await pid_gone(old_shell)
    obs = await h.run("pwd; echo ${KEEP:-reset}")
    assert code(obs) == 0
    assert obs["content"] == f"{workspace / 'deep'}\nreset\n"
    assert meta(obs)["pid"] != old_shell


async def test_exit_restarts_shell_in_same_cwd(h: Harness, workspace):
    (workspace / "d").mkdir()
    obs = await h.run("cd d && X=1 && exit 3")
    assert code(obs) == 3
    assert meta(obs)["working_dir"] == str(workspace / "d")
    assert "shell exited" in meta(obs)["suffix"]
    obs = await h.run("pwd; echo ${X:-unset}")
    assert code(obs) == 0 and obs["content"] == f"{workspace / 'd'}\nunset\n"


async def test_set_e_failure_reports_code_and_recovers(h: Harness):
    obs = await h.run("set -e; echo one; false; echo never")
    assert code(obs) == 1 and obs["content"] == "one\n"
    obs = await h.run("false; echo still-here")
    assert code(obs) == 0 and obs["content"] == "still-here\n"  # the new shell has no set -e


async def test_scripts_own_file_descriptors_do_not_disturb_the_shell(h: Harness, tmp_path):
    log = tmp_path / "fd.log"
    obs = await h.run(f'for fd in 3 4 5 6 7 8 9; do eval "exec $fd>>{log}"; done; echo to-fd >&5')
    assert code(obs) == 0
    obs = await h.run("exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; echo still")
    assert obs["content"] == "still\n" and code(obs) == 0
    assert log.read_text() == "to-fd\n"


async def test_background_job_does_not_block(h: Harness):
    t = time.monotonic()
    obs = await h.run("sleep 100 & echo $!")
    assert time.monotonic() - t < 3
    assert code(obs) == 0
    bg = int(obs["content"])
    assert alive(bg)
    assert code(await h.run("true")) == 0


async def test_truncation_keeps_head_and_tail(workspace):
    rt = LocalRuntime(workspace, max_output_chars=1000)
    try:
        obs = await Harness(rt).run("seq 1 100000")
    finally:
        await rt.close()
    full = "".join(f"{i}\n" for i in range(1, 100001))
    text = obs["content"]
    marker = f"\n[... {len(full) - 1000} characters truncated ...]\n"
    assert text == full[:500] + marker + full[-500:]
    assert code(obs) == 0


async def test_huge_output_is_bounded(h: Harness):
    obs = await h.run("head -c 100000000 /dev/zero | tr '\\0' y; echo; echo END")
    assert code(obs) == 0
    assert len(obs["content"]) < 30100
    assert obs["content"].startswith("yyyy") and obs["content"].endswith("y\nEND\n")
    assert "[... " in obs["content"] and " characters truncated ...]" in obs["content"]


@pytest.mark.slow
async def test_one_gigabyte_output_memory_stays_bounded(h: Harness):
    before = psutil.Process().memory_info().rss
    obs = await h.run("head -c 1000000000 /dev/zero | tr '\\0' y")
    assert code(obs) == 0 and len(obs["content"]) < 30100
    assert psutil.Process().memory_info().rss - before < 200 * 1024 * 1024


async def test_agent_closed_kills_its_processes(rt: LocalRuntime):
    h = Harness(rt, "a")
    obs = await h.run("sleep 1000 & echo $!; sh -c 'echo $$; exec sleep 1000'", timeout=0.5)
    assert code(obs) == -1
    bg, fg = (int(x) for x in obs["content"].split())
    shell = meta(obs)["pid"]
    assert alive(bg) and alive(fg) and alive(shell)
    await rt.agent_closed("a")
    assert await pid_gone(bg) and await pid_gone(fg) and await pid_gone(shell)


async def test_close_kills_every_agent(rt: LocalRuntime):
    pids = []
    for agent in ("a", "b"):
        obs = await Harness(rt, agent).run("sleep 1000 & echo $!")
        pids.append(int(obs["content"]))
    await rt.close()
    for pid in pids:
        assert await pid_gone(pid)


async def test_token_is_scrubbed_from_shell_env(workspace, monkeypatch):
    monkeypatch.setenv("OH_TOKEN", "sekret-from-environ")
    rt = LocalRuntime(workspace)
    rt2 = LocalRuntime(workspace, env={"OH_TOKEN": "sekret-explicit", "PATH": os.environ["PATH"], "KEEP": "kept"})
    try:
        obs = await Harness(rt).run("env; echo ${OH_TOKEN:-unset}")
        assert "sekret" not in obs["content"] and obs["content"].endswith("unset\n")
        obs = await Harness(rt2).run("env; echo ${OH_TOKEN:-unset} $KEEP")
        assert "sekret" not in obs["content"] and obs["content"].endswith("unset kept\n")
    finally:
        await rt.close()
        await rt2.close()


async def test_agents_have_independent_shells(rt: LocalRuntime, workspace):
    (workspace / "a_dir").mkdir()
    a, b = Harness(rt, "a"), Harness(rt, "b")
    obs_a = await a.run("cd a_dir; V=a")
    obs_b = await b.run("pwd; echo ${V:-none}")
    assert obs_b["content"] == f"{workspace}\nnone\n"
    assert meta(obs_a)["pid"] != meta(obs_b)["pid"]
    # a long command for one agent does not block the other
    await a.run("sleep 20", timeout=0.2)
    assert (await b.run("echo free"))["content"] == "free\n"
    assert code(await a.run("C-c", timeout=5, is_input=True)) == 130


async def test_run_cwd_argument(h: Harness, workspace, tmp_path):
    (workspace / "w").mkdir()
    obs = await h.run("pwd", cwd="w")
    assert obs["content"] == f"{workspace / 'w'}\n"
    obs = await h.do("run", command="pwd", cwd=str(tmp_path))
    assert error_id(obs) == "PATH_DENIED"
    obs = await h.do("run", command="pwd", cwd="missing")
    assert error_id(obs) == "TOOL_ERROR"


async def test_concurrent_new_command_beyond_max_shells_with_a_full_queue_is_not_executed(workspace, tmp_path):
    rt = LocalRuntime(workspace, max_shells=1)
    rt.queue_limit = 0  # no run may wait for a free shell
    h = Harness(rt)
    try:
        marker = tmp_path / "ran"
        first = asyncio.create_task(h.run("sleep 0.5; echo first"))
        await asyncio.sleep(0.1)
        second = await h.do("run", command=f"touch {marker}")
        assert error_id(second) == "BUSY" and "NOT executed" in second["content"] and "max_shells" in second["content"]
        obs = await first
        assert obs["content"] == "first\n" and code(obs) == 0
        assert not marker.exists()
    finally:
        await rt.close()


async def test_a_run_beyond_max_shells_waits_for_a_free_shell_within_its_timeout(workspace, tmp_path):
    """Issue 18 item 3: the wait counts toward the run's timeout: one that cannot get a shell in time is
    NOT executed (TIMEOUT, saying so); one that can runs with what is left of its timeout."""
    rt = LocalRuntime(workspace, max_shells=1)
    h = Harness(rt)
    try:
        marker = tmp_path / "ran"
        first = asyncio.create_task(h.run("sleep 1; echo first"))
        await asyncio.sleep(0.1)
        late = await h.do("run", command=f"touch {marker}", timeout=0.3)
        assert error_id(late) == "TIMEOUT" and "NOT executed" in late["content"] and "max_shells" in late["content"], (
            late
        )
        queued = asyncio.create_task(h.run("echo second", timeout=10))
        third = asyncio.create_task(h.run("echo third", timeout=10))
        obs = await first
        assert obs["content"] == "first\n"
        for task, text in ((queued, "second"), (third, "third")):
            obs = await task
            assert obs["content"] == f"{text}\n" and code(obs) == 0, obs
            assert "waited" in meta(obs)["prefix"] and "max_shells" in meta(obs)["prefix"]
        assert not marker.exists()
    finally:
        await rt.close()


async def test_no_change_soft_timeout_default(workspace):
    rt = LocalRuntime(workspace, default_run_timeout=0.4)
    try:
        h = Harness(rt)
        t = time.monotonic()
        obs = await h.run("echo a; sleep 0.2; echo b; sleep 30")
        assert time.monotonic() - t < 5
        assert code(obs) == -1 and obs["content"] == "a\nb\n"
        assert "no new output after 0.4 seconds" in meta(obs)["suffix"]
    finally:
        await rt.close()
