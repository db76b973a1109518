"""``oh start``: start a backend for a workspace; live view in the foreground, or ``--detach``."""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from ._common import ERROR, NOT_RUNNING, USAGE, complete_runtimes, die, err, load_settings, print_ndjson

EPILOG = (
    "Exit codes: 0 started (--detach) or stopped cleanly with Ctrl-C · 1 the backend failed to start or died · "
    "2 bad flag or setting · 3 a backend already serves this workspace."
)

NO_SANDBOX = (
    "warning: runtime local has NO sandbox: every action an agent sends runs on this machine as you "
    "(shell commands, file writes inside the workspace). Use it only with agents you trust."
)


def start(
    runtime: Optional[str] = typer.Option(None, "--runtime", "-r", help="local (this machine) or vscode (in VS Code). Default: config `runtime`.", autocompletion=complete_runtimes),
    workspace: str = typer.Option(".", "--workspace", "-C", help="Directory the backend serves (default: cwd)."),
    port: Optional[int] = typer.Option(None, "--port", "-p", help="Port to listen on; 0 = a free one. Default: config `port`."),
    host: Optional[str] = typer.Option(None, "--host", help="Loopback address to listen on (127.0.0.1 or ::1). Default: config `host`."),
    detach: bool = typer.Option(False, "--detach", "-d", help="Return once the backend listens; it keeps running (stop it with `oh stop`)."),
    json_: bool = typer.Option(False, "--json", help="With --detach: print the started backend as JSON. Foreground: NDJSON events."),
    open_: Optional[bool] = typer.Option(None, "--open/--no-open", help="vscode: ask VS Code to open the workspace now / never. Default: config `open_editor` (auto: only if no editor connects within 3 s and `code` is on PATH)."),
    editor_timeout: Optional[float] = typer.Option(None, "--editor-timeout", help="Seconds an action waits for an editor before NO_EDITOR. Default: config `editor_timeout`."),
    action_timeout: Optional[float] = typer.Option(None, "--action-timeout", help="Deadline (s) for actions without their own timeout. Default: config `action_timeout`."),
    allow: Optional[list[str]] = typer.Option(None, "--allow", help="Also allow file actions and run cwds in DIR (repeatable; e.g. --allow /tmp). Adds to config `allowed_roots`."),
) -> None:
    """Start a backend for a workspace and show the live view (Ctrl-C stops it).

    The vscode runtime writes the session file the oh VS Code extension watches: the window
    whose workspace matches connects by itself. Only one backend per workspace.
    """
    s = load_settings({"runtime": runtime, "port": port, "host": host, "editor_timeout": editor_timeout, "action_timeout": action_timeout})
    if not os.path.isdir(workspace):
        die(f"workspace {workspace} is not a directory.", USAGE)
    open_mode = s.open_editor if open_ is None else ("always" if open_ else "never")
    from ..config import secrets
    from ..launcher import process

    if s.runtime == "local":
        err(NO_SANDBOX)
    try:
        token = secrets.get_or_create_token()
    except Exception as exc:  # noqa: BLE001
        die(f"cannot read or create the token: {exc}", ERROR, "Run `oh doctor` to see where the token should live.")
    roots = [*s.allowed_roots, *(os.path.abspath(os.path.expanduser(d)) for d in allow or ())]
    try:
        from ..backend.agentinfo import effective_roots

        effective_roots(workspace, roots)
    except ValueError as exc:
        die(str(exc), USAGE, "Fix `--allow` or the `allowed_roots` setting (`oh config list`).")
    try:
        started = process.start_backend(
            workspace, runtime=s.runtime, token=token, host=s.host, port=s.port, editor_timeout=s.editor_timeout,
            action_timeout=s.action_timeout, trace=s.trace, trace_max_bytes=s.trace_max_bytes, log_level=s.log_level,
            allowed_roots=roots,
        )
    except process.StartError as exc:
        die(exc.message, NOT_RUNNING if exc.already_served else ERROR, None if exc.already_served else "Run `oh doctor` to check ports, directories and the token.")
    session = started.session
    info = {"instance_id": session.instance_id, "pid": session.pid, "port": session.port, "url": session.url,
            "runtime": session.runtime, "workspace": session.workspace}
    if detach:
        _signal_editor_detached(session, open_mode)
        if json_:
            print_ndjson(info)
        else:
            typer.echo(f"backend {session.instance_id} listening on {session.url} (runtime {session.runtime}, pid {session.pid})")
            typer.echo(f"workspace {session.workspace}; log {started.log_file}")
            typer.echo(f"stop it with `oh stop {session.instance_id}`")
        return
    mode = "json" if json_ else ("rich" if sys.stdout.isatty() else "plain")
    code = _foreground(session, open_mode, mode)
    raise typer.Exit(code)


def _signal_editor_detached(session, open_mode: str) -> None:
    from ..launcher import signal as editor_signal

    if session.runtime != "vscode" or open_mode == "never":
        return
    if open_mode == "always":
        if editor_signal.open_editor(session.workspace, session.instance_id) is None:
            err("`code` is not on PATH: open the workspace in VS Code yourself (the extension connects by itself).")
        return
    if editor_signal.code_binary() is None:
        return  # auto: nothing we could do; the session file is the signal
    import time

    from ..launcher.control import BackendUnreachable, status

    deadline = time.monotonic() + editor_signal.AUTO_GRACE
    while time.monotonic() < deadline:
        try:
            if status(session).get("editors"):
                return
        except BackendUnreachable:
            return
        time.sleep(0.2)
    editor_signal.open_editor(session.workspace, session.instance_id)


def _foreground(session, open_mode: str, mode: str) -> int:
    import asyncio
    import signal as os_signal

    from ..launcher import sessions
    from ..launcher import signal as editor_signal
    from ..launcher.process import stop_backend
    from ..ui.live import LiveState, monitor

    state = LiveState(backend=session.public())
    emit_plain = mode == "plain"

    def line(text: str) -> None:
        from datetime import datetime

        sys.stdout.write(f"{datetime.now().strftime('%H:%M:%S')} {text}\n")
        sys.stdout.flush()

    if mode == "json":
        print_ndjson({"type": "event", "event": "backend_started", **{k: v for k, v in session.public().items()}})

    def on_frame(frame: dict) -> None:
        lines = state.apply(frame)
        if mode == "json":
            print_ndjson(frame)
        elif emit_plain:
            for text in lines:
                line(text)

    def loader():
        found = sessions.read(sessions.path_for(session.instance_id))
        return found if found is not None and sessions.is_alive(found) else None

    async def main() -> str:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (os_signal.SIGINT, os_signal.SIGTERM, os_signal.SIGHUP):
            loop.add_signal_handler(sig, stop.set)
        opener = None
        if session.runtime == "vscode" and open_mode != "never":
            async def open_later() -> None:
                if open_mode == "auto":
                    await asyncio.sleep(editor_signal.AUTO_GRACE)
                    if not editor_signal.should_open_after_grace(open_mode, len(state.editors)):
                        return
                cmds = await asyncio.to_thread(editor_signal.open_editor, session.workspace, session.instance_id)
                if cmds is None and open_mode == "always":
                    note("`code` is not on PATH: open the workspace in VS Code yourself (the extension connects by itself).")
                elif cmds:
                    note("asked VS Code to open the workspace (`code`)")

            opener = asyncio.create_task(open_later())
        live = None
        if mode == "rich":
            from rich.console import Console
            from rich.live import Live

            console = Console()
            live = Live(get_renderable=lambda: state.render(console.size.height), console=console, refresh_per_second=8, transient=False, redirect_stderr=False)
            live.start()
        try:
            return await monitor(loader, on_frame, stop) if not stop.is_set() else "stopped"
        finally:
            if opener is not None:
                opener.cancel()
            if live is not None:
                live.refresh()
                live.stop()

    def note(text: str) -> None:
        if mode == "plain":
            line(text)
        elif mode == "json":
            print_ndjson({"type": "event", "event": "note", "message": text})

    try:
        reason = asyncio.run(main())
    except KeyboardInterrupt:
        reason = "stopped"
    if reason == "stopped":
        # Ctrl-C (or SIGTERM/SIGHUP to the launcher): stop the backend cleanly.
        os_signal.signal(os_signal.SIGINT, os_signal.SIG_IGN)  # a second Ctrl-C must not leave it half-stopped
        how = stop_backend(session)
        if mode == "json":
            print_ndjson({"type": "event", "event": "backend_stopped", "instance_id": session.instance_id, "how": how})
        else:
            print(f"backend {session.instance_id} stopped ({how})", file=sys.stdout if mode == "plain" else sys.stderr)
        return 0
    # The backend went away on its own (oh stop elsewhere, crash, kill).
    from ..launcher.process import wait_gone

    if wait_gone(session, 3.0):  # a killed process may still be exiting when its socket drops
        sessions.remove(session.instance_id)
    if mode == "json":
        print_ndjson({"type": "event", "event": "backend_stopped", "instance_id": session.instance_id, "how": "external", "reason": reason})
    clean = bool(state.stopping) or reason == "backend shut down"
    if mode == "plain":
        line(f"backend {session.instance_id} ended: {state.stopping or reason}")
    if not clean or mode == "rich":
        err(f"backend {session.instance_id} ended: {state.stopping or reason}" + ("" if clean else f"; see its log: {process_log(session)}"))
    return 0 if clean else ERROR


def process_log(session) -> str:
    from ..launcher.process import log_file_for

    return str(log_file_for(session.instance_id))
