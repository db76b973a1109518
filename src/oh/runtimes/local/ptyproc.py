"""A process on a new pty, and ending it the way a terminal does. The thin I/O part of the shell engine.

``spawn`` is the one place where the final argv, environment and directory of the agent's shell are
decided, just before the process starts: ``wrap_argv`` (e.g. a sandbox's ``bwrap ... --``) may prefix the
argv there (docs/architecture.md, "The agent's shell").

``hang_up`` ends a shell as closing its terminal window would: SIGHUP to the shell and to every process
group of its descendants (an interactive shell also passes it on to its jobs), a grace period in which
EXIT traps run (an rc file's lock or temp file is removed, as pyenv's rehash lock is), then SIGKILL to
whatever is left, descendants that left the shell's process group included.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import struct
import termios
from collections.abc import Callable
from dataclasses import dataclass

from .command import descendants, descendants_root, session_members

# Seconds a hung-up shell and its processes get to run their EXIT traps before SIGKILL.
HANGUP_GRACE = 2.0

WrapArgv = Callable[[list[str], dict[str, str]], list[str]]


@dataclass
class PtyProcess:
    proc: asyncio.subprocess.Process
    master: int  # the pty's master side (non-blocking); the caller closes it

    @property
    def pid(self) -> int:
        return self.proc.pid


async def spawn(
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    *,
    size: tuple[int, int],
    pass_fds: tuple[int, ...] = (),
    wrap_argv: WrapArgv | None = None,
) -> PtyProcess:
    """Start ``argv`` as the session leader of a new pty (its controlling terminal), ``size`` = (rows, cols).

    ``wrap_argv(argv, env)`` returns the argv actually executed (a wrapper that ends by exec'ing ``argv``)."""
    if wrap_argv is not None:
        argv = wrap_argv(list(argv), env)
    master, slave = os.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))

    def child_setup() -> None:  # runs in the child after setsid (start_new_session)
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # A terminal's shell starts with the default dispositions whatever started oh: under `nohup oh start`
        # the agent's shells inherited an ignored SIGHUP (and a background start an ignored SIGINT/SIGQUIT),
        # which bash cannot undo, so a reset's hang-up left their jobs running until the SIGKILL.
        for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM):
            with contextlib.suppress(OSError, ValueError):
                signal.signal(sig, signal.SIG_DFL)

    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            pass_fds=pass_fds,
            start_new_session=True,
            preexec_fn=child_setup,
            cwd=cwd,
            env=env,
        )
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    return PtyProcess(proc, master)


def _signal_groups(groups: set[int], sig: int) -> None:
    for g in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(g, sig)


def comm(pid: int) -> str:
    """A process's command name (/proc/PID/comm); "" when it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _hang_up_signals(pid: int, stray: list, groups: set[int], spare: tuple[str, ...]) -> None:
    """SIGHUP then SIGCONT (a stopped job cannot act on SIGHUP until it runs again; a terminal's hangup
    sends both) to the groups; a group holding a wrapper named in ``spare`` (bubblewrap: it dies of SIGHUP
    without passing it on, and its namespace's processes are then SIGKILLed, traps unrun) gets them
    process by process instead, wrappers left out: they end when the shell they wrap ends."""
    wrappers = {p.pid for p in stray if spare and comm(p.pid) in spare}
    if spare and comm(pid) in spare:
        wrappers.add(pid)
    wrapped: set[int] = set()
    for w in wrappers:
        with contextlib.suppress(OSError):
            wrapped.add(os.getpgid(w))
    members = []
    for p in stray:
        with contextlib.suppress(OSError):
            if p.pid not in wrappers and os.getpgid(p.pid) in wrapped:
                members.append(p.pid)
    for sig in (signal.SIGHUP, signal.SIGCONT):
        _signal_groups(groups - wrapped, sig)
        for m in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(m, sig)


async def hang_up(proc: asyncio.subprocess.Process, grace: float = HANGUP_GRACE, spare: tuple[str, ...] = ()) -> None:
    """SIGHUP the shell, its descendants' process groups and the rest of its session; after ``grace`` s,
    SIGKILL what is left. ``spare``: names of wrappers around the shell (bubblewrap) that must not get the
    SIGHUP themselves.

    The shell may fork while it is being hung up (a loop starting jobs): a child born after the first look
    is no descendant once the shell has died, but it keeps the shell's session, so the session is looked
    at again until the end, and what turns up is hung up too (and killed with the rest)."""
    pid = proc.pid
    session = _Session(pid) if proc.returncode is None else None
    stray = (descendants(pid) + session.members()) if session is not None else []
    groups: set[int] = set()
    for p in stray:
        with contextlib.suppress(Exception):
            groups.add(os.getpgid(p.pid))
    if proc.returncode is None:
        groups.add(pid)  # the shell (or its wrapper) leads its session and its process group
        _hang_up_signals(pid, stray, groups, spare)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while loop.time() < deadline:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(proc.wait()), 0.05)
        newcomers = _newcomers(session, stray)
        if newcomers:
            stray += newcomers
            _hang_up_each(newcomers, spare)
        elif proc.returncode is not None and not any(_alive(p) for p in stray):
            return  # all ended on the hangup: no SIGKILL to process groups that may be gone (ids get reused)
    _signal_groups(groups, signal.SIGKILL)
    for p in stray:
        with contextlib.suppress(Exception):
            p.kill()
    for _ in range(50):  # a job forking at this moment: its children are found and killed on the next round
        late = _newcomers(session, [])
        if not late:
            break
        for p in late:
            with contextlib.suppress(Exception):
                p.kill()
        await asyncio.sleep(0.01)
    if proc.returncode is None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(proc.wait()), 5)


class _Session:
    """The session the shell leads, looked at only while its number cannot name someone else's."""

    def __init__(self, sid: int) -> None:
        self.sid = sid
        self.leader = descendants_root(sid)

    def members(self) -> list:
        leader = descendants_root(self.sid)
        if leader is not None and (self.leader is None or _born(leader) != _born(self.leader)):
            return []  # the number leads another process now: not our session any more
        return session_members(self.sid)


def _born(p) -> float | None:
    try:
        return p.create_time()
    except Exception:  # noqa: BLE001 - psutil.NoSuchProcess and friends: gone meanwhile
        return None


def _newcomers(session: _Session | None, known: list) -> list:
    if session is None:
        return []
    seen = {p.pid for p in known}
    return [p for p in session.members() if p.pid not in seen]


def _hang_up_each(procs: list, spare: tuple[str, ...]) -> None:
    """SIGHUP then SIGCONT to each of ``procs`` (wrappers named in ``spare`` left out: see above)."""
    for sig in (signal.SIGHUP, signal.SIGCONT):
        for p in procs:
            if not (spare and comm(p.pid) in spare):
                with contextlib.suppress(Exception):
                    p.send_signal(sig)


def _alive(p) -> bool:
    try:
        return p.is_running() and p.status() != "zombie"
    except Exception:  # noqa: BLE001 - psutil.NoSuchProcess and friends: gone
        return False
