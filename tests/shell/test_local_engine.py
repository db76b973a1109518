"""The local runtime on the engine, in-process (issue 17): the fallback note said once in the
observations, extra shells inherit the user's shell and the main shell's exports, `--clean-shell`."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from oh.runtimes.local import LocalRuntime
from runtimes.conftest import Harness, code, meta

from .drivers import oh, oh_env
from .home import NOTES, make_home, shell_env

SHELLS = [s for s in ("bash", "zsh") if shutil.which(s)]


@pytest.mark.parametrize("variant", ["exit", "syntax"])
async def test_the_note_is_said_once_in_the_observations(tmp_path, workspace, variant):
    env = shell_env(make_home(tmp_path, variant), "bash")
    rt = LocalRuntime(workspace, env=env, shell_startup_timeout=30)
    h = Harness(rt)
    try:
        obs = await h.run("echo one")
        assert obs["content"] == "one\n" and NOTES[variant] in meta(obs)["prefix"], meta(obs)
        obs = await h.run("echo two")
        assert obs["content"] == "two\n" and NOTES[variant] not in (meta(obs)["prefix"] or "")
        obs = await h.run("exit 4")  # a new shell starts, its rc fails the same way: not said again
        assert code(obs) == 4 and "The shell exited with code 4" in meta(obs)["suffix"]
        obs = await h.run("echo three")
        assert obs["content"] == "three\n" and NOTES[variant] not in (meta(obs)["prefix"] or "")
    finally:
        await rt.close()


@pytest.mark.parametrize("shell", SHELLS)
async def test_extra_shells_and_jobs_run_the_users_shell_with_the_main_exports(tmp_path, workspace, shell):
    env = shell_env(make_home(tmp_path), shell)
    rt = LocalRuntime(workspace, env=env)
    h = Harness(rt)
    try:
        assert code(await h.run("export MAIN_ONLY='a b'; cd /")) == 0
        obs = await h.run("sleep 3; echo main-done", timeout=0.5)
        assert code(obs) == -1  # still running: the next command gets an extra shell
        obs = await h.run(
            'echo "[$MAIN_ONLY] $PWD"; fixture_function extra; echo ${ZSH_VERSION:+zsh}${BASH_VERSION:+bash}'
        )
        assert obs["content"] == f"[a b] /\nfunction works extra\n{shell}\n", obs["content"]
        assert meta(obs).get("job_id")
        started = await h.run('echo "job sees [$MAIN_ONLY]"; fixture-tool', background=True)
        jid = meta(started)["job_id"]
        done = await h.do("job", op="wait", job_id=jid, timeout=20)
        assert done["content"] == "job sees [a b]\nfixture tool ran\n", done
    finally:
        await rt.close()


async def test_oh_start_clean_shell(tmp_path, workspace):
    env = oh_env(make_home(tmp_path), "bash", tmp_path / "ohhome")
    p = oh(
        env,
        workspace,
        "start",
        "--detach",
        "--json",
        "--runtime",
        "local",
        "--no-open",
        "--clean-shell",
        "--workspace",
        str(workspace),
    )
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    try:
        p = oh(env, workspace, "run", "--", "type fixture_function >/dev/null 2>&1 || echo clean; [ -t 1 ] && echo tty")
        assert (p.returncode, p.stdout) == (0, "clean\ntty\n"), p.stderr
    finally:
        oh(env, workspace, "stop", info["instance_id"])
    p = oh(
        env, workspace, "start", "--detach", "--json", "--runtime", "local", "--no-open", "--workspace", str(workspace)
    )
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    try:
        p = oh(env, workspace, "run", "--", "fixture_function default")
        assert (p.returncode, p.stdout) == (0, "function works default\n"), p.stderr
    finally:
        oh(env, workspace, "stop", info["instance_id"])


async def test_wrap_argv_prefixes_the_final_shell_argv(tmp_path, workspace):
    """ptyproc.spawn is the one place the shell's argv/env are final; a wrapper (a sandbox's `bwrap ... --`)
    gets both and its argv is what runs, on the same pty, with the private command pipe."""
    from oh.runtimes.local.engine import PtyShell

    seen: list = []

    def wrap(argv: list[str], env: dict[str, str]) -> list[str]:
        seen.append((list(argv), env.get("TERM")))
        return [shutil.which("env") or "/usr/bin/env", "OH_WRAPPED=yes", *argv]

    env = shell_env(make_home(tmp_path), "bash")
    shell = PtyShell(str(workspace), env, str(tmp_path / "run.sh"), 10000, wrap_argv=wrap)
    try:
        await shell.start()
        cmd = shell.submit('echo "wrapped=$OH_WRAPPED"; [ -t 0 ] && echo tty; fixture_function x')
        await asyncio.wait_for(cmd.finished.wait(), 30)
        assert (cmd.take_output(), cmd.exit_code) == ("wrapped=yes\ntty\nfunction works x\n", 0)
    finally:
        await shell.kill()
    ((argv, term),) = seen
    assert argv[0] == env["SHELL"] and "--rcfile" in argv and argv[-1] == "-i" and term == "xterm-256color"


HOOK_REMOVALS = {
    "bash": ["unset PROMPT_COMMAND", "PROMPT_COMMAND=()", "PROMPT_COMMAND='true'", "unset -v PROMPT_COMMAND; set -e"],
    "zsh": ["precmd_functions=()", "unset precmd_functions", "precmd() { true; }; precmd_functions=(precmd)"],
}


@pytest.mark.parametrize(
    "shell,removal", [(s, r) for s in SHELLS for r in HOOK_REMOVALS[s]], ids=lambda v: v.replace(" ", "_")
)
async def test_a_command_that_removes_the_prompt_hook_still_ends(tmp_path, workspace, shell, removal):
    """The end marker comes from our prompt hook: a command that unsets or replaces it (an agent "cleaning" its
    prompt) must still end with its status, and so must the commands after it; before the hook was put back
    after each command, such a command ran until its timeout."""
    rt = LocalRuntime(workspace, env=shell_env(make_home(tmp_path), shell), shell_startup_timeout=30)
    h = Harness(rt)
    try:
        obs = await h.run(f"{removal}; echo removed; (exit 3)", timeout=20)
        assert code(obs) == 3 and obs["content"] == "removed\n", obs
        obs = await h.run("echo after", timeout=20)
        assert code(obs) == 0 and obs["content"] == "after\n", obs
        assert code(await h.run("set +e; false", timeout=20)) == 1
    finally:
        await rt.close()
