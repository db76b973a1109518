"""The ``run`` action for one agent: its persistent shell, timeouts, ``is_input``, restarts.

Waiting rules (docs/protocol.md §3.1):

- ``blocking: true`` + ``timeout``: hard timeout. On expiry the shell's whole process group (and any
  descendant found) is killed; the observation has the output so far, exit code -1 and a suffix
  saying so; the next command gets a fresh shell in the directory the killed one was in.
- ``blocking: false`` + ``timeout``: soft timeout. After ``timeout`` seconds the observation returns
  the output so far with exit code -1; the command keeps running.
- no ``timeout``: non-blocking waits until the command has printed nothing new for
  ``no_change_timeout`` seconds (OpenHands' 30 s rule), or ``max_wait`` in all, whichever first;
  blocking waits for completion (the backend's own action deadline still applies).

While a command runs: ``is_input`` sends ``command`` + newline to its stdin, or ``C-c`` (SIGINT to the
process group), ``C-d`` (closes its stdin; the shell gets a new stdin afterwards); an empty command
waits for more output; a new command is not executed. Only one observation at a time waits on a
command: input sent while another observation is already waiting returns at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import time
from typing import Any

from ...protocol.errors import ErrorId
from ...protocol.events import Action, error_observation, run_observation
from .shell import BashShell, Command, encode

WAIT_HINT = (
    "You may wait longer to see additional output by sending empty command '', send other commands to interact "
    "with the current process, send keys to interrupt/kill the command, or use the timeout parameter in "
    "execute_bash for future commands."
)
CONTINUED_PREFIX = "[Below is the output of the previous command.]\n"
_SPECIAL_KEY = re.compile(r"^C-[a-zA-Z\\]$")


class Terminal:
    def __init__(
        self,
        workspace: str,
        env: dict[str, str],
        source_file: str,
        scratch_dir: str,
        *,
        max_output_chars: int,
        no_change_timeout: float,
        max_wait: float,
    ) -> None:
        self.workspace = workspace
        self.cwd = workspace
        self.env = env
        self.source_file = source_file
        self.scratch_dir = scratch_dir
        self.max_output_chars = max_output_chars
        self.no_change_timeout = no_change_timeout
        self.max_wait = max_wait
        self.shell: BashShell | None = None
        self._waiter = asyncio.Lock()
        self._claimed = False  # a new command was accepted and is being started
        self._closed = False

    # ------------------------------------------------------------------ shell management
    @property
    def running(self) -> Command | None:
        return self.shell.running if self.shell is not None else None

    async def _ensure_shell(self) -> tuple[BashShell, str]:
        """A live shell; a dead one is disposed of and replaced in its last directory."""
        note = ""
        shell = self.shell
        if shell is not None and not shell.alive:
            self.cwd = shell.last_cwd
            self.shell = None
            await shell.kill()  # its background jobs die with it, as when a terminal closes
            shell = None
        if shell is None:
            cwd = self.cwd
            if not os.path.isdir(cwd):
                note = f"[The previous directory {cwd} no longer exists; the shell starts in {self.workspace}.]\n"
                cwd = self.cwd = self.workspace
            shell = BashShell(cwd, self.env, self.source_file, self.max_output_chars)
            await shell.start()
            self.shell = shell
        return shell, note

    async def close(self) -> None:
        self._closed = True
        shell, self.shell = self.shell, None
        if shell is not None:
            await shell.kill()

    # ------------------------------------------------------------------ observations
    def _obs(self, action: Action, content: str, exit_code: int, cwd: str | None, *, suffix: str = "", prefix: str = "") -> dict[str, Any]:
        pid = self.shell.pid if self.shell is not None else -1
        return run_observation(
            action.id,
            action.command,
            content,
            exit_code,
            cwd,
            pid=pid,
            suffix=suffix,
            prefix=prefix,
            hidden=bool(action.args.get("hidden", False)),
        )

    def _cwd(self) -> str:
        return self.shell.cwd_now() if self.shell is not None else self.cwd

    # ------------------------------------------------------------------ entry point
    async def run(self, action: Action, cwd: str | None = None) -> dict[str, Any]:
        command = action.command
        if "\x00" in command:
            return error_observation(action.id, ErrorId.BAD_REQUEST, "args.command must not contain NUL characters.")
        if action.is_input:
            return await self._input(action)
        if command.strip() == "":
            cmd = self.running
            if cmd is None:
                return self._obs(action, "ERROR: No previous running command to retrieve logs from.", -1, self._cwd())
            async with self._waiter:
                return await self._wait(action, cmd, prefix=CONTINUED_PREFIX)
        if self._claimed or self.running is not None:
            return self._not_executed(action)
        self._claimed = True
        try:
            shell, note = await self._ensure_shell()
            if shell.stdin_closed:
                await shell.reopen_stdin(self.scratch_dir)
            text = command
            if cwd is not None:
                text = f"builtin cd -- {shlex.quote(cwd)} || return $?\n{command}"
            cmd = shell.submit(text)
        finally:
            self._claimed = False
        async with self._waiter:
            return await self._wait(action, cmd, prefix=note)

    def _not_executed(self, action: Action) -> dict[str, Any]:
        content = (
            f'[Your command "{action.command}" is NOT executed. The previous command is still running - You CANNOT send '
            "new commands until the previous command is completed. By setting `is_input` to `true`, you can interact "
            "with the current process: You may wait longer to see additional output of the previous command by sending "
            "empty command '', send other commands to interact with the current process, send keys (\"C-c\", \"C-z\", "
            '"C-d") to interrupt/kill the previous command before sending your new command, or use the timeout '
            "parameter in execute_bash for future commands.]"
        )
        return self._obs(action, content, -1, self._cwd())

    async def _input(self, action: Action) -> dict[str, Any]:
        command = action.command
        cmd = self.running
        shell = self.shell
        if cmd is None or shell is None:
            return self._obs(action, "ERROR: No previous running command to interact with.", -1, self._cwd())
        if command == "":
            pass  # just wait, as OpenHands does
        elif _SPECIAL_KEY.match(command):
            key = command[2].lower()
            if key == "c":
                shell.interrupt()
            elif key == "d":
                shell.close_stdin()
            elif key == "z":
                return error_observation(
                    action.id,
                    ErrorId.TOOL_UNSUPPORTED,
                    "C-z (suspend) is not supported: the local shell has no job control, a stopped command would "
                    "hang it. Use C-c to interrupt the command, or start long-running programs in the background with `&`.",
                )
            else:
                return error_observation(
                    action.id,
                    ErrorId.TOOL_UNSUPPORTED,
                    f"Key {command} is not supported by the local shell (no terminal): only C-c (interrupt) and "
                    "C-d (end of input) can be sent; other input is sent as a line of text.",
                )
        else:
            try:
                await asyncio.wait_for(shell.send_input(encode(command + "\n")), 5)
            except BrokenPipeError:
                return self._obs(
                    action,
                    "ERROR: The running command's input was closed (C-d); it cannot receive more input.",
                    -1,
                    self._cwd(),
                )
            except asyncio.TimeoutError:
                return self._obs(
                    action,
                    "ERROR: The running command is not reading its input (the input pipe is full); the text was not fully sent.",
                    -1,
                    self._cwd(),
                )
        if self._waiter.locked():
            return self._obs(
                action,
                "",
                -1,
                self._cwd(),
                suffix="\n[Input sent. Another observation is already waiting for the running command; its output "
                "and exit code will be reported there.]",
            )
        async with self._waiter:
            return await self._wait(action, cmd, prefix=CONTINUED_PREFIX)

    # ------------------------------------------------------------------ waiting
    async def _wait(self, action: Action, cmd: Command, prefix: str = "") -> dict[str, Any]:
        timeout = action.timeout
        hard = action.blocking and timeout is not None
        no_change = None if (timeout is not None or action.blocking) else self.no_change_timeout
        limit = timeout if timeout is not None else (None if action.blocking else self.max_wait)
        start = time.monotonic()
        while not cmd.done:
            now = time.monotonic()
            waits = []
            if limit is not None:
                waits.append(start + limit - now)
            if no_change is not None:
                waits.append(max(cmd.last_output, start) + no_change - now)
            remaining = min(waits) if waits else None
            if remaining is not None and remaining <= 0:
                break
            cmd.changed.clear()
            if cmd.done:
                break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(cmd.changed.wait(), remaining)
        if cmd.done:
            return self._finished(action, cmd, prefix)
        elapsed = time.monotonic() - start
        if hard:
            return await self._kill_after(action, cmd, timeout, prefix)
        if no_change is not None and elapsed < (limit or float("inf")):
            suffix = f"\n[The command has no new output after {no_change:g} seconds. {WAIT_HINT}]"
        else:
            suffix = f"\n[The command timed out after {(limit or elapsed):g} seconds and is still running. {WAIT_HINT}]"
        if self.shell is not None:
            self.shell.flush_pending()
        return self._obs(action, cmd.take_output(), -1, self._cwd(), suffix=suffix, prefix=prefix)

    def _finished(self, action: Action, cmd: Command, prefix: str) -> dict[str, Any]:
        assert cmd.exit_code is not None
        self.cwd = cmd.cwd or self.cwd
        suffix = ""
        if cmd.shell_exited:
            suffix = (
                f"\n[The shell exited with code {cmd.exit_code}. The next command runs in a new shell in {self.cwd}; "
                "variables, exports and other shell state were reset.]"
            )
        return self._obs(action, cmd.take_output(), cmd.exit_code, self.cwd, suffix=suffix, prefix=prefix)

    async def _kill_after(self, action: Action, cmd: Command, timeout: float, prefix: str) -> dict[str, Any]:
        shell = self.shell
        cwd = self._cwd()
        pid = shell.pid if shell is not None else -1
        if shell is not None:
            self.shell = None
            await shell.kill()
        self.cwd = cwd
        suffix = (
            f"\n[The command timed out after {timeout:g} seconds and was killed, with every process of the shell "
            f"(process group {pid}). The next command runs in a new shell in {cwd}; variables, exports and other "
            "shell state were reset.]"
        )
        obs = run_observation(
            action.id, action.command, cmd.take_output(), -1, cwd, pid=pid, suffix=suffix, prefix=prefix,
            hidden=bool(action.args.get("hidden", False)),
        )
        return obs
