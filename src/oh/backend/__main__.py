"""``python -m oh.backend``: one backend process (what ``oh start`` launches).

    python -m oh.backend --workspace DIR --token-stdin --private-stdin --ready-fd N   (as `oh start` runs it)
    python -m oh.backend --workspace DIR [--runtime local|vscode] [--port N] [--<setting> V ...]   (by hand)

The launcher resolves the whole configuration (``protocol.backendconfig.BackendConfig``) and sends it as JSON
on stdin, after the token (``--private-stdin``); a hand start takes one flag per field instead. The token never
travels in argv: ``--token-stdin`` reads it as one line from stdin; otherwise it is taken from ``OH_TOKEN`` or
the token store. Once listening, the session file is written and one JSON
line ``{"ready": true, "instance_id", "port", "pid", "url"}`` goes to ``--ready-fd`` (or stdout).
Exit codes: 0 clean stop, 2 cannot listen (port taken, bad host), 3 a backend already serves this
workspace, 4 bad arguments (including a non-loopback ``--host``: refused, never bound, and an oh
directory another user controls).

Logging: ``--log-file`` is rotated at ``LOG_MAX_BYTES`` keeping ``LOG_BACKUPS`` old files (so at
most about 15 MiB), created 0600; stdout/stderr follow the current file, so stray output (a crash's
traceback) lands in it too. Repeated lines of one kind are throttled (backend/guard.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import fcntl
import json
import logging
import logging.handlers
import os
import signal
import sys
from pathlib import Path
from typing import Any

from .. import programs, sessions
from ..config import backendstate, paths, secrets
from ..config.paths import UnsafePath
from ..errors import OhBaseError
from ..protocol import backendconfig
from ..protocol import sandbox as sandbox_rules
from ..protocol.codes import BackendExit
from .auth import is_loopback_host
from .guard import Throttle, raise_fd_limit
from .server import Backend, BackendConfig

LOG_MAX_BYTES = 5 * 1024 * 1024
LOG_BACKUPS = 2


class _PrivateRotatingHandler(logging.handlers.RotatingFileHandler):
    """RotatingFileHandler whose files are 0600 and which keeps fds 1 and 2 on the current file.

    The launcher points the backend's stdout/stderr at the log; after a rename those would keep
    writing into the rotated-away file, so they are re-pointed at each rollover."""

    def _open(self):
        fd = paths.open_private_append(self.baseFilename)
        return os.fdopen(fd, "a", encoding=self.encoding or "utf-8", errors=self.errors)

    std_fds: tuple[int, ...] = (2,)

    def follow_with_std_streams(self) -> None:
        if self.stream is None:
            self.stream = self._open()
        for target in self.std_fds:
            try:
                os.dup2(self.stream.fileno(), target)
            except OSError:
                pass

    def doRollover(self) -> None:
        super().doRollover()
        self.follow_with_std_streams()


def _throttled_loop_errors(loop: asyncio.AbstractEventLoop, throttle) -> None:
    """asyncio logs every failed accept ("socket.accept() out of system resource", once per retry);
    under an fd flood that was thousands of lines. One line per kind per window instead."""

    def handler(loop, context):
        message = str(context.get("message", "unhandled error"))
        if message.startswith("socket.accept()"):
            exc = context.get("exception")
            throttle.log(("loop", message), logging.WARNING, "%s: %s", message, exc)
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m oh.backend",
        description=(
            "Run one oh backend (normally started by `oh start`, which sends the whole configuration as JSON on "
            "stdin after the token). Started by hand: one flag per setting (protocol/backendconfig.py)."
        ),
    )
    p.add_argument("--token-stdin", action="store_true")
    # a JSON line after the token: {"instance_id", "log_file", "OH_HOME"?, "config"?}, kept out of /proc/PID/cmdline
    p.add_argument("--private-stdin", action="store_true")
    p.add_argument("--ready-fd", type=int, default=None)
    p.add_argument("--log-file", default=None)
    # A hand-started backend's state (the launcher decides these itself: launcher/backendconfig.py)
    p.add_argument("--no-trace", action="store_true")
    p.add_argument("--history", action="store_true", help="record every action's file changes (issue 29)")
    p.add_argument("--no-socket", action="store_true", help="listen on loopback TCP only")
    backendconfig.add_arguments(p)
    return p.parse_args(argv)


def _config(args: argparse.Namespace, private: dict[str, Any]) -> BackendConfig:
    """The configuration: the launcher's (JSON on the private stdin: argv then names only the workspace), else
    the flags of a hand start, finished the way the launcher finishes it (config/backendstate.py)."""
    try:
        if "config" in private:
            config = backendconfig.from_wire(private["config"])
            if args.cfg_workspace is not None and os.path.realpath(args.cfg_workspace) != config.workspace:
                raise backendconfig.ConfigError("--workspace and the configuration on stdin name different workspaces")
            return config
        config = backendconfig.from_arguments(args)
        config.instance_id = str(private.get("instance_id") or config.instance_id or sessions.new_instance_id())
        return backendstate.finish(config, trace=not args.no_trace, history=args.history, socket=not args.no_socket)
    except (backendconfig.ConfigError, UnsafePath) as exc:
        raise _Refused(f"bad configuration: {exc}") from None


def _trust_programs(config: BackendConfig) -> None:
    """The programs this backend runs itself (git, rg, bwrap, python3, ssh, bash, uv), found now, never in a
    directory the agent's sandbox can write: the workspace, the allowed roots, the writable caches
    (docs/security.md §11.2). Under runtime vscode the editor's engine host has the shells, and this backend
    still runs git for history."""
    spec = config.sandbox  # the configuration only: the backend reads no sandbox environment (docs/architecture.md)
    home = os.path.expanduser("~")
    on = spec is not None and spec.level == "workspace-write"
    writable = [sandbox_rules.expand(p, home) for p in spec.writable] if spec is not None and on else []
    programs.distrust(config.workspace, *(config.allowed_roots or ()), *writable)
    programs.resolve()


def _ready(fd: int | None, payload: dict) -> None:
    line = json.dumps(payload) + "\n"
    if fd is None:
        sys.stdout.write(line)
        sys.stdout.flush()
        return
    try:
        os.write(fd, line.encode())
        os.close(fd)
    except OSError:
        pass  # the launcher went away; keep serving


def _load_private(line: str) -> dict[str, Any]:
    """The line after the token: what names oh's state (and the launcher's configuration), read from stdin
    instead of argv and the environment."""
    if not line:
        return {}
    try:
        private = json.loads(line)
    except ValueError:
        raise _Refused("--private-stdin: the line after the token must be a JSON object") from None
    if not isinstance(private, dict):
        raise _Refused("--private-stdin: the line after the token must be a JSON object")
    if isinstance(private.get("OH_HOME"), str):
        os.environ["OH_HOME"] = private["OH_HOME"]  # for this process; /proc/PID/environ keeps the start's
    return private


def _load_token(args: argparse.Namespace) -> str:
    if args.token_stdin:
        token = args.stdin_token
        if not token:
            raise SystemExit("no token on stdin")
        return token
    env = os.environ.get("OH_TOKEN")
    if env:
        return env

    return secrets.get_or_create_token()  # refuses a token file another user controls (UnsafePath)


def _lock_workspace(workspace: str):
    """Hold an exclusive lock for this workspace for the process lifetime (released by the kernel
    even on SIGKILL), so two backends can never serve one workspace, even when started at once."""
    d = paths.ensure_private_dir(paths.sessions_dir())
    fd = os.open(sessions.lock_path(workspace, d), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _stop_on_signals(loop: asyncio.AbstractEventLoop, backend: Backend) -> None:
    """SIGTERM, SIGINT and SIGHUP stop the backend (its log says which)."""

    def on_signal(sig: signal.Signals) -> None:
        asyncio.ensure_future(backend.stop(f"signal {sig.name}"))

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, on_signal, sig)


async def _amain(args: argparse.Namespace, config: BackendConfig, token: str) -> int:
    _trust_programs(config)
    try:
        backend = Backend(config, token)
    except ValueError as exc:  # e.g. an allowed root that does not exist: say so, no traceback
        logging.getLogger("oh.backend").error(str(exc))
        _ready(args.ready_fd, {"ready": False, "error": str(exc)})
        return BackendExit.CANNOT_SERVE
    try:
        await backend.start()
    except OSError as exc:
        msg = f"cannot listen on {config.host}:{config.port}: {exc.strerror or exc}"
        if getattr(exc, "errno", None) == errno.EADDRINUSE:
            msg += " (the port is taken: choose another with --port, or 0 for a free one)"
        logging.getLogger("oh.backend").error(msg)
        _ready(args.ready_fd, {"ready": False, "error": msg})
        return BackendExit.CANNOT_SERVE
    loop = asyncio.get_running_loop()
    _throttled_loop_errors(loop, Throttle(logging.getLogger("oh.backend")))
    _stop_on_signals(loop, backend)
    _ready(
        args.ready_fd,
        {
            "ready": True,
            "instance_id": config.instance_id,
            "port": backend.port,
            "pid": os.getpid(),
            "url": f"ws://{config.host}:{backend.port}",
            "socket": str(backend.remote.socket_path or ""),
            "trace": str(config.trace_path or ""),
        },
    )
    if getattr(args, "lock_fd", None) is not None:
        with contextlib.suppress(OSError):
            sessions.write_identity(args.lock_fd, backend.session())
    keeper = asyncio.ensure_future(_keep_session_file(backend))
    await backend.wait_stopped()
    keeper.cancel()
    return 0


SESSION_CHECK_INTERVAL = 1.0  # seconds between checks that our session file still exists (one stat)


async def _keep_session_file(backend: Backend) -> None:
    """A deleted session file (by hand, a cleaner, a test) would make this backend invisible to every
    command while it goes on serving: write it again, and say so in the log."""
    if not backend.config.write_session:
        return
    path = sessions.path_for(backend.instance_id, backend.config.session_dir)
    while True:
        await asyncio.sleep(SESSION_CHECK_INTERVAL)
        if backend.stopping:
            return
        if not path.exists():
            try:
                sessions.write(backend.session(), backend.config.session_dir)
            except (OSError, UnsafePath) as exc:
                logging.getLogger("oh.backend").warning(
                    "the session file %s was deleted and cannot be written again: %s", path, exc
                )
                return
            logging.getLogger("oh.backend").warning(
                "the session file %s was deleted while this backend runs: written again", path
            )


# The event loop shares the GIL with the worker threads that edit, diff and read big files (issue 18):
# a thread computing holds it for up to the switch interval each time the loop wants it back, several
# times per action (5 ms by default: a bystander's stat waited 30-100 ms). 1 ms bounds that wait.
SWITCH_INTERVAL = 0.001


class _Refused(OhBaseError):
    """The backend will not start: ``message`` goes to the log and the ready line (with ``extra``), ``code``
    is the process's exit code. Raised by the start-up steps below, handled once in ``main``."""

    def __init__(self, message: str, code: int = BackendExit.USAGE, **extra: object) -> None:
        super().__init__(message)
        self.message, self.code, self.extra = message, code, extra


def _setup_logging(args: argparse.Namespace) -> tuple[logging.Logger, str | None]:
    """The log (the private rotating file when --log-file is given, else stderr); the error that kept the
    file from being used, if any (the log is stderr then)."""
    handlers: list[logging.Handler] = []
    log_setup_error = None
    if args.log_file:
        try:
            paths.ensure_private_dir(Path(args.log_file).parent)
            rotating = _PrivateRotatingHandler(
                args.log_file, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
            )
            # stdout carries the ready line when there is no --ready-fd: leave it alone then.
            rotating.std_fds = (1, 2) if args.ready_fd is not None else (2,)
            rotating.follow_with_std_streams()
            handlers.append(rotating)
        except (OSError, paths.UnsafePath) as exc:
            log_setup_error = str(exc)
            handlers.append(logging.StreamHandler(sys.stderr))
    else:
        handlers.append(logging.StreamHandler(sys.stderr))
    logging.basicConfig(
        level=os.environ.get("OH_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
    )
    # websockets logs every request header (Authorization: Bearer <token>) and a prefix of every
    # frame (a rotate_token frame carries the new token) at DEBUG: never let that reach the log file.
    # At INFO it writes a line per connection opened/refused/closed, which a flood turns into
    # megabytes; our own (throttled) refusal lines say what matters.
    logging.getLogger("websockets").setLevel(max(logging.WARNING, logging.getLogger().getEffectiveLevel()))
    return logging.getLogger("oh.backend"), log_setup_error


def _check_arguments(args: argparse.Namespace, config: BackendConfig) -> str:
    """Refuse what the backend must never do (listen off loopback) or cannot (no workspace, no token);
    the token."""
    if not is_loopback_host(config.host):
        raise _Refused(
            f"refusing to listen on {config.host}: not a loopback address (127.0.0.1, ::1 or localhost). "
            "oh never listens on the network: anyone who could reach the port would need only the token to "
            "run commands as you."
        )
    if not os.path.isdir(config.workspace):
        raise _Refused(f"workspace {config.workspace} is not a directory")
    if config.isolate not in ("off", "worktree", "on-request"):
        raise _Refused(f"isolate {config.isolate!r}: give off, worktree or on-request")
    if config.isolate != "off":  # a worktree per agent (issue 37) needs the workspace in a git repository
        from .. import gitrepo

        try:
            gitrepo.toplevel(config.workspace)
        except gitrepo.GitError as exc:
            raise _Refused(f"--isolate {config.isolate}: {exc}") from None
    try:
        return _load_token(args)
    except (SystemExit, Exception) as exc:  # noqa: BLE001 - includes UnsafePath, whose text names the path and the fix
        raise _Refused(f"no token: {exc}") from None


def _lock(workspace: str):
    """The workspace's lock, held for the process's lifetime; refused when another backend holds it."""
    try:
        lock = _lock_workspace(workspace)
    except UnsafePath as exc:
        raise _Refused(str(exc)) from None
    if lock is None:
        running = sessions.for_workspace(workspace)
        holder = None if running else sessions.lock_holder(workspace)
        who = (
            f"instance {running.instance_id} (pid {running.pid}, port {running.port})"
            if running
            else f"instance {holder['instance_id']} (pid {holder['pid']}, port {holder['port']})"
            if holder
            else "another backend"
        )
        # "reason" tells the launcher it lost the race even when the winner has not written its
        # session file yet (two `oh start` at the same instant).
        raise _Refused(
            f"{who} already serves {workspace}: use it, or stop it with `oh stop`",
            BackendExit.DUPLICATE,
            reason="duplicate",
            duplicate=running.instance_id if running else None,
        )
    return lock


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    # stdin first: the line after the token says where the log file is (--private-stdin)
    args.stdin_token = sys.stdin.readline().strip() if args.token_stdin else ""
    stdin_private = sys.stdin.readline() if args.token_stdin and args.private_stdin else ""
    private: dict[str, Any] = {}
    with contextlib.suppress(_Refused):
        private = _load_private(stdin_private)  # a bad line is refused below, with the log set up
    args.log_file = private.get("log_file") or args.log_file
    sys.setswitchinterval(SWITCH_INTERVAL)
    # Before anything opens sockets: the common soft limit (1024) is what an idle-connection flood
    # exhausted; the hard limit is usually far higher and ours to take.
    fd_limits = raise_fd_limit()
    log, log_setup_error = _setup_logging(args)
    try:
        if log_setup_error:
            raise _Refused(f"cannot use the log file: {log_setup_error}")
        if fd_limits:
            log.debug("open files limit: soft %s, hard %s", *fd_limits)
        _load_private(stdin_private)
        config = _config(args, private)
        token = _check_arguments(args, config)
        # The token must not leak into the runtime's shells through the environment.
        os.environ.pop("OH_TOKEN", None)
        args.lock_fd = _lock(config.workspace)  # its fd stays open, so the lock is held, until the process exits
    except _Refused as refused:
        log.error(refused.message)
        _ready(args.ready_fd, {"ready": False, "error": refused.message, **refused.extra})
        return refused.code
    try:
        from ..eventloop import run as run_loop

        return run_loop(_amain(args, config, token))  # uvloop when installed (the [fast] extra)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
