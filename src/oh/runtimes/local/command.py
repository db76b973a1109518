"""One command in flight, the interface every agent shell offers (``Shell``), and small I/O helpers."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from typing import Protocol

from .output import OutputBuffer
from .render import drop_job_notices, render

try:  # psutil finds descendants that left the process group (setsid); optional at runtime
    import psutil
except ImportError:  # pragma: no cover
    psutil = None


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


def descendants_root(pid: int):
    """The live process ``pid`` (psutil), or None: gone, a zombie, or no psutil."""
    if psutil is None:
        return None
    try:
        p = psutil.Process(pid)
        return None if p.status() == psutil.STATUS_ZOMBIE else p
    except psutil.Error:
        return None


def session_members(sid: int) -> list:
    """The live processes of session ``sid`` (psutil objects; [] without psutil), read from /proc. Unlike
    ``descendants`` this also finds those a dying shell forked after a snapshot and left to init: they
    keep its session. The number cannot name another session while one of them lives (the kernel does not
    reuse a pid that is still some process's session id)."""
    if psutil is None or sid <= 0:
        return []
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit() or int(name) == sid:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if fields[0] != b"Z" and int(fields[3]) == sid:
                found.append(psutil.Process(int(name)))
        except (OSError, IndexError, ValueError, psutil.Error):
            continue  # gone meanwhile, or not ours to read
    return found


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

        def writable() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_writer(fd, writable)
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
        self.sink: Callable[[str], None] | None = None  # called with every chunk of output (a job's spool)
        self.stream: Callable[[str], None] | None = None  # likewise, for the agent waiting that asked for progress
        self.finished = asyncio.Event()  # set once, when the command ends
        self.render = False  # the output holds control bytes: render it as a terminal shows it
        self.job_notices = False  # the shell prints job-control notices into this output: drop them

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


class Shell(Protocol):
    """What ``Terminal``, ``ShellGroup`` and the engine host drive: one persistent agent shell.

    ``engine.PtyShell`` is the implementation (the user's shell on a pty); a sandbox or a remote shell
    would be another."""

    pid: int
    running: Command | None
    last_cwd: str
    last_path: str
    exports: str  # `export -p` as of the last finished command (extra shells start with it)
    note: str  # said once: why the clean shell runs, or a fix oh made to the rc's settings
    kind: str  # "bash" or "zsh"
    path: str
    rc: bool  # the user's rc files were read

    @property
    def alive(self) -> bool: ...

    async def start(self) -> None: ...

    async def kill(self) -> None: ...

    def cwd_now(self) -> str: ...

    def submit(self, text: str, internal: bool = False, limit: int | None = None) -> Command: ...

    def flush_pending(self) -> None: ...

    async def send_input(self, data: bytes, hide_echo: bool = True) -> None: ...

    async def send_key(self, key: str) -> None: ...

    def interrupt(self, sig: int = signal.SIGINT) -> None: ...
