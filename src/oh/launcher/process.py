"""Start and stop backend processes (``python -m oh.backend``).

Start: detached in its own session (Ctrl-C in the terminal reaches only the launcher, which then
stops the backend on purpose), the token written to its stdin and the pipe closed (never argv or
env), readiness reported as one JSON line on an inherited pipe fd, stdout/stderr appended to
``<logs>/<instance_id>.log``. Stop: control ``shutdown`` -> wait -> SIGTERM -> wait -> SIGKILL,
then the session file is removed if the backend could not remove it itself.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from .. import sessions
from ..config import paths
from ..fastpath.exits import ERROR, NOT_RUNNING, OhError
from ..protocol.backendconfig import BackendConfig, to_wire
from ..protocol.codes import BackendExit
from ..sessions import Session
from .control import BackendUnreachable, control


class StartError(OhError):
    def __init__(
        self,
        message: str,
        *,
        duplicate: Session | None = None,
        log_file: Path | None = None,
        already_served: bool = False,
    ) -> None:
        # A backend already serves the workspace (exit 3), even when its session is not visible yet.
        served = already_served or duplicate is not None
        super().__init__(
            message,
            NOT_RUNNING if served else ERROR,
            None if served else "Run `oh doctor` to check ports, directories and the token.",
        )
        self.duplicate = duplicate
        self.log_file = log_file
        self.already_served = served


@dataclass
class Started:
    session: Session
    log_file: Path
    process: subprocess.Popen


def log_file_for(instance_id: str) -> Path:
    return paths.logs_dir() / f"{instance_id}.log"


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def start_backend(
    config: BackendConfig,
    *,
    token: str,
    log_level: str = "info",
    ready_timeout: float = 20.0,
) -> Started:
    """Start a backend with ``config`` (resolved once: ``launcher.backendconfig.resolve``). The token and the
    configuration go on its stdin (never argv or the environment: the backend reads no settings itself)."""
    workspace = config.workspace
    running = sessions.for_workspace(workspace)
    if running is not None and running.workspace == workspace:
        raise StartError(_duplicate_message(running, workspace), duplicate=running)
    instance_id = config.instance_id
    log_path = log_file_for(instance_id)
    paths.ensure_private_dir(log_path.parent)
    paths.ensure_private_dir(paths.sessions_dir())
    env = _backend_env(log_level)
    # The backend rotates the log file itself (bounded size); stdout/stderr are only for what it prints
    # before its logging is set up.
    private: dict[str, object] = {"instance_id": instance_id, "log_file": str(log_path), "config": to_wire(config)}
    private.update({k: env.pop(k) for k in _PRIVATE_ENV if k in env})
    proc, r = _spawn(backend_argv(workspace), env, workspace, log_path, token + "\n" + json.dumps(private))
    try:
        return _settle(proc, r, ready_timeout, workspace, log_path, instance_id)
    except KeyboardInterrupt:  # Ctrl-C while it starts: what we started must not outlive the start (issue 41)
        _kill(proc)
        sessions.remove(instance_id)
        raise


def _settle(proc: subprocess.Popen, r: int, ready_timeout: float, workspace: str, log_path: Path, iid: str) -> Started:
    """The started backend once it said it is ready (its session file read), or a StartError."""
    ready = _wait_ready(r, proc, ready_timeout)
    if not ready.get("ready"):
        _not_ready(ready, proc, workspace, log_path)
    session = sessions.read(sessions.path_for(ready.get("instance_id", iid)))
    if session is None:
        _kill(proc)
        raise StartError(f"the backend reported ready but wrote no session file (log: {log_path})", log_file=log_path)
    return Started(session, log_path, proc)


def backend_argv(workspace: str) -> list[str]:
    """The backend's command line (``python -m oh.backend``): the workspace (so `ps` says which), nothing else.
    The configuration, oh's state (the session file's id, the log's path, OH_HOME) and the token go on stdin:
    the agent's shell can read /proc/$PPID/cmdline and /proc/$PPID/environ, and they must not point it at the
    decider credential (issue 25)."""
    return [sys.executable, "-m", "oh.backend", "--workspace", workspace, "--token-stdin", "--private-stdin"]


_PRIVATE_ENV = ("OH_HOME",)  # names oh's state: given on stdin (see --private-stdin)


def _backend_env(log_level: str) -> dict[str, str]:
    """Our environment without OH_TOKEN (the token goes on stdin), plus the log level."""
    env = {k: v for k, v in os.environ.items() if k != "OH_TOKEN"}
    env["OH_LOG_LEVEL"] = log_level.upper()
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _spawn(
    argv: list[str], env: dict[str, str], workspace: str, log_path: Path, token: str
) -> tuple[subprocess.Popen, int]:
    """Start the backend in its own session, the token (and what follows it) on its stdin (never argv/env), stdout and
    stderr into its log. Returns the process and the read end of its ready pipe."""
    log_fd = paths.open_private_append(log_path)
    r, w = os.pipe()
    argv += ["--ready-fd", str(w)]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=log_fd,
            stderr=log_fd,
            pass_fds=(w,),
            env=env,
            cwd=workspace,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        os.close(r)
        raise StartError(f"cannot run {sys.executable} -m oh.backend: {exc}") from None
    finally:
        os.close(w)
        os.close(log_fd)
    try:
        assert proc.stdin is not None
        proc.stdin.write((token + "\n").encode("utf-8"))
        proc.stdin.close()
    except KeyboardInterrupt:  # Ctrl-C right after the spawn: the backend must not outlive the start (issue 41)
        _kill(proc)
        os.close(r)
        raise
    except OSError:
        pass  # it died already; the ready wait reports why
    return proc, r


def _not_ready(ready: dict, proc: subprocess.Popen, workspace: str, log_path: Path) -> NoReturn:
    """The backend did not become ready: raise the StartError that says why (exit 3 when it lost the
    race for the workspace to another backend)."""
    error = ready.get("error") or _tail(log_path) or "the backend exited without saying why"
    lost_race = ready.get("reason") == "duplicate" or bool(ready.get("duplicate"))
    if lost_race:
        try:  # it is exiting on its own (it only held a failed lock); reap it
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    code = proc.poll()
    if lost_race or code == BackendExit.DUPLICATE:
        # Two starts at the same instant: the winner may not have written its session file yet,
        # so wait briefly for it (the message should name it); either way this is exit 3.
        dup = None
        deadline = time.monotonic() + 3.0
        while dup is None:
            dup = next((s for s in sessions.list_sessions() if s.workspace == workspace), None)
            if dup is not None or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        raise StartError(
            _duplicate_message(dup, workspace) if dup else error, duplicate=dup, log_file=log_path, already_served=True
        )
    if proc.poll() is None:
        _kill(proc)
    raise StartError(f"the backend did not start: {error} (log: {log_path})", log_file=log_path)


def _duplicate_message(running: Session, workspace: str) -> str:
    return (
        f"a backend already serves {workspace}: instance {running.instance_id} (pid {running.pid}, {running.url}, "
        f"runtime {running.runtime}). Use it (`oh watch {running.instance_id}` shows it live), or stop it first with "
        f"`oh stop {running.instance_id}`."
    )


def _wait_ready(fd: int, proc: subprocess.Popen, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    buf = b""
    try:
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return {"ready": False, "error": f"no ready signal within {timeout:g} s"}
            readable, _, _ = select.select([fd], [], [], min(left, 0.2))
            if readable:
                chunk = os.read(fd, 4096)
                if not chunk:  # writer closed without a line: it exited (or closed the fd early)
                    proc.poll()
                    break
                buf += chunk
            elif proc.poll() is not None and not buf:
                # exited; drain what it may still have written
                readable, _, _ = select.select([fd], [], [], 0)
                if not readable:
                    break
    finally:
        os.close(fd)
    line = buf.split(b"\n", 1)[0]
    if not line:
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        return {"ready": False, "error": None}
    try:
        return json.loads(line)
    except ValueError:
        return {"ready": False, "error": f"garbled ready line: {line[:200]!r}"}


def _kill(proc: subprocess.Popen) -> None:
    try:
        proc.terminate()
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
    except OSError:
        pass


def wait_gone(session: Session, timeout: float) -> bool:
    """True once the session's process is gone (or is no longer the same process)."""
    deadline = time.monotonic() + timeout
    while True:
        if not sessions.is_alive(session):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _signal(session: Session, sig: int) -> None:
    if sessions.is_alive(session):  # never signal a reused pid
        try:
            os.kill(session.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def wait_reaped(pid: int, timeout: float) -> bool:
    """True once ``pid`` has left the process table. A backend that exited stays a zombie until its
    parent (``init`` for a detached backend, which some reap only every second or so) collects it;
    until then ``kill -0 PID`` and ``ps`` still show it, so ``oh stop`` waits for that too (issue 30 #17)."""
    import psutil

    deadline = time.monotonic() + timeout
    while psutil.pid_exists(pid):
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return True  # the pid was reused by a new process: ours is gone
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def stop_backend(session: Session, *, timeout: float = 10.0, term_timeout: float = 5.0, reap: float = 0.0) -> str:
    """Stop one backend. Returns how: ``"shutdown"`` (graceful), ``"sigterm"``, ``"sigkill"`` or ``"gone"``;
    ``"alive"`` when it still runs after SIGKILL; ``"zombie"`` when it exited but was not reaped within
    ``reap`` seconds (0: do not wait for reaping; the foreground ``oh start`` is its parent and reaps it itself)."""
    how = "gone"
    if sessions.is_alive(session):
        how = "shutdown"
        try:
            control(session, {"type": "shutdown"}, timeout=min(timeout, 5.0))
        except BackendUnreachable:
            how = "sigterm"
        if how == "shutdown" and not wait_gone(session, timeout):
            how = "sigterm"
        if how == "sigterm":
            _signal(session, signal.SIGTERM)
            if not wait_gone(session, term_timeout):
                how = "sigkill"
                _signal(session, signal.SIGKILL)
                if not wait_gone(session, 5.0):
                    return "alive"  # its session file stays: `oh status` and `oh stop` still find it
    sessions.remove(session.instance_id)
    if reap > 0 and how != "gone" and not wait_reaped(session.pid, reap):
        return "zombie"
    return how
