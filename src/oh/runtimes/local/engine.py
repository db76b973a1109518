"""The agent's shell engine: the user's own shell, interactive, on a real pty (docs/protocol.md §3.4.1).

Split the sans-I/O way (docs/architecture.md, "The agent's shell"): the init scripts are package data
(``shellinit/``, written out by ``initfiles.py``), the pty's byte stream is parsed by the pure
``markers.MarkerParser``, the process is started and ended by ``ptyproc``; ``PtyShell`` here only wires
them together and implements ``command.Shell``, the interface ``Terminal``, ``ShellGroup`` and the
engine host drive.

How one command runs (every step was checked with bash 5.2 and zsh 5.9):

1. The shell was started interactive (``-i``) on a pty, after the user's rc files ran oh's init code
   (bash ``--rcfile``, zsh a private ``ZDOTDIR``), which turned line editing off (no readline/zle:
   the shell reads lines in the tty's canonical mode), deferred job notices, and printed the ready
   marker ``R``.
2. We write the command text, NUL-terminated, into a private pipe (never typed: no echo, no line
   limit), then type the short trigger line ``builtin source <run file>`` into the pty. Its echo is
   removed from every stream.
3. The run file reads the command from the pipe, saves and clears the user's DEBUG trap, prints the
   start marker ``S`` and ``eval``s the command at top level (``cd``, ``export``, ``declare`` persist;
   ``return`` is legal inside ``source``).
4. At the next prompt our hook runs first (``PROMPT_COMMAND`` / ``precmd_functions``): it prints
   ``D <status> <cwd> <PATH>`` with the command's ``$?``, restores the DEBUG trap, writes the
   ``export -p`` snapshot. Whatever an interrupted, failed or ``return``ed command skipped, the
   prompt always comes back, so the end is always seen. The user's own hooks run after it: their
   output falls between ``D`` and the next ``S``, never into a command's output.
5. ``exit N`` ends the shell: an EXIT hook prints ``X <status> <cwd>``; the exit code is the
   process's.

Markers are OSC sequences ``ESC ] 6973 ; <nonce> ; <kind> ... BEL`` written to a private dup of the
tty (so ``exec >&-`` by a command does not silence them); the nonce is random per shell and lives only
in a shell variable, never in the environment.

Ending a shell never harms the user (issue 30): shells are hung up as a terminal window closing does
(``ptyproc.hang_up``: SIGHUP, a grace period, then SIGKILL), so rc files' EXIT traps run; rc files slower
than the startup timeout are not cut mid-way: they finish in the background (up to ``RC_FINISH_CAP``)
while the agent gets the clean shell, and that shell is hung up once they are done.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import secrets
import signal
import termios
import time
from collections.abc import Callable

from ... import programs
from ...errors import OhBaseError
from . import initfiles, markers, ptyproc
from .command import Command, encode, write_all
from .render import COLS, ROWS, clean, render
from .sandbox import Sandbox

log = logging.getLogger("oh.runtimes.local")

READ_CHUNK = 1 << 16
STARTUP_TIMEOUT = 5.0
# Seconds an rc file slower than the startup timeout may still take in the background before its shell
# is hung up anyway (pyenv's rehash lock, for one, is waited for up to 60 s).
RC_FINISH_CAP = 90.0
# Seconds between two looks for a bash that an `exec` started, waiting at its prompt without oh's hooks.
BOOT_POLL = 0.05
# Bytes of a command's output held after an `exec` (a shell's startup output is dropped if it boots); past
# this it is a program's output, handed on as it comes.
HOLD_CAP = 1 << 16


def pick_shell(env: dict[str, str], user_shell: bool) -> tuple[str, str, str]:
    """(kind, path, note): the user's ``$SHELL`` if bash or zsh, else bash (with a note)."""
    bash = programs.find("bash", path=env.get("PATH")) or programs.find("bash") or "/bin/bash"
    if not user_shell:
        return "bash", bash, ""
    wanted = env.get("SHELL", "")
    name = os.path.basename(wanted)
    if name in ("bash", "zsh") and os.access(wanted, os.X_OK) and not programs.why_untrusted(wanted):
        return name, wanted, ""
    if name in ("bash", "zsh"):
        found = programs.find(name, path=env.get("PATH"))
        if found:
            return name, found, ""
    if not wanted:
        return "bash", bash, ""
    return "bash", bash, f"Your shell {wanted} is not bash or zsh; the agent's shell is bash (reading ~/.bashrc)."


class StartupFailed(OhBaseError):
    """The user's shell did not come up (rc files exited, hung or killed it)."""

    def __init__(self, message: str, *, still_running: bool = False) -> None:
        super().__init__(message)
        self.still_running = still_running  # the rc files are still at work (too slow)


class PtyShell:
    """One interactive shell on a pty (implements ``command.Shell``)."""

    def __init__(
        self,
        cwd: str,
        env: dict[str, str],
        source_file: str,
        max_output_chars: int,
        env_snapshot: str = "",
        *,
        user_shell: bool = True,
        startup_timeout: float = STARTUP_TIMEOUT,
        on_data: Callable[[str], None] | None = None,
        wrap_argv: ptyproc.WrapArgv | None = None,
        rc_finish_cap: float = RC_FINISH_CAP,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.start_cwd = cwd
        self.env_snapshot = env_snapshot
        self.exports = ""
        self.env = env
        self.dir = os.path.dirname(source_file) or "."
        self.limit = max_output_chars
        self.user_shell = user_shell
        self.startup_timeout = startup_timeout
        self.rc_finish_cap = rc_finish_cap
        self.on_data = on_data  # called with the visible terminal's text (the live view / host)
        self.wrap_argv = wrap_argv  # a sandbox's prefix for the shell's argv (ptyproc.spawn)
        self.sandbox = sandbox  # bubblewrap around the shell (sandbox.py); None: unconfined
        # the git directories whose hooks and config this shell's sandbox binds read-only (None: not known)
        self.protected_repos: frozenset[tuple[str, int]] | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.pid = -1
        self.running: Command | None = None
        self.last_cwd = cwd
        self.last_path = env.get("PATH", "")
        self.exited = False
        self.kind = "bash"
        self.path = ""
        self.rc = False  # the user's rc files were read
        self.note = ""  # said once: why the clean shell runs, or a fix made to the rc's settings
        self._master = -1
        self._cmd_w = -1
        self._files: list[str] = []
        self._parser = markers.MarkerParser(b"")
        self._agent_dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._view_dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._trigger = b""
        self._ready: asyncio.Future | None = None
        self._watch: asyncio.Task | None = None
        self._kill_task: asyncio.Task | None = None
        self._slow: PtyShell | None = None  # the user's shell still reading slow rc files
        self._slow_task: asyncio.Task | None = None
        self._loop = asyncio.get_running_loop()
        self._pending_display = ""
        self._cr = ""
        self._sane: list | None = None  # the terminal's modes when the shell became ready
        self._held: list[bytes] | None = None  # the command's output since an `exec` (see _on_exec)
        self._boot_task: asyncio.Task | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        kind, path, note = pick_shell(self.env, self.user_shell)
        if self.user_shell:
            try:
                await self._spawn_retrying(kind, path, True)
                self.note = " ".join(x for x in (note, self.note) if x)
                return
            except StartupFailed as e:
                tail = render(clean(self._parser.startup_out.decode("utf-8", "replace"))[0]).strip()[-1500:]
                log.warning("agent shell: %s failed to start; its output: %s", path, tail or "(none)")
                said = str(e)
                if e.still_running:
                    self._let_rc_finish()
                    said += (
                        f" They may finish in the background (up to {self.rc_finish_cap:g} s; that shell then "
                        "ends as a closed terminal does)."
                    )
                else:
                    await self._teardown()
                self.note = (
                    f"{note + ' ' if note else ''}{said} The agent's shell is the clean shell (bash without rc "
                    "files) for this session."
                )
                log.warning("agent shell: %s", self.note)
        await self._spawn_retrying(*pick_shell(self.env, False)[:2], False)

    async def _spawn_retrying(self, kind: str, path: str, user_rc: bool) -> None:
        """``_spawn``, once more when the shell's sandbox failed because a Unix socket it covers was deleted
        in between (bubblewrap cannot bind over a missing path; the new start lists them again)."""
        try:
            await self._spawn(kind, path, user_rc)
        except StartupFailed as e:
            if e.still_running or self.sandbox is None or not self.sandbox.sockets_vanished():
                raise
            log.info("agent shell: a Unix socket its sandbox covers went away at its start; starting it again")
            await self._teardown()
            await self._spawn(kind, path, user_rc)

    def _launch(self, kind: str, cmd_r: int, user_rc: bool) -> tuple[list[str], dict[str, str]]:
        """Write this shell's init files; (argv tail, environment) of the shell process."""
        nonce = secrets.token_hex(8)
        self._parser = markers.MarkerParser(nonce.encode())
        # Not the nonce: an `exec` hands the init file's path to the program it starts, in its environment.
        tag = f"{os.getpid()}-{secrets.token_hex(8)}"
        args, self._files, extra = initfiles.write_files(
            kind, self.dir, tag, nonce=nonce, cmd_fd=cmd_r, snapshot=self.env_snapshot, user_rc=user_rc
        )
        self._trigger = initfiles.trigger(kind, os.path.join(self.dir, f"run-{tag}"))
        env = dict(self.env)
        env["TERM"] = "xterm-256color"
        env["COLUMNS"], env["LINES"] = str(COLS), str(ROWS)
        env.pop("PROMPT_COMMAND", None)
        env.pop("__oh_boot", None)  # only an `exec` in an agent's shell sets it, for the program it starts
        if "ZDOTDIR" in extra and "ZDOTDIR" in env:
            env["OH_USER_ZDOTDIR"] = env["ZDOTDIR"]
        env.update(extra)
        return args, env

    def _wrap_in_sandbox(self, argv: list[str], env: dict[str, str]) -> list[str]:
        assert self.sandbox is not None  # only passed as wrap_argv with a sandbox
        out, self.protected_repos = self.sandbox.wrap_bound(argv, env, cwd=self.start_cwd, scratch=(self.dir,))
        return out

    async def _spawn(self, kind: str, path: str, user_rc: bool) -> None:
        self.kind, self.path, self.rc = kind, path, user_rc
        cmd_r, cmd_w = os.pipe()
        try:
            args, env = self._launch(kind, cmd_r, user_rc)
            # The one place where the shell process's argv, environment and directory are final; a sandbox
            # (bubblewrap, sandbox.py) wraps the whole shell: one sandbox per agent shell, not per command.
            wrap = self.wrap_argv
            if self.sandbox is not None:
                wrap = self._wrap_in_sandbox
            pty = await ptyproc.spawn(
                [path, *args], env, self.start_cwd, size=(ROWS, COLS), pass_fds=(cmd_r,), wrap_argv=wrap
            )
        except BaseException:
            os.close(cmd_w)
            self._remove_files()
            raise
        finally:
            os.close(cmd_r)
        os.set_blocking(cmd_w, False)
        self.proc, self.pid, self.exited = pty.proc, pty.pid, False
        self._master, self._cmd_w = pty.master, cmd_w
        self._ready = self._loop.create_future()
        self._loop.add_reader(self._master, self._on_output)
        self._watch = asyncio.ensure_future(self._watch_exit())
        try:
            ready = await asyncio.wait_for(asyncio.shield(self._ready), self.startup_timeout)
        except asyncio.TimeoutError:
            msg = f"Your {kind} rc files did not finish within {self.startup_timeout:g} s."
            raise StartupFailed(msg, still_running=True) from None
        if ready is None:
            code = self.proc.returncode
            raise StartupFailed(f"Your {kind} exited while reading its rc files (exit code {code}).")
        self._startup_notes(kind, ready)

    def _startup_notes(self, kind: str, ready: markers.Ready) -> None:
        notes = []
        rcfile = "~/.bashrc" if kind == "bash" else "~/.zshrc"
        rcst = ready.rc_status
        if rcst.isdigit() and int(rcst) >= 2:
            notes.append(
                f"Your {rcfile} ended with an error (status {rcst}); the shell works, its messages are in the "
                "terminal's startup output."
            )
        if ready.eu:
            notes.append(f"Your {kind} rc files turned on `set -e`/`set -u`; oh turned them off in the agent's shell.")
        if notes:
            self.note = " ".join(notes)
            log.warning("agent shell: %s", self.note)

    def _let_rc_finish(self) -> None:
        """Hand the half-started shell over to a background task: its rc files finish, then it is hung up."""
        slow = PtyShell(self.start_cwd, self.env, os.path.join(self.dir, "x"), self.limit, rc_finish_cap=0)
        for name in ("proc", "pid", "kind", "path", "_master", "_cmd_w", "_files", "_parser", "_ready", "sandbox"):
            setattr(slow, name, getattr(self, name))
        self._loop.remove_reader(self._master)
        self._loop.add_reader(slow._master, slow._on_output)
        if self._watch is not None:
            self._watch.cancel()
        slow._watch = asyncio.ensure_future(slow._watch_exit())
        self.proc, self.pid, self._master, self._cmd_w, self._files, self._watch = None, -1, -1, -1, [], None
        self._slow, self._slow_task = slow, asyncio.ensure_future(slow._finish_rc(self.rc_finish_cap))

    async def _finish_rc(self, cap: float) -> None:
        assert self._ready is not None
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._ready), cap)
        await self.kill()
        log.info("agent shell: the slow rc files' shell (pid %s) ended", self.pid)

    async def _teardown(self) -> None:
        await self.kill()
        self.proc = None
        self.pid = -1
        self._kill_task = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None and not self.exited

    def cwd_now(self) -> str:
        pid = self.sandbox.shell_pid(self.pid) if self.sandbox is not None else self.pid  # not bubblewrap's
        if pid > 0 and self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(OSError):
                return os.readlink(f"/proc/{pid}/cwd")
        return self.last_cwd

    async def _watch_exit(self) -> None:
        proc = self.proc
        assert proc is not None
        code = await proc.wait()
        self._drain()
        self.exited = True
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(None)
        cmd = self.running
        if cmd is not None:
            self._release()  # an exec'd program's output (while it is still the running command's)
            self.running = None
            self._flush_agent()
            cmd.finish(128 - code if code < 0 else code, self.last_cwd, True)

    async def kill(self) -> None:
        """End the shell as a closed terminal does (SIGHUP, grace, SIGKILL), with everything it started."""
        if self._kill_task is None:
            self._kill_task = asyncio.ensure_future(self._end())
        await asyncio.shield(self._kill_task)

    async def _end(self) -> None:
        ends = []
        if self._slow is not None:
            slow, task = self._slow, self._slow_task
            self._slow = self._slow_task = None
            if task is not None:
                task.cancel()  # waiting for its rc files: stop waiting (a kill under way goes on, shielded)
            ends.append(slow.kill())
        if self.proc is not None:
            spare = ("bwrap",) if self.sandbox is not None else ()  # the sandbox's wrappers: see hang_up
            ends.append(ptyproc.hang_up(self.proc, spare=spare))
        await asyncio.gather(*ends)
        if self._watch is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._watch), 1)
        self._drain()
        self._close()

    def _close(self) -> None:
        if self._boot_task is not None:
            self._boot_task.cancel()
            self._boot_task = None
        if self._master >= 0:
            self._loop.remove_reader(self._master)
            with contextlib.suppress(OSError):
                os.close(self._master)
            self._master = -1
        if self._cmd_w >= 0:
            with contextlib.suppress(OSError):
                os.close(self._cmd_w)
            self._cmd_w = -1
        self._remove_files()

    def _remove_files(self) -> None:
        for path in reversed(self._files):
            with contextlib.suppress(OSError):
                if os.path.isdir(path):
                    os.rmdir(path)
                else:
                    os.unlink(path)
        self._files = []

    # ------------------------------------------------------------------ reading
    def _drain(self) -> None:
        self._read(None)

    def _on_output(self) -> None:
        self._read(16)

    def _read(self, max_chunks: int | None) -> None:
        n = 0
        while self._master >= 0 and (max_chunks is None or n < max_chunks):
            try:
                data = os.read(self._master, READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # EIO: every process holding the pty's slave is gone
                data = b""
            if not data:
                self._loop.remove_reader(self._master)
                return
            self._apply(self._parser.feed(data))
            n += 1

    def _apply(self, events: list[markers.Event]) -> None:
        for ev in events:
            if isinstance(ev, markers.Output):
                if self._held is not None:
                    self._hold(ev.data)
                else:
                    self._agent(ev.data)
            elif isinstance(ev, markers.View):
                self._view(ev.data)
            elif isinstance(ev, markers.Started):
                if self._pending_display:
                    self._view_text(self._pending_display)
                    self._pending_display = ""
            elif isinstance(ev, markers.Done):
                self.last_cwd = ev.cwd or self.last_cwd
                if ev.path is not None:
                    self.last_path = ev.path
                if ev.ended:
                    self._release()
                    self._complete(ev.status)
            elif isinstance(ev, markers.Exited):
                # The shell is exiting: its process's exit status (``_watch_exit``) is the command's exit
                # code (zsh's zshexit hooks see $? = 1 whatever `exit N` said).
                self.last_cwd = ev.cwd or self.last_cwd
                self.exited = True
            elif isinstance(ev, markers.Exec):
                self._on_exec(ev.token)
            elif isinstance(ev, markers.Boot):
                self._held = None  # the exec'd shell's startup output: the live view showed it
            elif isinstance(ev, markers.Ready):
                with contextlib.suppress(termios.error, OSError):
                    self._sane = termios.tcgetattr(self._master)
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(ev)

    def _view(self, data: bytes) -> None:
        if self.on_data is None:
            return
        text = self._view_dec.decode(data)
        if text:
            self.on_data(text)

    def _view_text(self, text: str) -> None:
        if self.on_data is not None:
            self.on_data(text)

    def _agent(self, data: bytes, final: bool = False) -> None:
        text = self._cr + self._agent_dec.decode(data, final)
        self._cr = ""
        if text.endswith("\r") and not final:  # the pty's CRLF may be split between two reads
            self._cr, text = "\r", text[:-1]
        cmd = self.running
        if not text or cmd is None:
            return
        text, needs = clean(text)
        if needs:
            cmd.render = True
        if not text:
            return
        cmd.buffer.add(text)
        if cmd.sink is not None:
            cmd.sink(text)
        if cmd.stream is not None:
            cmd.stream(text)
        cmd.last_output = time.monotonic()
        cmd.changed.set()

    def _flush_agent(self) -> None:
        for ev in self._parser.release(final=True):
            self._agent(ev.data)
        self._agent(b"", final=True)

    def _complete(self, status: int) -> None:
        self._agent(b"", final=True)
        if self.env_snapshot:
            try:
                with open(self.env_snapshot, encoding="utf-8", errors="surrogateescape") as f:
                    self.exports = f.read(1 << 20)
            except OSError:
                pass
        cmd = self.running
        if cmd is None:
            return
        self.running = None
        cmd.finish(status, self.last_cwd, False)

    def flush_pending(self) -> None:
        self._drain()
        if self._parser.state == "command":
            self._release(keep=True)
            for ev in self._parser.release():
                self._agent(ev.data)
            self._agent(b"")

    # ------------------------------------------------------------------ exec of a shell
    def _on_exec(self, token: str) -> None:
        """The command is about to ``exec`` a program (shellinit's ``exec`` alias said so). If that program is
        a shell of this kind, it boots with oh's hooks (B marker, then the end marker with exit code 0) and
        what it printed while starting (rc banners, hooks, a prompt) is dropped from the command's output as
        a new shell's is; any other program's output is the command's: held until the command ends or is
        peeked at. A bash whose rc files replaced PROMPT_COMMAND (the boot's carrier) gets the boot line
        typed at its first prompt (``_type_boot``)."""
        if self.running is None:
            return
        self._release()
        self._held = []
        if self._boot_task is not None:
            self._boot_task.cancel()  # a previous exec's (its loop may not have woken up to its end yet)
            self._boot_task = None
        if self.kind == "bash":
            self._boot_task = asyncio.ensure_future(self._type_boot(self.running, token))

    def _hold(self, data: bytes) -> None:
        assert self._held is not None
        self._held.append(data)
        if self.running is not None:
            self.running.last_output = time.monotonic()  # output all the same: no "no new output" timeout
        if sum(map(len, self._held)) > HOLD_CAP:
            self._release()  # no shell's startup prints that much: a program's output, handed on from now

    def _release(self, keep: bool = False) -> None:
        held, self._held = self._held, ([] if keep and self._held is not None else None)
        for data in held or ():
            self._agent(data)

    async def _type_boot(self, cmd: Command, token: str) -> None:
        # Bounded like a shell's start: a bash still reading slow rc files after it gets no boot (its
        # command then runs to its timeout, as before).
        deadline = self._loop.time() + self.startup_timeout
        while self.running is cmd and self._held is not None and self._loop.time() < deadline:
            await asyncio.sleep(BOOT_POLL)
            if self.running is cmd and self._held is not None and self._bash_prompt_of(token):
                await write_all(self._loop, self._master, b" " + initfiles.BOOT_LINE.encode() + b"\r")
                return

    def _bash_prompt_of(self, token: str) -> bool:
        """The shell's process is a bash that this exec started (its environment holds ``token``), reading
        its first command line with readline (the terminal in its raw mode, the shell in the foreground)."""
        pid = self.sandbox.shell_pid(self.pid) if self.sandbox is not None else self.pid
        if pid <= 0 or self._master < 0:
            return False
        try:
            with open(f"/proc/{pid}/comm", "rb") as f:
                if f.read().strip() != b"bash":
                    return False
            with open(f"/proc/{pid}/environ", "rb") as f:
                boot = next((e for e in f.read().split(b"\0") if e.startswith(b"__oh_boot=")), b"")
            if boot.split(b" ")[3:4] != [token.encode()]:
                return False
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"-c" in f.read().split(b"\0")[1:]:
                    return False  # bash -c: not interactive, its stdin is not for us
            lflag = termios.tcgetattr(self._master)[3]
            return not lflag & (termios.ICANON | termios.ECHO) and os.tcgetpgrp(self._master) == pid
        except (OSError, termios.error):
            return False

    # ------------------------------------------------------------------ commands
    def submit(self, text: str, internal: bool = False, limit: int | None = None) -> Command:
        assert self.running is None and self.alive
        cmd = Command(text, self.limit if limit is None else limit, internal)
        cmd.job_notices = True
        self.running = cmd
        self._held = None
        self._parser.expect_trigger(self._trigger.replace(b"\n", b"\r\n"))
        if not internal:
            self._pending_display = text.replace("\n", "\r\n") + "\r\n"
        asyncio.ensure_future(self._send(encode(text) + b"\0"))
        return cmd

    async def _send(self, data: bytes) -> None:
        # A program that died in raw mode (a killed editor) leaves the terminal so; the shell reads our
        # trigger line in the modes it had when it became ready, as an interactive shell restores them.
        with contextlib.suppress(termios.error, OSError):
            if self._sane is not None and termios.tcgetattr(self._master) != self._sane:
                termios.tcsetattr(self._master, termios.TCSANOW, self._sane)
        try:
            # The trigger first: the shell then reads the pipe while we fill it (a command bigger than
            # the pipe's buffer would otherwise wait for a reader that waits for the trigger).
            await write_all(self._loop, self._master, self._trigger)
            await write_all(self._loop, self._cmd_w, data)
        except OSError:
            pass  # the shell is gone; _watch_exit finishes the command

    async def send_input(self, data: bytes, hide_echo: bool = True) -> None:
        data = data.replace(b"\n", b"\r")
        if hide_echo:
            with contextlib.suppress(termios.error):
                lflag = termios.tcgetattr(self._master)[3]
                if lflag & termios.ECHO and lflag & termios.ICANON:
                    self._parser.expect_input(data.replace(b"\r", b"\r\n"))
        await write_all(self._loop, self._master, data)

    async def send_key(self, key: str) -> None:
        """C-c / C-d / C-z and the other control keys, through the line discipline. The terminal's
        echo of a signal key (``^C``, ``^Z``) is kept out of the agent's output, as typed input is."""
        code = ord(key.upper()) - 64
        with contextlib.suppress(termios.error):
            attrs = termios.tcgetattr(self._master)
            lflag, cc = attrs[3], attrs[6]
            signal_keys = {cc[termios.VINTR], cc[termios.VQUIT], cc[termios.VSUSP]}
            if (
                lflag & termios.ISIG
                and lflag & termios.ECHO
                and lflag & termios.ECHOCTL
                and bytes([code]) in signal_keys
            ):
                self._parser.expect_input(b"^" + bytes([code + 64]))
        await write_all(self._loop, self._master, bytes([code]))

    def interrupt(self, sig: int = signal.SIGINT) -> None:
        """Signal the terminal's foreground process group (the running job, or the shell itself)."""
        target = -1
        with contextlib.suppress(OSError):
            target = os.tcgetpgrp(self._master)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if target > 0:
                os.killpg(target, sig)
            elif self.pid > 0:
                os.kill(self.pid, sig)
