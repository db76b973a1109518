"""The engine host process, driven through its JSON lines (docs/protocol.md §3.4.1): the battery with
a realistic HOME in bash and zsh, the broken rc variants, and the contract's edges."""

from __future__ import annotations

import shutil

import pytest

from .battery import CASES, EXEC_CASES, EXEC_WAIT
from .drivers import HostDriver, run_battery
from .home import NOTES, make_home, shell_env

pytestmark = pytest.mark.timeout(300)
SHELLS = [s for s in ("bash", "zsh") if shutil.which(s)]


@pytest.mark.parametrize("shell", SHELLS)
async def test_battery_through_the_host(tmp_path, workspace, shell):
    home = make_home(tmp_path)
    host = await HostDriver.start(str(workspace), shell_env(home, shell), "--startup-timeout", "30")
    try:
        ready = host.ready[0]
        assert ready["shell"] == shell and ready["rc"] is True, ready
        # the only note of a good rc: the sandbox's level (issue 27: the first observation says it)
        assert ready["note"].startswith("Sandbox: workspace-write") and "\n" not in ready["note"], ready
        # the user's rc files ran: alias, function, exported variable, PATH tool
        out, code, _ = await host.run("fixture_alias; fixture_function x; echo $FIXTURE_VAR; fixture-tool", None, None)
        assert (out, code) == ("alias works\nfunction works x\nfixture-value\nfixture tool ran\n", 0)
        failures = await run_battery(host, shell, workspace / "cases", CASES)  # sandboxed: /tmp is private
        assert not failures, "\n".join(failures)
        # the hooks ran for the user (the live view shows them) but never in an output (checked above)
        view = "".join(host.view)
        assert "fixture banner" in view
        assert ("PROMPT-COMMAND-OUTPUT" if shell == "bash" else "PRECMD-OUTPUT") in view
    finally:
        await host.close()


@pytest.mark.parametrize("variant", ["slow", "exit", "seteu", "syntax"])
@pytest.mark.parametrize("shell", SHELLS)
async def test_broken_rc_files_give_a_working_shell_and_a_note(tmp_path, workspace, shell, variant):
    home = make_home(tmp_path, variant)
    # 3 s: the slow rc sleeps 30 s; the others finish far sooner even on a loaded machine
    host = await HostDriver.start(
        str(workspace), shell_env(home, shell), "--startup-timeout", "30" if variant != "slow" else "3"
    )
    try:
        ready = host.ready[0]
        assert NOTES[variant] in ready["note"], ready
        out, code, _ = await host.run("echo works; echo ${NOT_SET_ANYWHERE:-unset}; false; echo still", None, None)
        assert (out, code) == ("works\nunset\nstill\n", 0)
        if variant in ("slow", "exit"):
            assert ready["shell"] == "bash" and ready["rc"] is False  # the clean shell
        else:
            assert ready["rc"] is True
            out, _, _ = await host.run("fixture_function y", None, None)
            assert out == "function works y\n"
    finally:
        await host.close()


@pytest.mark.parametrize(
    ("shell", "args"),
    [
        ("bash", ()),  # sandboxed (the default level); the rc replaces PROMPT_COMMAND: oh types the boot line
        ("zsh", ()),
        ("bash", ("--sandbox", "off")),
        ("zsh", ("--sandbox", "off")),
        ("bash", ("--clean",)),  # no rc: the boot comes with PROMPT_COMMAND
    ],
)
async def test_exec_of_the_shell_through_the_host(tmp_path, workspace, shell, args):
    """Issue 30: `exec bash` (zsh, `exec "$SHELL" -l`, `exec env X=1 bash`) ends at once with 0 and the new
    shell carries oh's hooks; `exec` of a program, redirect-only `exec`, nested shells are as before."""
    host = await HostDriver.start(
        str(workspace), shell_env(make_home(tmp_path), shell), "--startup-timeout", "30", *args
    )
    try:
        failures = await run_battery(host, shell, workspace / "cases", EXEC_CASES)
        assert not failures, "\n".join(failures)
        if args != ("--clean",):  # the new shells read the user's rc files: the live view showed their banners
            assert "".join(host.view).count("fixture banner") > 10
    finally:
        await host.close()


async def test_the_command_pipe_is_open_once_in_bash(tmp_path, workspace):
    """The init moved the command pipe to a high fd with `builtin exec`, whose redirections bash undoes: its
    first fd stayed open in the shell and in every command's processes. Also after an `exec bash` (the boot
    opens the fds anew and closes the inherited ones). Unsandboxed: bubblewrap has pipes of its own."""
    host = await HostDriver.start(
        str(workspace), shell_env(make_home(tmp_path), "bash"), "--startup-timeout", "30", "--sandbox", "off"
    )
    count = "readlink /proc/$$/fd/* | grep -c '^pipe:'"
    try:
        assert await host.run(count, EXEC_WAIT, None) == ("1\n", 0, False)
        assert await host.run("exec bash", EXEC_WAIT, None) == ("", 0, False)
        assert await host.run(count, EXEC_WAIT, None) == ("1\n", 0, False)
    finally:
        await host.close()


async def test_clean_shell_reads_no_rc(tmp_path, workspace):
    home = make_home(tmp_path)
    host = await HostDriver.start(str(workspace), shell_env(home, "zsh"), "--clean")
    try:
        assert host.ready[0]["shell"] == "bash" and host.ready[0]["rc"] is False
        out, code, _ = await host.run(
            "type fixture_function >/dev/null 2>&1 || echo none; echo ${FIXTURE_VAR:-unset}", None, None
        )
        assert (out, code) == ("none\nunset\n", 0)
    finally:
        await host.close()


async def test_contract_edges(tmp_path, workspace):
    env = shell_env(make_home(tmp_path), "bash")
    host = await HostDriver.start(str(workspace), env, "--startup-timeout", "30")
    try:
        await host.send({"type": "bogus"})
        err = await host.messages.get()
        assert err["type"] == "error" and err["code"] == "BAD_REQUEST"
        host.proc.stdin.write(b"not json\n")
        err = await host.messages.get()
        assert err["type"] == "error" and err["code"] == "BAD_REQUEST"
        await host.send({"type": "input", "text": "x"})
        err = await host.messages.get()
        assert err["code"] == "NO_COMMAND"
        await host.send({"type": "run", "id": "a", "command": "sleep 5"})
        assert (await host.messages.get())["type"] == "started"
        await host.send({"type": "run", "id": "b", "command": "echo no"})
        err = await host.messages.get()
        assert err["code"] == "BUSY" and err["id"] == "b"
        await host.send({"type": "kill"})
        done = await host.wait_for("done", 20, "a")
        assert done["exit_code"] == -1 and done["killed"] is True
        ready = await host.wait_for("ready", 20)
        assert ready["restarted"] is True
        host._running = None
        out, code, _ = await host.run("echo $FIXTURE_VAR", None, None)
        assert (out, code) == ("fixture-value\n", 0)
        await host.send(
            {"type": "run", "id": "e", "command": 'echo "$A|$B"; pwd', "env": {"A": "x y", "B": "'q'"}, "cwd": "/"}
        )
        done = await host.wait_for("done", 20, "e")
        assert done["output"] == "x y|'q'\n/\n" and done["cwd"] == "/"
        await host.send({"type": "run", "id": "f", "command": "echo", "env": {"bad name": "x"}})
        err = await host.messages.get()
        assert err["code"] == "BAD_REQUEST"
    finally:
        await host.close()
    assert host.proc.returncode == 0


async def test_live_view_shows_the_command_and_its_output(tmp_path, workspace):
    host = await HostDriver.start(str(workspace), shell_env(make_home(tmp_path), "bash"), "--startup-timeout", "30")
    try:
        await host.run("echo visible-output", None, None)
        view = "".join(host.view)
        # the user's prompt, then the command line and its output (the rc's DEBUG trap may print in between)
        assert "\r\necho visible-output\r\nvisible-output\r\n" in view and view.index("fixture$ ") < view.index(
            "visible-output"
        )
        assert "builtin source" not in view and "\x1b]6973" not in view
    finally:
        await host.close()


async def test_a_run_right_after_the_shell_exited_waits_for_the_new_shell(tmp_path, workspace):
    host = await HostDriver.start(str(workspace), shell_env(make_home(tmp_path), "bash"), "--startup-timeout", "30")
    try:
        await host.send({"type": "run", "id": "x", "command": "cd /tmp; exit 9"})
        done_x = await host.wait_for("done", 30, "x")
        assert done_x["exit_code"] == 9 and done_x["shell_exited"] is True and done_x["cwd"] == "/tmp"
        # at once, while the host is still starting the next shell
        await host.send({"type": "run", "id": "y", "command": "echo $FIXTURE_VAR; pwd"})
        done_y = await host.wait_for("done", 30, "y")
        assert done_y["exit_code"] == 0 and done_y["output"] == "fixture-value\n/tmp\n", done_y
        assert len([r for r in host.ready if r.get("restarted")]) == 1  # one new shell, not two
    finally:
        await host.close()
