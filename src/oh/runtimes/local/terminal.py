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
waits for more output; a new command is refused with ``BUSY`` (nothing executed). With nothing
running, an empty command or ``is_input`` is ``NO_COMMAND``. Only one observation at a time waits on
a command: input sent while another observation is already waiting returns at once.

``reset`` kills the shell's process group and starts a fresh shell in the agent's working directory;
``env`` is exported (by an internal command, so the agent's command keeps its own line numbers)
before the command and stays exported in that shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import getpass
import os
import re
import shlex
import shutil
import socket
import time
from collections.abc import Callable
from typing import Any

from ...protocol import progress
from ...protocol import sandbox as sandbox_rules
from ...protocol.errors import ErrorId, ToolError
from ...protocol.events import MAX_OUTPUT_CAP, Action, error_observation, run_observation
from ..base import output_sink, report
from . import oneshot
from .command import Command, Shell, encode
from .engine import STARTUP_TIMEOUT, PtyShell
from .exports import export_script
from .gitwatch import planted_hooks
from .ptyproc import WrapArgv
from .sandbox import Sandbox

# OpenHands' wording, naming no tool (agents reach oh through many tools: the SDK's terminal, MCP, ...).
WAIT_HINT = (
    "You may wait longer to see additional output by sending empty command '', send other commands to interact "
    'with the current process (is_input), send keys ("C-c", "C-d") to interrupt/kill the previous command '
    "before sending your new command, or use the timeout parameter for future commands."
)
RESET_TEXT = "Terminal session has been reset."
EXPORT_TIMEOUT = 10.0
NO_OUTPUT_TEXT = "No previous running command to retrieve logs from."
NO_INPUT_TEXT = "No previous running command to interact with."


@functools.lru_cache(maxsize=1)
def _identity() -> tuple[str | None, str | None]:
    """(user name, short host name), as bash's ``\\u`` and ``\\h`` show them."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry (containers with an arbitrary uid)
        user = None
    host = socket.gethostname().split(".")[0] or None
    return user, host


@functools.lru_cache(maxsize=64)
def _python_on(path: str) -> str | None:
    """``command -v python`` (else python3) on the shell's PATH; relative PATH entries are ignored."""
    absolute = os.pathsep.join(p for p in path.split(os.pathsep) if p.startswith("/"))
    for name in ("python", "python3"):
        found = shutil.which(name, path=absolute)
        if found:
            return found
    return None


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
        env_snapshot: str = "",
        init_script: str = "",
        user_shell: bool = True,
        startup_timeout: float = STARTUP_TIMEOUT,
        notes_said: set[str] | None = None,
        wrap_argv: WrapArgv | None = None,
        on_note: Callable[[str], None] | None = None,
        sandbox: Sandbox | None = None,
        oneshot: bool = False,
    ) -> None:
        # An approved one-shot (oneshot.py): ``env`` is its clean environment and ``scratch_dir`` its private
        # directory (removed at close); each command runs as ``bash --norc --noprofile -c`` of the approved text.
        self.oneshot = oneshot
        self.wrap_argv = wrap_argv  # a prefix for the shell's argv (ptyproc.spawn)
        self.on_note = on_note  # told each engine note as it is first said (the live view's shell_note)
        self.sandbox = sandbox  # bubblewrap around each shell this terminal starts (sandbox.py); None: unconfined
        self.user_shell = user_shell
        self.startup_timeout = startup_timeout
        self.notes_said = notes_said if notes_said is not None else set()  # engine notes are said once
        self.env_snapshot = env_snapshot  # main shells: where the shell writes its exports
        self.init_script = init_script  # extra shells: run (internally) when the shell starts
        self.workspace = workspace  # the agent's working directory: where a fresh shell starts
        self.cwd = workspace
        self.env = env
        self.source_file = source_file
        self.scratch_dir = scratch_dir
        self.max_output_chars = max_output_chars
        self.no_change_timeout = no_change_timeout
        self.max_wait = max_wait
        self.shell: Shell | None = None
        self._starting: PtyShell | None = None  # a shell whose rc files still run (close() ends it too)
        self._waiter = asyncio.Lock()
        self._claimed = False  # a new command was accepted and is being started
        self._closed = False

    # ------------------------------------------------------------------ shell management
    @property
    def running(self) -> Command | None:
        return self.shell.running if self.shell is not None else None

    async def _ensure_shell(self) -> tuple[Shell, str]:
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
            shell = PtyShell(
                cwd,
                self.env,
                self.source_file,
                self.max_output_chars,
                self.env_snapshot,
                user_shell=self.user_shell,
                startup_timeout=self.startup_timeout,
                wrap_argv=self.wrap_argv,
                sandbox=self.sandbox,
            )
            self._starting = shell
            try:
                await shell.start()
            except BaseException:
                # Cancelled (its agent left) or failed while the user's rc files run: end it as a closed
                # terminal does, so their EXIT traps run; left alone it would hold the rc's lock, and in the
                # sandbox be SIGKILLed with bubblewrap when the backend exits, the traps unrun (issue 30).
                await asyncio.shield(shell.kill())
                raise
            finally:
                self._starting = None
            if self._closed:  # closed (agent gone, backend stopping) while it started: it is nobody's shell
                await shell.kill()
                raise ToolError("The agent's shell was closed while it started (its agent left or the backend stops).")
            self.shell = shell
            for said in (self.sandbox.note() if self.sandbox is not None else "", shell.note):
                if said and said not in self.notes_said:  # the sandbox's level, then the shell's own note
                    self.notes_said.add(said)
                    note += f"[{said}]\n"
                    # the live view shows the sandbox's level in its header: only the shell's own note and a
                    # missing sandbox are events of their own
                    if self.on_note is not None and (said == shell.note or said.startswith("Sandbox: none")):
                        self.on_note(said)
            if self.init_script:
                await self._internal(shell, self.init_script)
        return shell, note

    async def close(self) -> None:
        self._closed = True
        shell, self.shell = self.shell, None
        starting, self._starting = self._starting, None
        await asyncio.gather(*(s.kill() for s in (shell, starting) if s is not None))
        if self.oneshot:
            oneshot.remove_dir(self.scratch_dir)

    # ------------------------------------------------------------------ observations
    def _obs(
        self,
        action: Action,
        content: str,
        exit_code: int,
        cwd: str | None,
        *,
        suffix: str = "",
        prefix: str = "",
        pid: int | None = None,
    ) -> dict[str, Any]:
        if pid is None:
            pid = self.shell.pid if self.shell is not None else -1
        sb = self.sandbox
        if exit_code > 0 and sb is not None and sb.spec.on and not sb.unconfined:
            home = self.env.get("HOME") or os.path.expanduser("~")
            hint = sandbox_rules.refusal_hint(content, sb.spec.network, action.command, os.path.realpath(home))
            if hint:  # the agent and `oh run` read why a failure may be the sandbox's (issue 41)
                suffix += f"\n[{hint}]"
        user, host = _identity()
        path = self.shell.last_path if self.shell is not None else self.env.get("PATH", "")
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
            username=user,
            hostname=host,
            py_interpreter_path=_python_on(path),
        )

    def _limit(self, action: Action) -> int:
        mo = action.args.get("max_output")
        if mo is None:
            return self.max_output_chars
        return mo if mo > 0 else MAX_OUTPUT_CAP

    async def reset(self) -> None:
        """Kill the shell and everything it runs; the next command gets a fresh shell in the workdir."""
        shell, self.shell = self.shell, None
        self.cwd = self.workspace
        if shell is not None:
            await shell.kill()

    def _cwd(self) -> str:
        return self.shell.cwd_now() if self.shell is not None else self.cwd

    # ------------------------------------------------------------------ entry point
    @property
    def idle(self) -> bool:
        """No command runs and none is being started: a new command would be accepted."""
        return not self._claimed and self.running is None

    async def run(self, action: Action, cwd: str | None = None, *, job_id: str | None = None) -> dict[str, Any]:
        command = action.command
        if "\x00" in command:
            return error_observation(action.id, ErrorId.BAD_REQUEST, "args.command must not contain NUL characters.")
        reset_note = ""
        if action.reset:
            if self._claimed:
                return self._busy(action)
            await self.reset()
            if command.strip() == "":
                self._claimed = True
                try:
                    await self._ensure_shell()  # the fresh shell exists now: its pid is in the metadata
                finally:
                    self._claimed = False
                return self._obs(action, RESET_TEXT, 0, self.workspace)
            reset_note = RESET_TEXT + "\n\n"
        if action.is_input:
            return await self._input(action)
        if command.strip() == "":
            cmd = self.running
            if cmd is None:
                return error_observation(action.id, ErrorId.NO_COMMAND, NO_OUTPUT_TEXT)
            async with self._waiter:
                return await self._wait(action, cmd, prefix=CONTINUED_PREFIX)
        if self._claimed or self.running is not None:
            return self._busy(action)
        cmd, shell, note = await self.start(action, cwd, job_id=job_id)
        try:
            async with self._waiter:
                return await self._wait(action, cmd, prefix=reset_note + note)
        except asyncio.CancelledError:
            # The action was cancelled (agent gone, deadline passed): stop the work it started, as
            # an editor does on `cancel` (C-c). A private shell is killed right after anyway; a
            # shared one keeps its state for the next agent.
            if not cmd.done and self.shell is shell:
                shell.interrupt()
            raise

    async def start(
        self, action: Action, cwd: str | None, *, job_id: str | None = None, sink=None
    ) -> tuple[Command, Shell, str]:
        """Start ``action``'s command (the caller checked ``idle``) without waiting for it."""
        self._claimed = True
        try:
            restarted = await self._restart_for_new_repos()
            shell, note = await self._ensure_shell()
            if restarted:
                note += await self._restore(shell, *restarted)
            if self.oneshot:
                text = oneshot.script(action.command, self.env, action.env, oneshot.bash_path(self.env), cwd)
            else:
                if action.env:
                    await self._export(shell, action.env)
                text = action.command
                if cwd is not None:
                    text = f"builtin cd -- {shlex.quote(cwd)} || return $?\n{action.command}"
            cmd = shell.submit(text, limit=self._limit(action))
            cmd.job_id = job_id
            cmd.sink = sink
            cmd.command = action.command
        finally:
            self._claimed = False
        if job_id and sink is None:
            report(action, progress.STARTED, job_id=job_id)  # an interrupting client names it (`oh run`'s Ctrl-C)
        return cmd, shell, note

    async def _restart_for_new_repos(self) -> tuple[list[str], str, str] | None:
        """A repository appeared in the sandbox's writable roots that this shell does not protect (its hooks and
        config run outside the sandbox at the user's next git command there; gitwatch.py): end the shell before
        the next command, so the one ``_ensure_shell`` starts binds them read-only. (The repositories, the
        directory, the exports) to restore, or None. One non-blocking inotify read when nothing changed."""
        shell = self.shell
        if shell is None or self.sandbox is None or not shell.alive:
            return None
        new = self.sandbox.new_repos(getattr(shell, "protected_repos", None))
        if not new:
            return None
        cwd, exports = shell.cwd_now(), shell.exports
        self.shell = None
        await shell.kill()  # its background processes end with it, as at a reset
        self.cwd = cwd if os.path.isdir(cwd) else self.workspace
        return new, self.cwd, exports

    async def _restore(self, shell: Shell, repos: list[str], cwd: str, exports: str) -> str:
        """The restarted shell gets the old one's exports and directory back; the note says why it restarted."""
        if exports:
            await self._internal(shell, export_script(exports, cwd))  # parsed, never run as written (exports.py)
        shown = ", ".join(os.path.relpath(r, self.workspace) for r in repos[:5]) + (" …" if len(repos) > 5 else "")
        hooks = sorted({os.path.relpath(h, self.workspace) for r in repos for h in planted_hooks(r)})
        said = (
            f"A new git repository appeared ({shown}) that this shell did not protect: its hooks and config would "
            "run outside the sandbox at the user's next git command there, so they are read-only from now on. The "
            "shell was restarted for that (its directory and exports kept; other shell state and its background "
            "processes were reset)."
        )
        if hooks:
            said += f" Hooks already there (not git's samples), which the user should review: {', '.join(hooks)}."
        if self.on_note is not None:
            self.on_note(said)
        return f"[{said}]\n"

    async def _export(self, shell: Shell, env: dict[str, str]) -> None:
        """Export ``env`` in the shell (persists there). Sent through the command pipe, never argv."""
        text = "\n".join(f"builtin export {name}={shlex.quote(value)}" for name, value in env.items())
        await self._internal(shell, text)

    async def _internal(self, shell: Shell, text: str) -> None:
        """Run builtins-only ``text`` in the shell before the agent's command (its own line numbers stay)."""
        cmd = shell.submit(text, internal=True)
        deadline = time.monotonic() + EXPORT_TIMEOUT  # builtins only: done at once unless the shell is wedged
        while not cmd.done:
            cmd.changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.shell = None
                await shell.kill()
                raise ToolError(
                    f"The shell did not take the environment variables within {EXPORT_TIMEOUT:g} s; it was "
                    "restarted. Run the command again."
                )
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(cmd.changed.wait(), remaining)
        cmd.take_output()  # builtins print nothing; a background job's output seen meanwhile is its own

    def _busy(self, action: Action) -> dict[str, Any]:
        return error_observation(
            action.id,
            ErrorId.BUSY,
            f'Your command "{action.command[:200]}" was NOT executed: the previous command is still running. '
            "Send an empty command to wait for more of its output, send input to it with is_input "
            '(keys "C-c" to interrupt it, "C-d" to end its input), or set reset to kill it and start a fresh shell.',
        )

    async def _input(self, action: Action) -> dict[str, Any]:
        command = action.command
        cmd = self.running
        shell = self.shell
        if cmd is None or shell is None:
            return error_observation(action.id, ErrorId.NO_COMMAND, NO_INPUT_TEXT)
        if command == "":
            pass  # just wait, as OpenHands does
        elif _SPECIAL_KEY.match(command):
            # A real terminal: the key goes through the line discipline (C-c: SIGINT to the foreground
            # job, C-d: end of input, C-z: the job stops and the shell's prompt comes back).
            await shell.send_key(command[2])
        else:
            try:
                await asyncio.wait_for(shell.send_input(encode(command + "\n")), 5)
            except asyncio.TimeoutError:
                return self._obs(
                    action,
                    (
                        "ERROR: The running command is not reading its input (the terminal's input buffer is "
                        "full); the text was not fully sent."
                    ),
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
        stream = output_sink(action)  # the agent asked for the output as it comes (protocol/progress.py)
        if stream is None:
            return await self._wait_for(action, cmd, prefix)
        if len(cmd.buffer):
            stream(cmd.buffer.text())  # what came before this wait (a follow-up): it is in the answer too
        cmd.stream = stream
        try:
            return await self._wait_for(action, cmd, prefix)
        finally:
            if cmd.stream is stream:
                cmd.stream = None

    async def _wait_for(self, action: Action, cmd: Command, prefix: str = "") -> dict[str, Any]:
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
        if hard and timeout is not None:  # (hard implies a timeout: said again for the type checker)
            return await self._kill_after(action, cmd, timeout, prefix)
        if no_change is not None and elapsed < (limit or float("inf")):
            suffix = f"\n[The command has no new output after {_seconds(no_change)}. {WAIT_HINT}]"
        else:
            suffix = f"\n[The command timed out after {_seconds(limit or elapsed)} and is still running. {WAIT_HINT}]"
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
            f"\n[The command timed out after {_seconds(timeout)} and was killed, with every process of the shell "
            f"(process group {pid}). The next command runs in a new shell in {cwd}; variables, exports and other "
            "shell state were reset.]"
        )
        return self._obs(action, cmd.take_output(), -1, cwd, pid=pid, suffix=suffix, prefix=prefix)


def _seconds(value: float) -> str:
    """ "1 second", "2.5 seconds" (the agent reads these notes; text.fmt's pattern matches both)."""
    return f"{value:g} second{'' if value == 1 else 's'}"
