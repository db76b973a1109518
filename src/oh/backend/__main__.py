"""``python -m oh.backend``: one backend process (what ``oh start`` launches).

    python -m oh.backend --workspace DIR --runtime local|vscode [--host H] [--port N]
        [--editor-timeout S] [--instance-id ID] [--token-stdin] [--ready-fd N] [--log-file PATH]

The token never travels in argv: ``--token-stdin`` reads it as one line from stdin; otherwise it is
taken from ``OH_TOKEN`` or the token store. Once listening, the session file is written and one JSON
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

from .. import sessions
from ..config import paths, secrets
from ..config.paths import UnsafePath
from ..protocol.branch import ON_DIRTY, ON_NOT_GIT, Plan
from ..protocol import runtimenames
from .. import programs
from ..protocol import sandbox as sandbox_rules
from ..protocol.codes import BackendExit
from .auth import is_loopback_host
from .guard import Throttle, raise_fd_limit
from . import sharestore
from .server import Backend, BackendConfig
from ..errors import OhBaseError

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
        prog="python -m oh.backend", description="Run one oh backend (normally started by `oh start`)."
    )
    p.add_argument("--workspace", default=".")
    p.add_argument("--runtime", choices=runtimenames.NAMES, default=runtimenames.DEFAULT)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--editor-timeout", type=float, default=30.0)
    p.add_argument("--action-timeout", type=float, default=300.0)
    p.add_argument("--instance-id", default="")
    p.add_argument("--token-stdin", action="store_true")
    # a JSON line after the token: {"instance_id", "log_file", "OH_HOME"?}, kept out of /proc/PID/cmdline
    p.add_argument("--private-stdin", action="store_true")
    p.add_argument("--ready-fd", type=int, default=None)
    p.add_argument("--log-file", default=None)
    p.add_argument("--trace-max-bytes", type=int, default=10 * 1024 * 1024)
    p.add_argument("--no-trace", action="store_true")
    p.add_argument(
        "--allow-root", action="append", default=None, help="extra allowed root for the local runtime (repeatable)"
    )
    # Job settings (docs/protocol.md §3.8-§3.10); the launcher passes the user's settings, the defaults are the
    # settings' defaults.
    p.add_argument("--max-shells", type=int, default=8)
    p.add_argument("--job-retention", type=float, default=3600.0)
    p.add_argument("--repeat-limit", type=int, default=0)
    p.add_argument("--repeat-action", choices=("note", "skip"), default="note")
    # The agent's shell (docs/protocol.md §3.4.1): unset = the local runtime's own default (OH_USER_SHELL, else on).
    p.add_argument("--user-shell", choices=("true", "false"), default=None)
    p.add_argument("--shell-startup-timeout", type=float, default=None)
    # The agent shell's sandbox (README "Sandbox"): the launcher passes the resolved settings; unset = the
    # settings' default (workspace-write, network off).
    p.add_argument("--sandbox", choices=("workspace-write", "read-only", "off"), default=None)
    p.add_argument("--sandbox-network", choices=("true", "false"), default=None)
    p.add_argument("--sandbox-writable", default=None, help=f"{os.pathsep}-separated directories")
    p.add_argument("--sandbox-fallback", choices=("refuse", "unconfined"), default=None)
    p.add_argument("--sandbox-bwrap", default=None)
    p.add_argument(
        "--setup-script",
        type=lambda v: v.strip().lower() in ("1", "true", "yes", "on"),
        default=True,
        help="run .oh/setup.sh once before the first action (docs/protocol.md §3.14)",
    )
    # Git-branch mode (docs/protocol.md §3.12): off unless --branch; the launcher passes the user's choices.
    p.add_argument("--branch", choices=("off", "on"), default="off")
    p.add_argument(
        "--branch-name", default=None, help="the feature branch (default: an automatic oh/<date>-<time>-<agent>)"
    )
    p.add_argument("--on-dirty", choices=ON_DIRTY, default="ask")
    p.add_argument("--on-not-git", choices=ON_NOT_GIT, default="ask")
    # Proposal mode (docs/protocol.md §3.11).
    p.add_argument("--review", action="store_true")
    # History (issue 29): record every action's file changes under the state dir.
    p.add_argument("--history", choices=("true", "false"), default="false")
    p.add_argument("--history-store-ignored", choices=("true", "false"), default="false")
    p.add_argument("--history-max-file", type=float, default=64.0, help="MiB")
    p.add_argument("--history-max-mb", type=float, default=1024.0, help="MiB the history's store may take")
    p.add_argument("--review-timeout", type=float, default=600.0)
    # Consent (docs/protocol.md §3.13): the level and the user's rules
    # (JSON {"allow": [...], "ask": [...], "deny": [...]}).
    p.add_argument("--consent", choices=("never", "risky", "commands", "changes", "all"), default="never")
    p.add_argument("--consent-rules", default="{}")
    p.add_argument("--approval-timeout", type=float, default=600.0)
    p.add_argument("--approval-notify", default="[]", help="issue 40: the notifier's argv as a JSON list")
    p.add_argument("--approvals-origin", default="", help="issue 40: the approvals page's public origin")
    p.add_argument("--approvals-port", type=int, default=0, help="issue 40: the approvals page's loopback port")
    # The Unix-socket endpoint (issue 28): on by default, at the workspace's path unless --socket names one.
    p.add_argument("--socket", default=None, help="the Unix socket's path (default: <state dir>/sock/<hash>/oh.sock)")
    p.add_argument("--no-socket", action="store_true", help="listen on loopback TCP only")
    return p.parse_args(argv)


def _approvals_page(args: argparse.Namespace) -> dict:
    """The approvals page's settings (issue 40): its port, public origin and the notifier's argv."""
    try:
        argv = json.loads(args.approval_notify or "[]")
    except ValueError:
        argv = None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ValueError("--approval-notify must be a JSON list of strings (the command and its arguments)")
    return {
        "approvals_port": args.approvals_port,
        "approvals_origin": args.approvals_origin or None,
        "approval_notify": tuple(argv),
    }


def _consent_policy(args: argparse.Namespace, workspace: str):
    """The backend's consent policy from its flags; None when it asks for nothing (no guard at all)."""
    from ..protocol import consent

    table = json.loads(args.consent_rules or "{}")
    if not isinstance(table, dict):
        raise ValueError("--consent-rules must be a JSON object with allow/ask/deny lists")
    try:
        rules = consent.parse_rules(table.get("allow", ()), table.get("ask", ()), table.get("deny", ()))
    except consent.RuleError as exc:
        raise ValueError(f"consent rules: {exc}") from None
    if args.consent == "never" and not rules and not _escalations_gated(args):
        return None
    return consent.Policy(args.consent, rules, workspace, os.path.expanduser("~"), _oh_dirs())


def _oh_dirs() -> tuple[str, ...]:
    """oh's own directories: consent asks before a command touches them; the sandbox hides them."""
    return tuple(str(p) for p in dict.fromkeys((paths.state_dir(), paths.config_dir(), paths.sessions_dir())))


def _sandbox_spec(args: argparse.Namespace) -> Any:
    """The sandbox flags as a Spec (the launcher resolves the settings and passes them all; a flag left out
    takes the setting's default). No environment is read: the settings rule (docs/architecture.md)."""
    given = {
        "sandbox": args.sandbox,
        "sandbox_network": args.sandbox_network,
        "sandbox_writable": args.sandbox_writable,
        "sandbox_fallback": args.sandbox_fallback,
        "sandbox_bwrap": args.sandbox_bwrap,
    }
    return sandbox_rules.spec_from({k: v for k, v in given.items() if v is not None})


def _trust_programs(args: argparse.Namespace, workspace: str) -> None:
    """The programs this backend runs itself (git, rg, bwrap, python3, ssh, bash, uv), found now, never in a
    directory the agent's sandbox can write: the workspace, the allowed roots, the writable caches
    (docs/security.md §11.2). Under runtime vscode the editor's engine host has the shells, and this backend
    still runs git for history."""
    spec = _sandbox_spec(args)  # the flags only: the backend reads no sandbox environment (docs/architecture.md)
    home = os.path.expanduser("~")
    writable = [sandbox_rules.expand(p, home) for p in spec.writable] if spec.level == "workspace-write" else []
    programs.distrust(workspace, *(args.allow_root or ()), *writable)
    programs.resolve()


def _escalations_gated(args: argparse.Namespace) -> bool:
    """A sandboxed agent shell (the local runtime's, or an editor's engine shell under runtime vscode) needs the
    consent gate even at level never: a run asking to leave the sandbox is always asked (or allowed by an
    `unsandboxed:` rule), never run unasked."""
    if args.runtime not in ("local", "vscode"):
        return False
    return bool(_sandbox_spec(args).on)


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


def _load_private(args: argparse.Namespace, line: str) -> None:
    """The settings that name oh's state, read from stdin instead of argv and the environment."""
    try:
        private = json.loads(line)
    except ValueError:
        raise SystemExit("--private-stdin: the line after the token must be a JSON object") from None
    if not isinstance(private, dict):
        raise SystemExit("--private-stdin: the line after the token must be a JSON object")
    args.instance_id = str(private.get("instance_id") or args.instance_id)
    args.log_file = private.get("log_file") or args.log_file
    if isinstance(private.get("OH_HOME"), str):
        os.environ["OH_HOME"] = private["OH_HOME"]  # for this process; /proc/PID/environ keeps the start's


def _load_token(args: argparse.Namespace) -> str:
    if args.token_stdin:
        token = args.stdin_token
        if not token:
            raise SystemExit("no token on stdin")
        if args.private_stdin:
            _load_private(args, args.stdin_private)
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


def _history_config(args: argparse.Namespace, workspace: str) -> dict[str, Any]:
    """History's part of the BackendConfig (issues 29, 39)."""
    return {
        "history_dir": _history_dir(args, workspace),
        "history_store_ignored": args.history_store_ignored == "true",
        "history_max_file": int(args.history_max_file * 1024 * 1024),
        "history_max_bytes": int(args.history_max_mb * 1024 * 1024),
    }


def _history_dir(args: argparse.Namespace, workspace: str) -> str | None:
    """One timeline per workspace under the state dir (0700), never in the workspace or its .git."""
    if args.history != "true":
        return None
    import hashlib

    key = hashlib.sha256(workspace.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return str(paths.ensure_private_dir(paths.state_dir() / "history" / key))


def _stop_on_signals(loop: asyncio.AbstractEventLoop, backend: Backend) -> None:
    """SIGTERM, SIGINT and SIGHUP stop the backend (its log says which)."""

    def on_signal(sig: signal.Signals) -> None:
        asyncio.ensure_future(backend.stop(f"signal {sig.name}"))

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, on_signal, sig)


async def _amain(args: argparse.Namespace, token: str) -> int:
    workspace = os.path.realpath(args.workspace)
    _trust_programs(args, workspace)
    instance_id = args.instance_id or sessions.new_instance_id()
    trace_path = None if args.no_trace else paths.traces_dir() / f"{instance_id}.jsonl"
    try:
        policy = _consent_policy(args, workspace)
        backend = Backend(
            BackendConfig(
                workspace=workspace,
                runtime=args.runtime,
                host=args.host,
                port=args.port,
                instance_id=instance_id,
                editor_timeout=args.editor_timeout,
                action_timeout=args.action_timeout,
                trace_path=trace_path,
                trace_max_bytes=args.trace_max_bytes,
                allowed_roots=args.allow_root,
                max_shells=args.max_shells,
                job_retention=args.job_retention,
                repeat_limit=args.repeat_limit,
                repeat_action=args.repeat_action,
                setup_script=args.setup_script,
                spool_dir=str(paths.state_dir() / "jobs"),
                review=args.review or args.consent in ("changes", "all"),
                **_history_config(args, workspace),
                review_timeout=args.review_timeout,
                user_shell=None if args.user_shell is None else args.user_shell == "true",
                shell_startup_timeout=args.shell_startup_timeout,
                sandbox=_sandbox_spec(args),
                sandbox_hidden=_oh_dirs(),
                branch=Plan(args.branch_name or None, args.on_dirty, args.on_not_git) if args.branch == "on" else None,
                consent=policy,
                approval_timeout=args.approval_timeout,
                **_approvals_page(args),
                unix_socket=not args.no_socket,
                unix_socket_path=args.socket,
                share_book=str(sharestore.default_path(workspace)),  # shares outlive `oh stop; oh start`
            ),
            token,
        )
    except ValueError as exc:  # e.g. an allowed root that does not exist: say so, no traceback
        logging.getLogger("oh.backend").error(str(exc))
        _ready(args.ready_fd, {"ready": False, "error": str(exc)})
        return BackendExit.CANNOT_SERVE
    try:
        await backend.start()
    except OSError as exc:
        msg = f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
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
            "instance_id": instance_id,
            "port": backend.port,
            "pid": os.getpid(),
            "url": f"ws://{args.host}:{backend.port}",
            "socket": str(backend.remote.socket_path or ""),
            "trace": str(trace_path or ""),
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


def _check_arguments(args: argparse.Namespace) -> str:
    """Refuse what the backend must never do (listen off loopback) or cannot (no workspace, no token);
    the token."""
    if not is_loopback_host(args.host):
        raise _Refused(
            f"refusing to listen on {args.host}: not a loopback address (127.0.0.1, ::1 or localhost). "
            "oh never listens on the network: anyone who could reach the port would need only the token to "
            "run commands as you."
        )
    if not os.path.isdir(args.workspace):
        raise _Refused(f"workspace {args.workspace} is not a directory")
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
    args.stdin_private = sys.stdin.readline() if args.token_stdin and args.private_stdin else ""
    if args.private_stdin:
        with contextlib.suppress(SystemExit):
            _load_private(args, args.stdin_private)  # a bad line is refused by _load_token, with the log set up
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
        token = _check_arguments(args)
        # The token must not leak into the runtime's shells through the environment.
        os.environ.pop("OH_TOKEN", None)
        args.lock_fd = _lock(
            os.path.realpath(args.workspace)
        )  # its fd stays open, so the lock is held, until the process exits
    except _Refused as refused:
        log.error(refused.message)
        _ready(args.ready_fd, {"ready": False, "error": refused.message, **refused.extra})
        return refused.code
    try:
        from ..eventloop import run as run_loop

        return run_loop(_amain(args, token))  # uvloop when installed (the [fast] extra)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
