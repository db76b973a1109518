"""``oh start``: start a backend for a workspace; live view in the foreground, or ``--detach``."""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from ._common import ERROR, USAGE, complete_runtimes, die, err, load_settings, print_ndjson
from ..config.settings import job_settings

EPILOG = (
    "Exit codes: 0 started (--detach), or stopped on request (Ctrl-C, SIGTERM, SIGHUP: the terminal closed) · "
    "1 the backend failed to start or died, or the live view failed (its terminal went away, an internal error): "
    "the backend is stopped first · 2 bad flag or setting · 3 a backend already serves this workspace."
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
    review: Optional[bool] = typer.Option(None, "--review/--no-review", help="Proposal mode: write/edit become proposals you accept or reject (VS Code diff, or `oh review`). Default: config `review`."),
    review_timeout: Optional[float] = typer.Option(None, "--review-timeout", help="Seconds a proposal waits for a decision (then TIMEOUT, nothing written). Default: config `review_timeout`."),
) -> None:
    """Start a backend for a workspace and show the live view (Ctrl-C stops it).

    The vscode runtime writes the session file the oh VS Code extension watches: the window
    whose workspace matches connects by itself. Only one backend per workspace.
    """
    s = load_settings({"runtime": runtime, "port": port, "host": host, "editor_timeout": editor_timeout, "action_timeout": action_timeout,
                       "review": review, "review_timeout": review_timeout})
    if not os.path.isdir(workspace):
        die(f"workspace {workspace} is not a directory.", USAGE)
    open_mode = s.open_editor if open_ is None else ("always" if open_ else "never")
    from ..config import secrets
    from ..launcher import process

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
    hangup: list[int] = []
    # process.StartError carries its exit code (3 when a backend already serves the workspace): cli.main reports it.
    with _deferred_signals(hangup):  # a closed terminal during the start must not orphan the backend
        started = process.start_backend(
            workspace, runtime=s.runtime, token=token, host=s.host, port=s.port, editor_timeout=s.editor_timeout,
            action_timeout=s.action_timeout, trace=s.trace, trace_max_bytes=s.trace_max_bytes, log_level=s.log_level,
            allowed_roots=roots, jobs=job_settings(s), review=s.review, review_timeout=s.review_timeout,
        )
    session = started.session
    # Warnings only once the backend runs (never before an "already running" error). JSON mode keeps
    # them out of stderr: an NDJSON `warning` event (foreground) or a "warnings" list (--detach).
    warnings = workspace_warnings(session.workspace) + ([("no_sandbox", NO_SANDBOX)] if session.runtime == "local" else [])
    if hangup and not detach:
        from ..launcher.process import stop_backend

        stop_backend(session)
        raise typer.Exit(0)
    try:
        if not json_:
            for _, text in warnings:
                err(text)
    except OSError:  # the terminal is already gone: same as a hang-up (a detached backend stays)
        if not detach:
            from ..launcher.process import stop_backend

            stop_backend(session)
            _silence_output()
            raise typer.Exit(ERROR) from None
    info = {"instance_id": session.instance_id, "pid": session.pid, "port": session.port, "url": session.url,
            "runtime": session.runtime, "workspace": session.workspace}
    if detach:
        _signal_editor_detached(session, open_mode)
        if json_:
            # "warnings" only when there is one: the object stays the same for the common case.
            print_ndjson({**info, **({"warnings": [{"id": wid, "message": text} for wid, text in warnings]} if warnings else {})})
        else:
            typer.echo(f"backend {session.instance_id} listening on {session.url} (runtime {session.runtime}, pid {session.pid})")
            typer.echo(f"workspace {session.workspace}; log {started.log_file}")
            if s.review:
                where = "in VS Code's diff editor" if session.runtime == "vscode" else "with `oh review`"
                typer.echo(f"review mode: the agent's writes and edits wait for your accept/reject {where} (up to {s.review_timeout:g} s)")
            typer.echo(f"stop it with `oh stop {session.instance_id}`")
        return
    mode = "json" if json_ else ("rich" if sys.stdout.isatty() else "plain")
    code = _foreground(session, open_mode, mode, warnings)
    raise typer.Exit(code)


def workspace_warnings(workspace: str) -> list[tuple[str, str]]:
    """A workspace of `/` or the home directory hands agents every file you have: say so."""
    real = os.path.realpath(workspace)
    if real == os.path.realpath(os.sep):
        return [("workspace_root", f"warning: the workspace is {real} (the whole file system): agents can read and change "
                                   "every file you can. Serve a project folder instead: `oh start -C <project>`.")]
    home = os.path.expanduser("~")
    if home not in ("~", "") and real == os.path.realpath(home):
        return [("workspace_home", f"warning: the workspace is your home directory ({real}): agents can read and change "
                                   "all of it (ssh keys, shell start-up files, other projects). Serve a project folder "
                                   "instead: `oh start -C <project>`.")]
    return []


class _deferred_signals:
    """SIGHUP/SIGTERM while the backend starts: remember them instead of dying (which would leave a
    detached backend behind); the caller stops the backend once it knows it. A signal that was
    ignored when we started (``nohup``) stays ignored."""

    SIGNALS = ("SIGHUP", "SIGTERM")

    def __init__(self, seen: list[int]) -> None:
        self.seen = seen
        self.saved: dict[int, object] = {}

    def __enter__(self) -> "_deferred_signals":
        import signal as os_signal

        for name in self.SIGNALS:
            sig = getattr(os_signal, name, None)
            if sig is None or os_signal.getsignal(sig) == os_signal.SIG_IGN:
                continue
            self.saved[sig] = os_signal.signal(sig, lambda signum, _frame: self.seen.append(signum))
        return self

    def __exit__(self, *exc: object) -> None:
        import signal as os_signal

        for sig, handler in self.saved.items():
            os_signal.signal(sig, handler)  # type: ignore[arg-type]


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


def _foreground(session, open_mode: str, mode: str, warnings: list[tuple[str, str]]) -> int:
    """Run the live view until Ctrl-C / SIGTERM / SIGHUP or the backend ends.

    Whatever ends the view (a signal, the terminal going away so writes fail with EIO/EPIPE, a bug
    in a renderer), the backend is stopped *before* anything else is printed: output can fail again.
    """
    import asyncio
    import signal as os_signal

    from .. import sessions
    from ..launcher.process import stop_backend
    from ..client.monitor import monitor
    from ..ui.live import LiveState
    from ..text.sanitize import visible

    state = LiveState(backend=session.public())

    def line(text: str) -> None:
        from datetime import datetime

        sys.stdout.write(f"{datetime.now().strftime('%H:%M:%S')} {visible(text)}\n")
        sys.stdout.flush()

    def note(text: str, event: str = "note") -> None:
        if mode == "plain":
            line(text)
        elif mode == "json":
            print_ndjson({"type": "event", "event": event, "message": text})

    def on_frame(frame: dict) -> None:
        lines = state.apply(frame)
        if mode == "json":
            print_ndjson(frame)  # JSON escapes every control character
        elif mode == "plain":
            for text in lines:
                line(text)

    def loader():
        found = sessions.read(sessions.path_for(session.instance_id))
        return found if found is not None and sessions.is_alive(found) else None

    async def main() -> str:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (os_signal.SIGINT, os_signal.SIGTERM, os_signal.SIGHUP):
            if sig != os_signal.SIGINT and os_signal.getsignal(sig) == os_signal.SIG_IGN:
                continue  # nohup: the user wants the backend to outlive the terminal
            loop.add_signal_handler(sig, stop.set)
        helpers = [asyncio.create_task(_open_later(session, open_mode, state, note))] if session.runtime == "vscode" else []
        if session.runtime == "vscode":
            helpers.append(asyncio.create_task(_hints_later(session, state, note, mode)))
        live = None
        if mode == "rich":
            live = _start_rich(state)
            helpers.append(asyncio.create_task(_refresh(live, state)))
            if hasattr(os_signal, "SIGWINCH"):  # a resized terminal gets a fitted frame at once
                loop.add_signal_handler(os_signal.SIGWINCH, lambda: setattr(state, "version", state.version + 1))
        watcher = asyncio.create_task(monitor(loader, on_frame, stop))
        try:
            # A helper that fails (a renderer bug, the terminal gone: EIO) ends the view like a signal.
            waiting = {watcher, *helpers}
            while True:
                done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if task is watcher or task.exception() is not None:
                        return task.result()  # the monitor's reason, or a helper's exception
        finally:
            for task in (watcher, *helpers):
                task.cancel()
            await asyncio.gather(watcher, *helpers, return_exceptions=True)
            if live is not None:
                try:
                    live.refresh()
                finally:
                    live.stop()

    reason, failure = "stopped", None
    try:
        if mode == "json":
            print_ndjson({"type": "event", "event": "backend_started", **{k: v for k, v in session.public().items()}})
            for wid, text in warnings:
                print_ndjson({"type": "event", "event": "warning", "id": wid, "message": text})
        reason = asyncio.run(main())
    except KeyboardInterrupt:
        reason = "stopped"
    except BaseException as exc:  # noqa: BLE001 - whatever broke the view, the backend must not outlive it
        failure = exc
    if reason == "stopped" or failure is not None:
        for sig in (os_signal.SIGINT, os_signal.SIGTERM, os_signal.SIGHUP):  # a second Ctrl-C must not leave it half-stopped
            os_signal.signal(sig, os_signal.SIG_IGN)
        how = stop_backend(session)
        if failure is not None:
            return _report_failure(session, failure, how)
        try:
            if mode == "json":
                print_ndjson({"type": "event", "event": "backend_stopped", "instance_id": session.instance_id, "how": how})
            else:
                print(f"backend {session.instance_id} stopped ({how})", file=sys.stdout if mode == "plain" else sys.stderr, flush=True)
        except OSError:
            _silence_output()  # the terminal is gone (SIGHUP): nothing to tell, nobody to tell
        return 0
    # The backend went away on its own (oh stop elsewhere, crash, kill).
    from ..launcher.process import wait_gone

    if wait_gone(session, 3.0):  # a killed process may still be exiting when its socket drops
        sessions.remove(session.instance_id)
    clean = bool(state.stopping) or reason == "backend shut down"
    try:
        if mode == "json":
            print_ndjson({"type": "event", "event": "backend_stopped", "instance_id": session.instance_id, "how": "external", "reason": reason})
        if mode == "plain":
            line(f"backend {session.instance_id} ended: {state.stopping or reason}")
        if not clean or mode == "rich":
            err(f"backend {session.instance_id} ended: {state.stopping or reason}" + ("" if clean else f"; see its log: {process_log(session)}"))
    except OSError:
        _silence_output()
    return 0 if clean else ERROR


def _start_rich(state):
    """rich Live without its refresh thread: ``_refresh`` redraws from the event loop, so a failed
    write (the terminal closed) or a renderer bug reaches ``main`` instead of dying in a thread and
    leaving a frozen view behind."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    console = Console()

    def renderable():
        try:
            return state.render(console.size.height, console.size.width)
        except Exception as exc:  # noqa: BLE001 - a renderer bug must not freeze the view
            return Text(f"oh: the live view cannot draw ({type(exc).__name__}); the backend keeps running. `oh logs -f` shows actions.", style="red")

    live = Live(get_renderable=renderable, console=console, auto_refresh=False, transient=False, redirect_stdout=False, redirect_stderr=False)
    live.start()
    return live


async def _refresh(live, state) -> None:
    """Redraw at most 8 times a second: always while the spinner shows, else on a change or once a
    second (uptime). A frame of a full 200x60 table costs tens of ms; idle redraws would waste a core."""
    import asyncio
    import time

    drawn, last = -1, 0.0
    while True:
        now = time.monotonic()
        if state.animating or state.version != drawn or now - last >= 1.0:
            drawn, last = state.version, now
            live.refresh()
        await asyncio.sleep(0.125)


async def _open_later(session, open_mode: str, state, note) -> None:
    import asyncio

    from ..launcher import signal as editor_signal

    if open_mode == "never":
        return
    if open_mode == "auto":
        await asyncio.sleep(editor_signal.AUTO_GRACE)
        if not editor_signal.should_open_after_grace(open_mode, len(state.editors)):
            return
    cmds = await asyncio.to_thread(editor_signal.open_editor, session.workspace, session.instance_id)
    if cmds is None and open_mode == "always":
        note("`code` is not on PATH: open the workspace in VS Code yourself (the extension connects by itself).")
    elif cmds:
        note("asked VS Code to open the workspace (`code`)")


async def _hints_later(session, state, note, mode: str) -> None:
    """After the grace period with no editor: say why none may come (live view line, plain lines, NDJSON notes)."""
    import asyncio

    from ..launcher import signal as editor_signal
    from ..ui.hints import editor_hints

    await asyncio.sleep(editor_signal.AUTO_GRACE)
    if state.editors:
        return
    from ..config import paths

    hints = await editor_hints(session.workspace, editor_signal.code_binary(), editor_signal.EXTENSION_ID, str(paths.sessions_dir()))
    if state.editors:
        return
    state.hints = hints
    state.version += 1
    for text in hints:
        note(f"no editor yet: {text}", event="editor_hint")


def _silence_output() -> None:
    """Point stdout/stderr at /dev/null so the interpreter's final flush cannot fail on a dead tty."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass


def _report_failure(session, failure: BaseException, how: str) -> int:
    import traceback

    try:
        if not isinstance(failure, OSError):  # EIO/EPIPE: the terminal or reader is gone, no bug to report
            traceback.print_exception(failure)
        err(f"the live view failed ({type(failure).__name__}: {failure}); backend {session.instance_id} was stopped ({how}). "
            + ("" if isinstance(failure, OSError) else "Please report this with the traceback above."))
    except OSError:
        pass
    if isinstance(failure, OSError):
        _silence_output()  # stdout may still hold what could not be written; its flush at exit would fail
    return ERROR


def process_log(session) -> str:
    from ..launcher.process import log_file_for

    return str(log_file_for(session.instance_id))
