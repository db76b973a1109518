"""``oh start``: start a backend for a workspace; live view in the foreground, or ``--detach``."""

from __future__ import annotations

import os
from typing import Optional

import typer

from ._common import ERROR, USAGE, complete_runtimes, die, load_settings
from ._io import Streams
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


def _complete_on_dirty(incomplete: str):
    from ._branch import complete_on_dirty

    return complete_on_dirty(incomplete)


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
    branch: Optional[bool] = typer.Option(None, "--branch/--no-branch", help="Git-branch mode: before the agent's first change (write, edit, command), switch the workspace to a new branch oh/<date>-<time>-<agent> (VS Code's Git extension with --runtime vscode, git locally). Default: config `branch`."),
    branch_name: Optional[str] = typer.Option(None, "--branch-name", metavar="NAME", help="Branch mode on this branch instead (implies --branch): created if missing, switched to if it exists. Default: config `branch_name`."),
    on_dirty: Optional[str] = typer.Option(None, "--on-dirty", metavar="MODE", autocompletion=_complete_on_dirty, help="Branch mode with uncommitted changes: stash | carry | abort | review | ask. Stash them, carry them to the branch, abort, use review mode instead of a branch (decided at start), or ask (a terminal prompt; VS Code's dialog). Needed without a terminal (--detach, --json) for --runtime local. Default: config `on_dirty`."),
    git_init: bool = typer.Option(False, "--git-init", help="Branch mode in a folder that is not a git repository: run `git init` first (else you are asked, or it is refused). Default: config `on_not_git`."),
    review: Optional[bool] = typer.Option(None, "--review/--no-review", help="Proposal mode: write/edit become proposals you accept or reject (VS Code diff, or `oh review`); the same as --consent changes. Default: config `review`."),
    consent: Optional[str] = typer.Option(None, "--consent", metavar="LEVEL", autocompletion=lambda incomplete: [c for c in ("never", "risky", "commands", "changes", "all") if c.startswith(incomplete)], help="When to ask you before an agent's action runs: never | risky | commands | changes | all. Answer in the live view (y/n/a), with `oh approve ID` / `oh reject ID`, or in VS Code. Rules: config consent_allow/ask/deny. Default: config `consent`."),
    approval_timeout: Optional[float] = typer.Option(None, "--approval-timeout", help="Seconds an action waits for your answer; then the agent gets REJECTED (not run). Default: config `approval_timeout`."),
    review_timeout: Optional[float] = typer.Option(None, "--review-timeout", help="Seconds a proposal waits for a decision (then TIMEOUT, nothing written). Default: config `review_timeout`."),
) -> None:
    """Start a backend for a workspace and show the live view (Ctrl-C stops it).

    The vscode runtime writes the session file the oh VS Code extension watches: the window
    whose workspace matches connects by itself. Only one backend per workspace.
    """
    raise typer.Exit(run_start(Streams.system(), runtime=runtime, workspace=workspace, port=port, host=host, detach=detach, json_=json_,
                               open_=open_, editor_timeout=editor_timeout, action_timeout=action_timeout, allow=allow,
                               branch=branch, branch_name=branch_name, on_dirty=on_dirty, git_init=git_init,
                               review=review, review_timeout=review_timeout, consent=consent, approval_timeout=approval_timeout))


def run_start(io: Streams, *, runtime: Optional[str] = None, workspace: str = ".", port: Optional[int] = None, host: Optional[str] = None,
              detach: bool = False, json_: bool = False, open_: Optional[bool] = None, editor_timeout: Optional[float] = None,
              action_timeout: Optional[float] = None, allow: Optional[list[str]] = None, branch: Optional[bool] = None,
              branch_name: Optional[str] = None, on_dirty: Optional[str] = None, git_init: bool = False,
              review: Optional[bool] = None, review_timeout: Optional[float] = None, consent: Optional[str] = None,
              approval_timeout: Optional[float] = None) -> int:
    """``oh start``'s behaviour: --detach returns 0 once the backend listens; else the live view's exit code."""
    s = load_settings({"runtime": runtime, "port": port, "host": host, "editor_timeout": editor_timeout, "action_timeout": action_timeout,
                       "branch": True if branch_name else branch, "branch_name": branch_name, "on_dirty": on_dirty,
                       "on_not_git": "init" if git_init else None, "review": review, "review_timeout": review_timeout,
                       "consent": consent, "approval_timeout": approval_timeout})
    if not os.path.isdir(workspace):
        die(f"workspace {workspace} is not a directory.", USAGE)
    branch_flags = {}
    review_on = s.review
    if s.branch:  # asks (or refuses) about a dirty tree / no repository before anything starts
        from ..protocol.branch import Plan
        from . import _branch

        plan = _branch.settle(workspace, s.runtime, Plan(s.branch_name or None, s.on_dirty, s.on_not_git), _branch.interactive(detach, json_))
        if plan == _branch.REVIEW:  # the user's fallback for a dirty tree / no repository: proposals, no branch
            review_on = True
        else:
            branch_flags = _branch.flags(plan)
    open_mode = s.open_editor if open_ is None else ("always" if open_ else "never")
    from ..launcher import process
    from ..launcher import consent as _consent

    consent_plan = _consent.plan(s, os.path.realpath(workspace), review_on)
    review_on = consent_plan.review

    token = _token()
    roots = _allowed_roots(workspace, s.allowed_roots, allow)
    hangup: list[int] = []
    # --detach, runtime vscode: ask the editor CLIs which has the extension while the backend starts (each
    # CLI takes about a second); the answer joins the warnings below. The live view asks by itself.
    install_check = _InstallCheck() if detach and s.runtime == "vscode" else None
    # process.StartError carries its exit code (3 when a backend already serves the workspace): cli.main reports it.
    with _deferred_signals(hangup):  # a closed terminal during the start must not orphan the backend
        started = process.start_backend(
            workspace, runtime=s.runtime, token=token, host=s.host, port=s.port, editor_timeout=s.editor_timeout,
            action_timeout=s.action_timeout, trace=s.trace, trace_max_bytes=s.trace_max_bytes, log_level=s.log_level,
            allowed_roots=roots, jobs={**job_settings(s), **branch_flags},  # jobs: the backend's settings flags
            review=review_on, review_timeout=s.review_timeout, consent=consent_plan.flags(),
        )
    session = started.session
    # Warnings only once the backend runs (never before an "already running" error). JSON mode keeps
    # them out of stderr: an NDJSON `warning` event (foreground) or a "warnings" list (--detach).
    warnings = workspace_warnings(session.workspace) + ([("no_sandbox", NO_SANDBOX)] if session.runtime == "local" else []) + consent_plan.warnings
    if install_check is not None:
        warnings += [("no_extension", text) for text in install_check.result(timeout=20.0)]
    if hangup and not detach:
        from ..launcher.process import stop_backend

        stop_backend(session)
        return 0
    try:
        if not json_:
            for _, text in warnings:
                io.note(text)
    except OSError:  # the terminal is already gone: same as a hang-up (a detached backend stays)
        if not detach:
            from ..launcher.process import stop_backend

            stop_backend(session)
            _silence_output()
            return ERROR
    if detach:
        _signal_editor_detached(io, session, open_mode)
        _tell_detached(io, started, warnings, json_, s.review_timeout if review_on else None)
        return 0
    mode = "json" if json_ else ("rich" if io.tty else "plain")
    return _foreground(io, session, open_mode, mode, warnings)


def _token() -> str:
    from ..config import secrets

    try:
        return secrets.get_or_create_token()
    except Exception as exc:  # noqa: BLE001
        die(f"cannot read or create the token: {exc}", ERROR, "Run `oh doctor` to see where the token should live.")


def _allowed_roots(workspace: str, configured: list[str], allow: Optional[list[str]]) -> list[str]:
    """Setting `allowed_roots` plus --allow, checked the way the backend will check them."""
    roots = [*configured, *(os.path.abspath(os.path.expanduser(d)) for d in allow or ())]
    try:
        from ..backend.agentinfo import effective_roots

        effective_roots(workspace, roots)
    except ValueError as exc:
        die(str(exc), USAGE, "Fix `--allow` or the `allowed_roots` setting (`oh config list`).")
    return roots


def _tell_detached(io: Streams, started, warnings: list[tuple[str, str]], json_: bool, review_timeout: Optional[float]) -> None:
    """--detach's report; ``review_timeout``: set when review mode is on."""
    session = started.session
    if json_:
        info = {"instance_id": session.instance_id, "pid": session.pid, "port": session.port, "url": session.url,
                "runtime": session.runtime, "workspace": session.workspace}
        # "warnings" only when there is one: the object stays the same for the common case.
        io.ndjson({**info, **({"warnings": [{"id": wid, "message": text} for wid, text in warnings]} if warnings else {})})
    else:
        io.print(f"backend {session.instance_id} listening on {session.url} (runtime {session.runtime}, pid {session.pid})")
        io.print(f"workspace {session.workspace}; log {started.log_file}")
        if review_timeout is not None:
            where = "in VS Code's diff editor" if session.runtime == "vscode" else "with `oh review`"
            io.print(f"review mode: the agent's writes and edits wait for your accept/reject {where} (up to {review_timeout:g} s)")
        io.print(f"stop it with `oh stop {session.instance_id}`")


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


def _signal_editor_detached(io: Streams, session, open_mode: str) -> None:
    from ..launcher import signal as editor_signal

    if session.runtime != "vscode" or open_mode == "never":
        return
    if open_mode == "always":
        if editor_signal.open_editor(session.workspace, session.instance_id) is None:
            io.note("no VS Code CLI (code, cursor, windsurf, codium, code-server) on PATH: open the workspace in the editor yourself (the extension connects by itself).")
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


def _foreground(io: Streams, session, open_mode: str, mode: str, warnings: list[tuple[str, str]]) -> int:
    """Run the live view until Ctrl-C / SIGTERM / SIGHUP or the backend ends.

    Whatever ends the view (a signal, the terminal going away so writes fail with EIO/EPIPE, a bug
    in a renderer), the backend is stopped *before* anything else is printed: output can fail again.
    """
    import asyncio

    view = _LiveView(io, session, open_mode, mode)
    reason, failure = "stopped", None
    try:
        if mode == "json":
            view.announce(warnings)
        reason = asyncio.run(view.run())
    except KeyboardInterrupt:
        reason = "stopped"
    except BaseException as exc:  # noqa: BLE001 - whatever broke the view, the backend must not outlive it
        failure = exc
    if reason == "stopped" or failure is not None:
        return view.stop_backend(failure)
    return view.ended_on_its_own(reason)


class _LiveView:
    """The foreground `oh start`: a /v1/monitor client drawing ``LiveState`` as a rich view, plain
    lines or NDJSON (``mode``), with the helpers that open VS Code and explain a missing editor."""

    def __init__(self, io: Streams, session, open_mode: str, mode: str) -> None:
        from ..ui.live import LiveState

        self.io, self.session, self.open_mode, self.mode = io, session, open_mode, mode
        self.state = LiveState(backend=session.public())

    # ------------------------------------------------------------ output in the three modes
    def line(self, text: str) -> None:
        from datetime import datetime

        from ..text.sanitize import visible

        self.io.out.write(f"{datetime.now().strftime('%H:%M:%S')} {visible(text)}\n")
        self.io.out.flush()

    def note(self, text: str, event: str = "note") -> None:
        if self.mode == "plain":
            self.line(text)
        elif self.mode == "json":
            self.io.ndjson({"type": "event", "event": event, "message": text})

    def on_frame(self, frame: dict) -> None:
        if frame.get("event") == "approval_decided" and frame.get("by") == "vscode" and frame.get("rules"):
            self._remember(frame["rules"])  # "always" from VS Code: the backend writes no config, this process does
        lines = self.state.apply(frame)
        if self.mode == "json":
            self.io.ndjson(frame)  # JSON escapes every control character
        elif self.mode == "plain":
            for text in lines:
                self.line(text)

    def _remember(self, rules) -> None:
        from ..launcher import consent as _consent

        try:
            saved = _consent.remember([r for r in rules if isinstance(r, str)])
        except Exception as exc:  # noqa: BLE001 - a bad rule or an unwritable config must not end the view
            self.note(f"could not save the always-allow rule(s) {rules}: {exc}")
            return
        if saved:
            self.note(f"always allowed from now on (saved in {saved}): {', '.join(rules)}")

    def announce(self, warnings: list[tuple[str, str]]) -> None:
        """NDJSON mode: the backend and the start-up warnings, as the first events."""
        self.io.ndjson({"type": "event", "event": "backend_started", **{k: v for k, v in self.session.public().items()}})
        for wid, text in warnings:
            self.io.ndjson({"type": "event", "event": "warning", "id": wid, "message": text})

    def load_session(self):
        """The session file again (the monitor reconnects with it), or None once the backend is gone."""
        from .. import sessions

        found = sessions.read(sessions.path_for(self.session.instance_id))
        return found if found is not None and sessions.is_alive(found) else None

    # ------------------------------------------------------------ the asyncio part
    async def run(self) -> str:
        """Follow the monitor until it ends (its reason) or a helper fails (its exception is raised)."""
        import asyncio

        from ..client.monitor import monitor

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._stop_on_signals(loop, stop)
        helpers = self._start_helpers()
        live = None
        if self.mode == "rich":
            live = _start_rich(self.state, self.io)
            helpers.append(asyncio.create_task(_refresh(live, self.state)))
            self._redraw_on_resize(loop)
        watcher = asyncio.create_task(monitor(self.load_session, self.on_frame, stop))
        keys = _consent_keys(self, loop) if self.mode in ("rich", "plain") and self.session.approval_timeout else None
        try:
            return await _first_to_end(watcher, helpers)
        finally:
            if keys is not None:
                keys()
            for task in (watcher, *helpers):
                task.cancel()
            await asyncio.gather(watcher, *helpers, return_exceptions=True)
            if live is not None:
                try:
                    live.refresh()
                finally:
                    live.stop()

    @staticmethod
    def _stop_on_signals(loop, stop) -> None:
        import signal as os_signal

        for sig in (os_signal.SIGINT, os_signal.SIGTERM, os_signal.SIGHUP):
            if sig != os_signal.SIGINT and os_signal.getsignal(sig) == os_signal.SIG_IGN:
                continue  # nohup: the user wants the backend to outlive the terminal
            loop.add_signal_handler(sig, stop.set)

    def _redraw_on_resize(self, loop) -> None:
        import signal as os_signal

        if hasattr(os_signal, "SIGWINCH"):  # a resized terminal gets a fitted frame at once
            loop.add_signal_handler(os_signal.SIGWINCH, lambda: setattr(self.state, "version", self.state.version + 1))

    def _start_helpers(self) -> list:
        """runtime vscode: open VS Code when asked (or when none connects), and say why none may come."""
        import asyncio

        if self.session.runtime != "vscode":
            return []
        return [asyncio.create_task(_open_later(self.session, self.open_mode, self.state, self.note)),
                asyncio.create_task(_hints_later(self.session, self.state, self.note, self.mode))]

    # ------------------------------------------------------------ how the view ended
    def stop_backend(self, failure: BaseException | None) -> int:
        """Ctrl-C, a signal or a failed view: stop the backend first, then say so (if output still works)."""
        import signal as os_signal

        from ..launcher.process import stop_backend

        for sig in (os_signal.SIGINT, os_signal.SIGTERM, os_signal.SIGHUP):  # a second Ctrl-C must not leave it half-stopped
            os_signal.signal(sig, os_signal.SIG_IGN)
        how = stop_backend(self.session)
        if failure is not None:
            return _report_failure(self.io, self.session, failure, how)
        try:
            if self.mode == "json":
                self.io.ndjson({"type": "event", "event": "backend_stopped", "instance_id": self.session.instance_id, "how": how})
            else:
                print(f"backend {self.session.instance_id} stopped ({how})", file=self.io.out if self.mode == "plain" else self.io.err, flush=True)
        except OSError:
            _silence_output()  # the terminal is gone (SIGHUP): nothing to tell, nobody to tell
        return 0

    def ended_on_its_own(self, reason: str) -> int:
        """The backend went away by itself (oh stop elsewhere, crash, kill): 0 when it shut down cleanly."""
        from .. import sessions
        from ..launcher.process import wait_gone

        session, state = self.session, self.state
        if wait_gone(session, 3.0):  # a killed process may still be exiting when its socket drops
            sessions.remove(session.instance_id)
        clean = bool(state.stopping) or reason == "backend shut down"
        try:
            if self.mode == "json":
                self.io.ndjson({"type": "event", "event": "backend_stopped", "instance_id": session.instance_id, "how": "external", "reason": reason})
            if self.mode == "plain":
                self.line(f"backend {session.instance_id} ended: {state.stopping or reason}")
            if not clean or self.mode == "rich":
                self.io.note(f"backend {session.instance_id} ended: {state.stopping or reason}" + ("" if clean else f"; see its log: {process_log(session)}"))
        except OSError:
            _silence_output()
        return 0 if clean else ERROR


def _consent_keys(view: "_LiveView", loop):
    """Consent in the live view (issue 19): single keys answer the oldest waiting action -- y allows,
    n rejects, a allows and adds its "always" rule (saved to config consent_allow). Only with a
    terminal on stdin (also a plain view over SSH); the terminal is put in cbreak mode (Ctrl-C still
    stops) and restored by the returned callable. None when stdin is no terminal."""
    import sys
    import termios
    import tty

    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd):
            return None
        saved = termios.tcgetattr(fd)
        tty.setcbreak(fd)
    except (OSError, ValueError, termios.error):
        return None
    busy: list = []

    def answer(key: str) -> None:
        import asyncio

        ask = view.state.first_approval()
        if ask is None or busy:
            return
        frame = {"op": "allow" if key in "ya" else "reject", "id": ask["id"], "via": "live view"}
        if key == "a":
            frame["always"] = True
        if key == "n":
            frame["reason"] = "rejected in the live view of oh start"

        def send() -> dict:
            from .approvals import request

            result = request(view.session, frame)
            for r in result.get("results") or []:
                if r.get("rules"):
                    from ..launcher import consent as _consent

                    _consent.remember(list(r["rules"]))
            return result

        async def go() -> None:
            try:
                await asyncio.to_thread(send)
            except Exception as exc:  # noqa: BLE001 - the view says why; the action keeps waiting
                view.note(f"could not answer {ask['id']}: {exc}")
            finally:
                busy.clear()

        busy.append(asyncio.ensure_future(go()))

    def readable() -> None:
        try:
            data = os.read(fd, 64).decode("utf-8", "replace").lower()
        except OSError:
            return
        for ch in data:
            if ch in "yna":
                answer(ch)
                return

    loop.add_reader(fd, readable)

    def restore() -> None:
        loop.remove_reader(fd)
        try:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        except (OSError, termios.error):
            pass

    return restore


async def _first_to_end(watcher, helpers: list) -> str:
    """The monitor's reason once it ends; a helper that fails (a renderer bug, the terminal gone:
    EIO) ends the view like a signal, by raising its exception here."""
    import asyncio

    waiting = {watcher, *helpers}
    while True:
        done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is watcher or task.exception() is not None:
                return task.result()  # the monitor's reason, or a helper's exception


def _start_rich(state, io: Streams):
    """rich Live without its refresh thread: ``_refresh`` redraws from the event loop, so a failed
    write (the terminal closed) or a renderer bug reaches ``main`` instead of dying in a thread and
    leaving a frozen view behind."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    console = Console(file=io.out)

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
        note("no VS Code CLI (code, cursor, windsurf, codium, code-server) on PATH: open the workspace in the editor yourself (the extension connects by itself).")
    elif cmds:
        note(f"asked the editor to open the workspace (`{os.path.basename(cmds[0][0])}`)")
    elif cmds == [] and open_mode == "always":
        note("code-server cannot be asked to open a folder from outside its own terminal: open the workspace in its browser tab (the extension connects by itself).")


class _InstallCheck:
    """No editor oh can see has the extension (or only another release): the fix, `oh vscode install`.
    Runs in a daemon thread from construction; ``result`` waits for it (each CLI call is bounded)."""

    def __init__(self) -> None:
        import threading

        self._hints: list[str] = []
        self._thread = threading.Thread(target=self._run, name="oh-install-check", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from ..launcher import signal as editor_signal
        from ..ui.hints import install_hints

        self._hints = install_hints(editor_signal.extension_states(), editor_signal.bundled_version())

    def result(self, timeout: float = 20.0) -> list[str]:
        self._thread.join(timeout)  # extension_states bounds each CLI at 15 s
        return list(self._hints)


async def _hints_later(session, state, note, mode: str) -> None:
    """Why no editor may come (live view lines, plain lines, NDJSON notes): at once when no editor oh can
    see has the extension (naming `oh vscode install`), the rest after the grace period with no editor."""
    import asyncio
    import time

    from ..config import paths
    from ..launcher import signal as editor_signal
    from ..ui.hints import editor_hints, install_hints

    t0 = time.monotonic()

    def show(hints: list[str]) -> None:
        state.hints = [*state.hints, *hints]
        state.version += 1
        for text in hints:
            note(f"no editor yet: {text}", event="editor_hint")

    states = await editor_signal.extension_states_async()
    bundled = editor_signal.bundled_version()
    while not state.synced:  # after the "listening on" line (the view's snapshot); this task ends with the view
        await asyncio.sleep(0.05)
    if not state.editors:
        show(install_hints(states, bundled))
    await asyncio.sleep(max(0.0, editor_signal.AUTO_GRACE - (time.monotonic() - t0)))
    if state.editors:
        return
    cli = next((s["cli"] for s in states), None) or editor_signal.code_binary()
    show(editor_hints(session.workspace, cli, str(paths.sessions_dir()), os.environ))


def _silence_output() -> None:
    """Point stdout/stderr at /dev/null so the interpreter's final flush cannot fail on a dead tty."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass


def _report_failure(io: Streams, session, failure: BaseException, how: str) -> int:
    import traceback

    try:
        if not isinstance(failure, OSError):  # EIO/EPIPE: the terminal or reader is gone, no bug to report
            traceback.print_exception(failure, file=io.err)
        io.note(f"the live view failed ({type(failure).__name__}: {failure}); backend {session.instance_id} was stopped ({how}). "
            + ("" if isinstance(failure, OSError) else "Please report this with the traceback above."))
    except OSError:
        pass
    if isinstance(failure, OSError):
        _silence_output()  # stdout may still hold what could not be written; its flush at exit would fail
    return ERROR


def process_log(session) -> str:
    from ..launcher.process import log_file_for

    return str(log_file_for(session.instance_id))
