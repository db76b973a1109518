"""The agent's shell engine: the user's own shell, interactive, on a real pty (docs/protocol.md §3.4.1).

``PtyShell`` has ``BashShell``'s interface (shell.py), so ``Terminal`` and ``ShellGroup`` drive either.

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
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import fcntl
import logging
import os
import secrets
import shutil
import signal
import struct
import termios
import time

from .output import OutputBuffer
from .render import COLS, ROWS, clean, render
from .sandbox import Sandbox
from .shell import Command, descendants, encode, write_all

log = logging.getLogger("oh.runtimes.local")

READ_CHUNK = 1 << 16
STARTUP_TIMEOUT = 5.0
OSC = b"\x1b]6973;"
SEP = "\x1f"


def pick_shell(env: dict[str, str], user_shell: bool) -> tuple[str, str, str]:
    """(kind, path, note): the user's ``$SHELL`` if bash or zsh, else bash (with a note)."""
    bash = shutil.which("bash", path=env.get("PATH")) or shutil.which("bash") or "/bin/bash"
    if not user_shell:
        return "bash", bash, ""
    wanted = env.get("SHELL", "")
    name = os.path.basename(wanted)
    if name in ("bash", "zsh") and os.access(wanted, os.X_OK):
        return name, wanted, ""
    if name in ("bash", "zsh"):
        found = shutil.which(name, path=env.get("PATH"))
        if found:
            return name, found, ""
    if not wanted:
        return "bash", bash, ""
    return "bash", bash, f"Your shell {wanted} is not bash or zsh; the agent's shell is bash (reading ~/.bashrc)."


def _q(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _bash_init(nonce: str, fd: int, run_file: str, snap: str, user_rc: bool) -> str:
    rc = ""
    if user_rc:
        rc = (
            "[ -r /etc/bash.bashrc ] && builtin source /etc/bash.bashrc\n"
            '__oh_rcst=0; if [ -r "$HOME/.bashrc" ]; then builtin source "$HOME/.bashrc"; __oh_rcst=$?; fi\n'
        )
    return (
        rc
        + f"""
__oh_n={nonce}
builtin exec {{__oh_m}}>&2 {{__oh_fd}}<&{fd} {fd}<&-
case $- in *e*|*u*) __oh_eu=1;; *) __oh_eu=;; esac
builtin set +e +u +o emacs +o vi +o history +b -m
builtin unset HISTFILE
builtin shopt -s expand_aliases
PS2=
__oh_run={_q(run_file)} __oh_snap={_q(snap)} __oh_dbgf={_q(run_file + ".trap")} __oh_ran=
__oh_pc() {{
  builtin local __oh_st=$? __oh_r=${{__oh_ran-}}
  __oh_ran=
  [[ -n $__oh_r && -n $__oh_snap ]] && builtin export -p >| "$__oh_snap" 2>/dev/null
  __oh_last=$__oh_st
  builtin printf '\\e]6973;%s;D;%s\\x1f%s\\x1f%s\\a' "$__oh_n" "$__oh_st" "$PWD" "$PATH" >&$__oh_m
  [[ -n $__oh_r && -s $__oh_dbgf ]] && builtin source "$__oh_dbgf"
  builtin return $__oh_st
}}
__oh_ret() {{ builtin return "$1"; }}  # the previous command's $? for the next one, as in a terminal
__oh_x() {{ builtin printf '\\e]6973;%s;X;%s\\x1f%s\\a' "$__oh_n" "$?" "$PWD" >&$__oh_m; }}
[[ -z $(builtin trap -p EXIT) ]] && builtin trap __oh_x EXIT
PROMPT_COMMAND="__oh_pc;${{PROMPT_COMMAND:-}}"
builtin printf '\\e]6973;%s;R;%s;%s\\a' "$__oh_n" "$__oh_eu" "${{__oh_rcst:-0}}" >&$__oh_m
"""
    )


_BASH_RUN = r"""IFS= builtin read -r -d '' -u "$__oh_fd" __oh_cmd
__oh_ran=1
case ${PROMPT_COMMAND-} in __oh_pc\;*) ;; *) PROMPT_COMMAND="__oh_pc;${PROMPT_COMMAND-}";; esac
builtin printf '\e]6973;%s;S\a' "$__oh_n" >&$__oh_m
__oh_ret "${__oh_last:-0}" && :  # (in an && list: `set -e` does not fire on it)
builtin eval "$__oh_cmd"
"""


def _zsh_files(nonce: str, fd: int, run_file: str, snap: str) -> tuple[str, str]:
    zshenv = """__oh_zd=$ZDOTDIR
ZDOTDIR=${OH_USER_ZDOTDIR:-$HOME}
builtin unset OH_USER_ZDOTDIR
[[ -r $ZDOTDIR/.zshenv ]] && builtin source $ZDOTDIR/.zshenv
__oh_user_zd=$ZDOTDIR
ZDOTDIR=$__oh_zd
"""
    zshrc = f"""ZDOTDIR=$__oh_user_zd
builtin unset __oh_user_zd __oh_zd
__oh_rcst=0; if [[ -r $ZDOTDIR/.zshrc ]]; then builtin source $ZDOTDIR/.zshrc; __oh_rcst=$?; fi
__oh_n={nonce}
builtin exec {{__oh_m}}>&2
__oh_fd={fd}  # zsh redirections take one-digit fds only; `read -u` takes any
if [[ -o errexit || -o nounset ]]; then __oh_eu=1; else __oh_eu=; fi
builtin unsetopt errexit nounset zle notify prompt_sp prompt_cr check_jobs check_running_jobs
builtin setopt monitor
builtin unset HISTFILE
PS2=
__oh_run={_q(run_file)} __oh_snap={_q(snap)} __oh_ran=
__oh_pc() {{
  builtin local __oh_st=$?
  if [[ -n ${{__oh_ran-}} ]]; then
    __oh_ran=
    [[ -n $__oh_snap ]] && builtin export -p >| "$__oh_snap" 2>/dev/null
  fi
  __oh_last=$__oh_st
  builtin printf '\\e]6973;%s;D;%s\\x1f%s\\x1f%s\\a' "$__oh_n" "$__oh_st" "$PWD" "$PATH" >&$__oh_m
  builtin return $__oh_st
}}
__oh_ret() {{ builtin return "$1"; }}  # the previous command's $? for the next one, as in a terminal
__oh_x() {{ (( ZSH_SUBSHELL )) || builtin printf '\\e]6973;%s;X;%s\\x1f%s\\a' "$__oh_n" "$?" "$PWD" >&$__oh_m; }}
builtin typeset -ga precmd_functions zshexit_functions
__oh_hooks() {{
  # zsh runs a function named precmd before precmd_functions: keep ours first by moving it into the array.
  if (( $+functions[precmd] )); then
    functions[__oh_user_precmd]=$functions[precmd]
    builtin unfunction precmd
    precmd_functions=(__oh_user_precmd ${{precmd_functions:#__oh_user_precmd}})
  fi
  [[ ${{precmd_functions[1]-}} == __oh_pc ]] || precmd_functions=(__oh_pc ${{precmd_functions:#__oh_pc}})
}}
__oh_hooks
zshexit_functions+=(__oh_x)
builtin printf '\\e]6973;%s;R;%s;%s\\a' "$__oh_n" "$__oh_eu" "${{__oh_rcst:-0}}" >&$__oh_m
"""
    return zshenv, zshrc


_ZSH_RUN = r"""IFS= builtin read -r -d '' -u $__oh_fd __oh_cmd
__oh_ran=1
__oh_hooks
builtin printf '\e]6973;%s;S\a' "$__oh_n" >&$__oh_m
__oh_ret "${__oh_last:-0}" && :  # (in an && list: `set -e` does not fire on it)
builtin eval "$__oh_cmd"
"""


class StartupFailed(Exception):
    """The user's shell did not come up (rc files exited, hung or killed it)."""


def _prefix_hold(data: bytes, needle: bytes) -> int:
    """Length of the longest tail of ``data`` that is a proper prefix of ``needle``."""
    for k in range(min(len(needle) - 1, len(data)), 0, -1):
        if data.endswith(needle[:k]):
            return k
    return 0


class PtyShell:
    """One interactive shell on a pty (the same interface as ``shell.BashShell``)."""

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
        on_data=None,
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
        self.on_data = on_data  # called with the visible terminal's text (the live view / host)
        self.sandbox = sandbox  # bubblewrap around the shell (sandbox.py); None: unconfined
        self.proc: asyncio.subprocess.Process | None = None
        self.pid = -1
        self.running: Command | None = None
        self.last_cwd = cwd
        self.last_path = env.get("PATH", "")
        self.exited = False
        self.stdin_closed = False  # a pty never closes: C-d is a key (kept for BashShell's interface)
        self.kind = "bash"
        self.path = ""
        self.rc = False  # the user's rc files were read
        self.note = ""  # said once: why the clean shell runs, or a fix made to the rc's settings
        self._idle = OutputBuffer(max_output_chars)  # BashShell interface (always empty here)
        self._master = -1
        self._cmd_w = -1
        self._files: list[str] = []
        self._nonce = b""
        self._buf = b""  # bytes not yet parsed (an unfinished marker)
        self._state = "startup"  # startup -> idle <-> command
        self._agent_dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._view_dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._trigger = b""
        self._echo_view = b""  # expected echo of the trigger line (removed from the live view)
        self._echo_agent = b""  # expected echo of is_input text (removed from the agent's output)
        self._echo_hold = b""
        self._ready: asyncio.Future | None = None
        self._watch: asyncio.Task | None = None
        self._loop = asyncio.get_running_loop()
        self._pending_display = ""
        self._startup_out = b""
        self._cr = ""
        self._sane: list | None = (
            None  # the terminal's modes when the shell became ready  # what the rc files printed (the log shows it when they fail)
        )

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        kind, path, note = pick_shell(self.env, self.user_shell)
        if self.user_shell:
            try:
                await self._spawn(kind, path, True)
                self.note = " ".join(x for x in (note, self.note) if x)
                return
            except StartupFailed as e:
                await self._teardown()
                tail = render(clean(self._startup_out.decode("utf-8", "replace"))[0]).strip()[-1500:]
                log.warning("agent shell: %s failed to start; its output: %s", path, tail or "(none)")
                self.note = f"{note + ' ' if note else ''}{e} The agent's shell is the clean shell (bash without rc files) for this session."
                log.warning("agent shell: %s", self.note)
        await self._spawn(*pick_shell(self.env, False)[:2], False)

    async def _spawn(self, kind: str, path: str, user_rc: bool) -> None:
        self.kind, self.path, self.rc = kind, path, user_rc
        self._state = "startup"
        self._buf = b""
        nonce = secrets.token_hex(8)
        self._nonce = nonce.encode()
        tag = f"{os.getpid()}-{nonce}"
        run_file = os.path.join(self.dir, f"run-{tag}")
        if kind == "bash":
            # bash's `source` puts back a DEBUG trap it found when it returns, so the user's trap is saved
            # and cleared on the trigger line itself: it cannot fire between the command and our D marker.
            self._trigger = f" builtin trap -p DEBUG >| {_q(run_file + '.trap')}; builtin trap - DEBUG; builtin source {_q(run_file)}\n".encode()
        else:
            self._trigger = f" builtin source {_q(run_file)}\n".encode()
        master, slave = os.openpty()
        cmd_r, cmd_w = os.pipe()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        env = dict(self.env)
        env["TERM"] = "xterm-256color"
        env["COLUMNS"], env["LINES"] = str(COLS), str(ROWS)
        env.pop("PROMPT_COMMAND", None)
        files: list[str] = [run_file, run_file + ".trap"]
        if kind == "zsh":
            zdot = os.path.join(self.dir, f"zdot-{tag}")
            os.mkdir(zdot, 0o700)
            zshenv, zshrc = _zsh_files(nonce, cmd_r, run_file, self.env_snapshot)
            for name, text in ((".zshenv", zshenv), (".zshrc", zshrc)):
                with open(os.path.join(zdot, name), "w") as f:
                    f.write(text)
                files.append(os.path.join(zdot, name))
            files.append(zdot)
            if "ZDOTDIR" in env:
                env["OH_USER_ZDOTDIR"] = env["ZDOTDIR"]
            env["ZDOTDIR"] = zdot
            argv = [path, "-i"]
            run_text = _ZSH_RUN
        else:
            init = os.path.join(self.dir, f"init-{tag}")
            with open(init, "w") as f:
                f.write(_bash_init(nonce, cmd_r, run_file, self.env_snapshot, user_rc))
            files.append(init)
            argv = [path, "--noprofile", "--rcfile", init, "-i"]
            run_text = _BASH_RUN
        with open(run_file, "w") as f:
            f.write(run_text)
        self._files = files

        def child_setup() -> None:  # runs in the child after setsid (start_new_session)
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        try:
            if self.sandbox is not None:  # the one sandbox hook: one sandbox around the whole shell
                argv = self.sandbox.wrap(argv, env, cwd=self.start_cwd, scratch=(self.dir,))
            self.proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                pass_fds=(cmd_r,),
                start_new_session=True,
                preexec_fn=child_setup,
                cwd=self.start_cwd,
                env=env,
            )
        except BaseException:
            for fd in (master, slave, cmd_r, cmd_w):
                os.close(fd)
            raise
        os.close(slave)
        os.close(cmd_r)
        os.set_blocking(master, False)
        os.set_blocking(cmd_w, False)
        self.pid = self.proc.pid
        self.exited = False
        self._master, self._cmd_w = master, cmd_w
        self._ready = self._loop.create_future()
        self._loop.add_reader(master, self._on_output)
        self._watch = asyncio.ensure_future(self._watch_exit())
        try:
            eu = await asyncio.wait_for(asyncio.shield(self._ready), self.startup_timeout)
        except asyncio.TimeoutError:
            raise StartupFailed(f"Your {kind} rc files did not finish within {self.startup_timeout:g} s.") from None
        if eu is None:
            code = self.proc.returncode
            raise StartupFailed(f"Your {kind} exited while reading its rc files (exit code {code}).")
        eu, rcst = eu
        notes = []
        rcfile = "~/.bashrc" if kind == "bash" else "~/.zshrc"
        if rcst.isdigit() and int(rcst) >= 2:
            notes.append(
                f"Your {rcfile} ended with an error (status {rcst}); the shell works, its messages are in the terminal's startup output."
            )
        if eu:
            notes.append(f"Your {kind} rc files turned on `set -e`/`set -u`; oh turned them off in the agent's shell.")
        if notes:
            self.note = " ".join(notes)
            log.warning("agent shell: %s", self.note)

    async def _teardown(self) -> None:
        await self.kill()
        self.proc = None
        self.pid = -1

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
            self.running = None
            self._flush_agent()
            cmd.finish(128 - code if code < 0 else code, self.last_cwd, True)

    def _descendants(self) -> list:
        return descendants(self.pid)

    async def kill(self) -> None:
        """Kill the shell and everything it started (its jobs have process groups of their own)."""
        stray = self._descendants()
        groups = set()
        for p in stray:
            with contextlib.suppress(Exception):
                groups.add(os.getpgid(p.pid))
        if self.pid > 0:
            groups.add(self.pid)
        for g in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(g, signal.SIGKILL)
        for p in stray:
            with contextlib.suppress(Exception):
                p.kill()
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.proc.wait()), 5)
        if self._watch is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._watch), 1)
        self._drain()
        self._close()

    def _close(self) -> None:
        if self._master >= 0:
            self._loop.remove_reader(self._master)
            with contextlib.suppress(OSError):
                os.close(self._master)
            self._master = -1
        if self._cmd_w >= 0:
            with contextlib.suppress(OSError):
                os.close(self._cmd_w)
            self._cmd_w = -1
        for path in reversed(self._files):
            with contextlib.suppress(OSError):
                if os.path.isdir(path):
                    os.rmdir(path)
                else:
                    os.unlink(path)
        self._files = []

    # ------------------------------------------------------------------ reading
    def _drain(self) -> None:
        while self._master >= 0:
            try:
                data = os.read(self._master, READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # EIO: every process holding the pty's slave is gone
                data = b""
            if not data:
                self._loop.remove_reader(self._master)
                return
            self._parse(data)

    def _on_output(self) -> None:
        for _ in range(16):
            if self._master < 0:
                return
            try:
                data = os.read(self._master, READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._loop.remove_reader(self._master)
                return
            self._parse(data)

    def _parse(self, data: bytes) -> None:
        buf = self._buf + data if self._buf else data
        self._buf = b""
        head = OSC + self._nonce + b";"
        while buf:
            i = buf.find(b"\x1b]")
            while i >= 0 and not head.startswith(buf[i : i + len(head)]) and not buf.startswith(head, i):
                i = buf.find(b"\x1b]", i + 2)
            if i < 0:
                # No marker start; hold back a tail that could begin one.
                hold = _prefix_hold(buf, head)
                self._text(buf[: len(buf) - hold])
                self._buf = buf[len(buf) - hold :]
                return
            if i > 0:
                self._text(buf[:i])
                buf = buf[i:]
            if len(buf) < len(head):
                self._buf = buf
                return
            end = buf.find(b"\x07", len(head))
            if end < 0:
                self._buf = buf
                return
            self._marker(buf[len(head) : end].decode("utf-8", "surrogateescape"))
            buf = buf[end + 1 :]

    def _view(self, data: bytes) -> None:
        if self.on_data is None:
            return
        text = self._view_dec.decode(data)
        if text:
            self.on_data(text)

    def _text(self, data: bytes) -> None:
        """Bytes between markers: the live view gets them all (but the trigger's echo); a running
        command's output only those between its S and D markers."""
        if not data:
            return
        if self._state == "startup" and len(self._startup_out) < 4096:
            self._startup_out += data[: 4096 - len(self._startup_out)]
        if self._state != "command":
            if self._echo_view:
                data = self._echo_hold + data
                self._echo_hold = b""
                j = data.find(self._echo_view)
                if j >= 0:
                    data = data[:j] + data[j + len(self._echo_view) :]
                    self._echo_view = b""
                else:
                    hold = _prefix_hold(data, self._echo_view)
                    if hold:
                        self._echo_hold, data = data[-hold:], data[:-hold]
            self._view(data)
            return
        self._view(data)
        if self._echo_agent:
            # The echo of is_input text comes first (the line discipline echoes before the program
            # reads); drop it from the agent's copy only if the output really starts with it.
            data = self._echo_hold + data
            self._echo_hold = b""
            want = self._echo_agent
            if data.startswith(want):
                data = data[len(want) :]
                self._echo_agent = b""
            elif want.startswith(data):
                self._echo_hold = data
                return
            else:
                self._echo_agent = b""
        self._agent(data)

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
        cmd.last_output = time.monotonic()
        cmd.changed.set()

    def _flush_agent(self) -> None:
        if self._echo_hold and self._state == "command":
            hold, self._echo_hold = self._echo_hold, b""
            self._agent(hold)
        self._agent(b"", final=True)

    def _marker(self, body: str) -> None:
        kind, _, rest = body.partition(";")
        if kind == "R":
            with contextlib.suppress(termios.error, OSError):
                self._sane = termios.tcgetattr(self._master)
            eu, _, rcst = rest.partition(";")
            if self._ready is not None and not self._ready.done():
                self._ready.set_result((eu == "1", rcst))
            self._state = "idle"
        elif kind == "S":
            if self._echo_hold:
                self._view(self._echo_hold)
                self._echo_hold = b""
            self._echo_view = b""
            self._state = "command"
            if self._pending_display:
                self._view_text(self._pending_display)
                self._pending_display = ""
        elif kind in ("D", "X"):
            fields = rest.split(SEP)
            try:
                status = int(fields[0] or "-1")
            except ValueError:
                status = -1
            if len(fields) > 1 and fields[1]:
                self.last_cwd = fields[1]
            if len(fields) > 2:
                self.last_path = fields[2]
            if kind == "X":
                # The shell is exiting: its process's exit status (``_watch_exit``) is the command's
                # exit code (zsh's zshexit hooks see $? = 1 whatever `exit N` said).
                self.exited = True
                return
            if self._state == "command":
                self._state = "idle"
                self._complete(status, False)

    def _view_text(self, text: str) -> None:
        if self.on_data is not None:
            self.on_data(text)

    def _complete(self, status: int, shell_exited: bool) -> None:
        self._flush_agent()
        self._echo_agent = b""
        if not shell_exited and self.env_snapshot:
            try:
                with open(self.env_snapshot, encoding="utf-8", errors="surrogateescape") as f:
                    self.exports = f.read(1 << 20)
            except OSError:
                pass
        cmd = self.running
        if cmd is None:
            return
        self.running = None
        cmd.finish(status, self.last_cwd, shell_exited)

    def flush_pending(self) -> None:
        self._drain()
        if self._state == "command":
            if self._echo_hold and not self._echo_agent:
                self._flush_agent()
            else:
                self._agent(b"")

    # ------------------------------------------------------------------ commands
    async def _write(self, fd: int, data: bytes) -> None:
        await write_all(self._loop, fd, data)

    def submit(self, text: str, internal: bool = False, limit: int | None = None) -> Command:
        assert self.running is None and self.alive
        cmd = Command(text, self.limit if limit is None else limit, internal)
        cmd.job_notices = True
        self.running = cmd
        self._echo_agent = b""
        self._echo_hold = b""
        self._echo_view = self._trigger.replace(b"\n", b"\r\n")
        if not internal:
            self._pending_display = text.replace("\n", "\r\n") + "\r\n"
        data = encode(text) + b"\0"
        asyncio.ensure_future(self._send(data))
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
            await self._write(self._master, self._trigger)
            await self._write(self._cmd_w, data)
        except OSError:
            pass  # the shell is gone; _watch_exit finishes the command

    async def send_input(self, data: bytes, hide_echo: bool = True) -> None:
        data = data.replace(b"\n", b"\r")
        if hide_echo:
            with contextlib.suppress(termios.error):
                lflag = termios.tcgetattr(self._master)[3]
                if lflag & termios.ECHO and lflag & termios.ICANON:
                    self._echo_agent = data.replace(b"\r", b"\r\n")
        await self._write(self._master, data)

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
                self._echo_agent = b"^" + bytes([code + 64])
        await self._write(self._master, bytes([code]))

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

    def close_stdin(self) -> None:
        """C-d: end-of-file for the program reading the terminal (a pty never closes for good)."""
        if self._master >= 0:
            with contextlib.suppress(OSError):
                os.write(self._master, b"\x04")

    async def reopen_stdin(self, fifo_dir: str) -> None:  # pragma: no cover - stdin never closes
        self.stdin_closed = False
