"""One persistent bash process, driven through pipes (no pty, no prompt parsing).

Since issue 17 the agent's shell is ``engine.PtyShell`` (the user's shell on a pty); this one remains for
systems without a pty (and ``OH_SHELL_ENGINE=pipes``). ``Command`` is shared by both.

Layout of the process (``bash --noprofile --norc -c LOOP``, its own session and process group):

- fd 0: a pipe we write to -- it stays the *command's* stdin, so ``is_input`` text reaches ``read x``;
- fd 1 and fd 2: one pipe, so stdout and stderr arrive merged and in order, byte-exact;
- a command pipe (moved to fd 254 or so, out of the way of a script's own ``exec 3<file``): the loop
  reads one NUL-terminated command at a time from it;
- a marker pipe: after each command the loop writes ``D<status>\\0<cwd>\\0<PATH>\\0``; an EXIT trap
  writes ``X<status>\\0<cwd>\\0<PATH>\\0`` when the shell itself exits (``exit 3``, ``set -e``), so the exit code and
  the directory survive the shell. Markers never touch the output, so output needs no scrubbing.

Each command is ``source``d from a tiny file holding ``eval "$__oh_cmd"``: at top level (a ``declare``
stays global, unlike inside a function) yet ``return`` is legal, which is what ``trap 'return 130' INT``
needs: a C-c (SIGINT to the process group) kills the foreground program (children of a shell reset a
trapped signal to its default on exec), then aborts the rest of the command line with status 130, as
an interactive shell would, while the shell survives. Background jobs of a shell without job control
ignore SIGINT, as in a terminal.

Output is read with non-blocking ``os.read`` from the event loop and streamed into a bounded
``OutputBuffer`` per command; when a marker arrives the output pipe is drained first (the command's
writes happened before the marker's), so nothing is attributed to the wrong command. Output printed
while no command runs (a background job) goes to the next command.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import fcntl
import os
import shutil
import signal
import time
from .output import OutputBuffer
from .render import drop_job_notices, render

try:  # psutil finds descendants that left the process group (setsid); optional at runtime
    import psutil
except ImportError:  # pragma: no cover
    psutil = None

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
READ_CHUNK = 1 << 20
PIPE_SIZE = 256 * 1024  # fewer wake-ups on huge output; small enough for 100s of shells under the user pipe quota

LOOP = r"""
eval "exec $4<&$1 $5>&$2 $1<&- $2>&-"
__oh_in=$4 __oh_mark=$5 __oh_src=$3 __oh_snap=$6
set --
shopt -s expand_aliases
trap 'return 130 2>/dev/null' INT
trap 'builtin printf "X%s\0%s\0%s\0" "$?" "$PWD" "$PATH" >&"$__oh_mark"' EXIT
while :; do
  if IFS= builtin read -r -d '' -u "$__oh_in" __oh_cmd; then
    builtin source "$__oh_src"
    __oh_st=$?
    [[ -n $__oh_snap ]] && builtin export -p 2>/dev/null >|"$__oh_snap"
    builtin printf 'D%s\0%s\0%s\0' "$__oh_st" "$PWD" "$PATH" >&"$__oh_mark"
  elif (( $? <= 128 )); then
    break
  fi
done
"""
SOURCE_FILE_TEXT = 'eval "$__oh_cmd"\n'


def _high_fds(*avoid: int) -> list[int]:
    """Where the shell moves its two control pipes: high numbers a script's `exec 3<file` won't hit."""
    return [fd for fd in range(254, 200, -1) if fd not in avoid][:2]


def _set_nonblocking(fd: int) -> None:
    os.set_blocking(fd, False)


def encode(text: str) -> bytes:
    """UTF-8; a lone surrogate (possible in JSON) becomes U+FFFD instead of an exception."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def descendants(pid: int) -> list:
    """Every process ``pid`` started, also those that left its process group (psutil; [] without it)."""
    if psutil is None or pid <= 0:
        return []
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


async def write_all(loop: asyncio.AbstractEventLoop, fd: int, data: bytes) -> None:
    """Write all of ``data`` to the non-blocking ``fd``, waiting on the loop while it is full."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
            view = view[n:]
            continue
        except BlockingIOError:
            pass
        ready = loop.create_future()
        loop.add_writer(fd, lambda: ready.done() or ready.set_result(None))
        try:
            await ready
        finally:
            loop.remove_writer(fd)


class Command:
    """One command in flight: its output so far and, once finished, its status."""

    def __init__(self, text: str, limit: int, internal: bool = False) -> None:
        self.text = text
        self.command = text  # the agent's command as sent (``text`` may carry a `cd` prefix)
        self.internal = internal
        self.limit = limit
        self.buffer = OutputBuffer(limit)
        self.changed = asyncio.Event()  # new output or completion
        self.started = time.monotonic()
        self.last_output = self.started
        self.exit_code: int | None = None
        self.cwd: str | None = None
        self.shell_exited = False  # the shell itself exited (exit N, set -e, killed)
        self.job_id: str | None = None  # how follow-ups and job ops name it (docs/protocol.md §3.8)
        self.sink = None  # called with every chunk of output (a background job's spool)
        self.stream = None  # likewise, for the agent waiting for it that asked for progress (Terminal._wait)
        self.finished = asyncio.Event()  # set once, when the command ends
        self.render = False  # the output holds control bytes: render it as a terminal shows it (pty engine)
        self.job_notices = False  # the shell prints job-control notices into this output (pty engine): drop them

    @property
    def done(self) -> bool:
        return self.exit_code is not None

    def take_output(self) -> str:
        text = self.buffer.text()
        if self.render:
            text = render(text)
            self.render = False
        if self.job_notices:
            text = drop_job_notices(text)
        self.buffer = OutputBuffer(self.limit)
        return text

    def finish(self, exit_code: int, cwd: str | None, shell_exited: bool) -> None:
        if self.done:
            return
        self.exit_code = exit_code
        self.cwd = cwd
        self.shell_exited = shell_exited
        self.changed.set()
        self.finished.set()


class BashShell:
    def __init__(
        self, cwd: str, env: dict[str, str], source_file: str, max_output_chars: int, env_snapshot: str = ""
    ) -> None:
        self.start_cwd = cwd
        # After each command the shell writes `export -p` here (0600, in the runtime's private
        # scratch dir): extra shells start with the main shell's exports (docs/protocol.md §3.8).
        self.env_snapshot = env_snapshot
        self.exports = ""  # that file's text as of the last finished command (read at its marker)
        self.env = env
        self.source_file = source_file
        self.limit = max_output_chars
        self.proc: asyncio.subprocess.Process | None = None
        self.pid = -1
        self.running: Command | None = None
        self.last_cwd = cwd
        self.last_path = env.get("PATH", "")  # the shell's PATH after the last command (metadata)
        self.exited = False  # the loop ended (EXIT marker seen or the process died)
        self.stdin_closed = False
        self._idle = OutputBuffer(max_output_chars)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        # bash names the sourced file in its own messages ("<file>: line 1: x: command not found");
        # we show what `bash -c` would ("bash: line 1: ..."), so no private path leaks into output.
        self._needle = source_file + ": "
        self._carry = ""
        self._marks = b""
        self._fds: dict[str, int] = {}
        self._watch: asyncio.Task | None = None
        self._loop = asyncio.get_running_loop()

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        cmd_r, cmd_w = os.pipe()
        mark_r, mark_w = os.pipe()
        with contextlib.suppress(OSError):
            fcntl.fcntl(out_w, F_SETPIPE_SZ, PIPE_SIZE)
        bash = shutil.which("bash", path=self.env.get("PATH")) or shutil.which("bash") or "/bin/bash"
        try:
            self.proc = await asyncio.create_subprocess_exec(
                bash,
                "--noprofile",
                "--norc",
                "-c",
                LOOP,
                "bash",
                str(cmd_r),
                str(mark_w),
                self.source_file,
                *(str(t) for t in _high_fds(cmd_r, mark_w)),
                self.env_snapshot,
                stdin=in_r,
                stdout=out_w,
                stderr=out_w,
                pass_fds=(cmd_r, mark_w),
                start_new_session=True,
                cwd=self.start_cwd,
                env=self.env,
            )
        except BaseException:
            for fd in (in_r, in_w, out_r, out_w, cmd_r, cmd_w, mark_r, mark_w):
                os.close(fd)
            raise
        for fd in (in_r, out_w, cmd_r, mark_w):
            os.close(fd)
        for fd in (in_w, out_r, cmd_w, mark_r):
            _set_nonblocking(fd)
        self.pid = self.proc.pid
        self._fds = {"in": in_w, "out": out_r, "cmd": cmd_w, "mark": mark_r}
        self._loop.add_reader(out_r, self._on_output)
        self._loop.add_reader(mark_r, self._on_marker)
        self._watch = asyncio.ensure_future(self._watch_exit())

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None and not self.exited

    def cwd_now(self) -> str:
        """The shell's current directory (even mid-command, on Linux), else the last one reported."""
        if self.pid > 0 and self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(OSError):
                return os.readlink(f"/proc/{self.pid}/cwd")
        return self.last_cwd

    async def _watch_exit(self) -> None:
        assert self.proc is not None
        code = await self.proc.wait()
        self._drain_output()
        if self._carry:
            self._feed(b"", final=True)
        self._on_marker()
        self.exited = True
        cmd = self.running
        if cmd is not None:
            self.running = None
            cmd.finish(128 - code if code < 0 else code, self.last_cwd, True)

    def _close_fds(self) -> None:
        for name, fd in list(self._fds.items()):
            if name in ("out", "mark"):
                self._loop.remove_reader(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = {}

    def _descendants(self) -> list:
        return descendants(self.pid)

    async def kill(self) -> None:
        """Kill the shell, its process group and every descendant still found; wait; close the pipes."""
        stray = self._descendants()
        grouped = False
        if self.pid > 0:
            try:
                os.killpg(self.pid, signal.SIGKILL)  # the shell leads its group: it dies too
                grouped = True
            except (ProcessLookupError, PermissionError):
                pass
        for p in stray:
            with contextlib.suppress(Exception):
                p.kill()
        if self.proc is not None and self.proc.returncode is None:
            if not grouped:
                # Only when killpg failed: Popen.kill() polls first, and that waitpid can reap the
                # shell before asyncio's child watcher does ("Unknown child process", status 255).
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.proc.wait()), 5)
        if self._watch is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._watch), 1)
        self._drain_output()
        self._close_fds()

    # ------------------------------------------------------------------ I/O callbacks
    def _feed(self, data: bytes, final: bool = False) -> None:
        text = self._carry + self._decoder.decode(data)
        self._carry = ""
        if self._needle in text:
            text = text.replace(self._needle, "bash: ")
        if not final:
            # Hold back a tail that could be the start of the needle split across two reads.
            for k in range(min(len(self._needle) - 1, len(text)), 0, -1):
                if text.endswith(self._needle[:k]):
                    self._carry, text = text[-k:], text[:-k]
                    break
        if not text:
            return
        cmd = self.running
        if cmd is None:
            self._idle.add(text)
            return
        cmd.buffer.add(text)
        if cmd.sink is not None:
            cmd.sink(text)
        if cmd.stream is not None:
            cmd.stream(text)
        cmd.last_output = time.monotonic()
        cmd.changed.set()

    def flush_pending(self) -> None:
        """Release text held back for the needle check (before an observation returns mid-command)."""
        self._drain_output()
        if self._carry:
            self._feed(b"", final=True)

    def _drain_output(self, max_chunks: int | None = None) -> None:
        fd = self._fds.get("out")
        if fd is None:
            return
        n = 0
        while max_chunks is None or n < max_chunks:
            try:
                data = os.read(fd, READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:  # every writer (shell and background jobs) is gone
                self._loop.remove_reader(fd)
                return
            self._feed(data)
            n += 1

    def _on_output(self) -> None:
        self._drain_output(max_chunks=16)

    def _on_marker(self) -> None:
        fd = self._fds.get("mark")
        if fd is None:
            return
        while True:
            try:
                data = os.read(fd, 65536)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                data = b""
            if not data:
                self._loop.remove_reader(fd)
                break
            self._marks += data
        while True:
            first = self._marks.find(b"\0")
            if first < 0:
                return
            second = self._marks.find(b"\0", first + 1)
            if second < 0:
                return
            third = self._marks.find(b"\0", second + 1)
            if third < 0:
                return
            record, self._marks = self._marks[:third], self._marks[third + 1 :]
            kind, status = record[:1], record[1:first]
            cwd = os.fsdecode(record[first + 1 : second])
            self.last_path = os.fsdecode(record[second + 1 :])
            self._complete(kind == b"X", int(status or b"-1"), cwd)

    def _complete(self, shell_exited: bool, status: int, cwd: str) -> None:
        self._drain_output()  # everything the command wrote precedes its marker
        if self._carry:
            self._feed(b"", final=True)
        self.last_cwd = cwd or self.last_cwd
        if shell_exited:
            self.exited = True
        elif self.env_snapshot:
            # Read now: the shell wrote it before this marker and writes it again only after the next
            # command, so an extra shell never sources a half-written file.
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

    # ------------------------------------------------------------------ commands
    async def _write(self, fd: int, data: bytes) -> None:
        await write_all(self._loop, fd, data)

    def submit(self, text: str, internal: bool = False, limit: int | None = None) -> Command:
        """Start ``text`` (no command may be running). The write finishes in the background.

        ``limit``: characters of output kept per observation of this command (default: the shell's)."""
        assert self.running is None and self.alive
        if not os.path.exists(self.source_file):  # someone cleaned /tmp: put it back
            with open(self.source_file, "w") as f:
                f.write(SOURCE_FILE_TEXT)
        cmd = Command(text, self.limit if limit is None else limit, internal)
        pending = self._idle.text()
        if pending:
            cmd.buffer.add(pending)
            self._idle = OutputBuffer(self.limit)
        self.running = cmd
        data = encode(text) + b"\0"
        try:
            n = os.write(self._fds["cmd"], data)
        except BlockingIOError:
            n = 0
        except OSError:
            n = len(data)  # the shell is gone; _watch_exit finishes the command
        if n < len(data):
            asyncio.ensure_future(self._write(self._fds["cmd"], data[n:]))
        return cmd

    async def send_input(self, data: bytes) -> None:
        if self.stdin_closed:
            raise BrokenPipeError
        await self._write(self._fds["in"], data)

    def interrupt(self, sig: int = signal.SIGINT) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def close_stdin(self) -> None:
        """C-d: the command reading stdin sees end-of-file. ``reopen_stdin`` gives the shell a new one."""
        if self.stdin_closed:
            return
        fd = self._fds.pop("in", None)
        if fd is not None:
            os.close(fd)
        self.stdin_closed = True

    async def reopen_stdin(self, fifo_dir: str) -> None:
        """Give the shell a fresh stdin after a C-d: a FIFO the shell opens, then unlinked.

        We open the FIFO read-write first (never blocks on Linux), so the shell's ``exec 0<fifo``
        finds a writer and does not block either.
        """
        path = os.path.join(fifo_dir, f"stdin-{self.pid}-{time.monotonic_ns()}")
        os.mkfifo(path, 0o600)
        try:
            fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            quoted = "'" + path.replace("'", "'\\''") + "'"
            cmd = self.submit(f"exec 0<{quoted}", internal=True)
            while not cmd.done:
                cmd.changed.clear()
                await cmd.changed.wait()
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._idle.add(cmd.take_output())  # a background job's output belongs to the next command
        if cmd.exit_code == 0:
            self._fds["in"] = fd
            self.stdin_closed = False
        else:
            os.close(fd)
