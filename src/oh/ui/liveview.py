"""The live view's controller: a ``/v1/monitor`` client drawing ``LiveState`` (``ui.live``) as a rich
view, plain lines or NDJSON, with the helpers that open VS Code and explain a missing editor, and the
two policies for how the view ends:

- ``StopBackend`` (the foreground ``oh start``): the backend is tied to the terminal. Whatever ends the
  view (Ctrl-C, SIGTERM, SIGHUP, a failed write, any exception) stops the backend before anything else
  is printed.
- ``LeaveBackend`` (``oh watch``): the view is a guest. Ctrl-C, q, SIGTERM, SIGHUP or a failed view
  leave it and the backend keeps running; the view says so.

Both end the same way when the backend goes away by itself (``LiveView.ended_on_its_own``).
``commands/start.py`` starts the backend, then calls ``foreground``; ``commands/watch.py`` picks a running
one, then calls ``watch``.
"""

from __future__ import annotations

import os

from ..fastpath.exits import ERROR
from ..fastpath.streams import Streams, fit
from ..protocol import runtimenames

TYPE_CHECKING = False  # annotations only: asyncio is imported when the view runs
if TYPE_CHECKING:
    import asyncio


def foreground(io: Streams, session, open_mode: str, mode: str, warnings: list[tuple[str, str]]) -> int:
    """Run the live view until Ctrl-C / SIGTERM / SIGHUP or the backend ends.

    Whatever ends the view (a signal, the terminal going away so writes fail with EIO/EPIPE, a bug
    in a renderer), the backend is stopped *before* anything else is printed: output can fail again.
    """
    view = LiveView(io, session, open_mode, mode)
    if mode == "json":
        view.announce(warnings)
    return follow(view)


def watch(io: Streams, session, mode: str) -> int:
    """``oh watch``: the same view attached to a backend that already runs; leaving it leaves the backend
    running. It opens no editor (the backend's starter decided that) but says why none may come."""
    return follow(LiveView(io, session, "never", mode, ends=LeaveBackend()))


def follow(view: "LiveView") -> int:
    """Run ``view`` until the user ends it (its policy decides what that means for the backend) or the
    backend ends by itself. The exit code."""
    import asyncio

    reason, failure = "stopped", None
    try:
        reason = asyncio.run(view.run())
    except KeyboardInterrupt:
        reason = "stopped"
    except BaseException as exc:  # noqa: BLE001 - whatever broke the view, its policy must still apply
        failure = exc
    if reason == "stopped" or failure is not None:
        return view.ends.user_ended(view, failure)
    return view.ended_on_its_own(reason)


class StopBackend:
    """The foreground ``oh start``: ending the view stops the backend (first, then it says so)."""

    command = "oh start"
    keys = "Ctrl-C stops the backend"
    leave_key = False  # no q: a stray key must not stop the backend

    def user_ended(self, view: "LiveView", failure: BaseException | None) -> int:
        if isinstance(failure, OSError) and view.stop_requested:
            failure = None  # the terminal closed: SIGHUP asked to stop, then the last redraw met EIO (exit 0)
        return view.stop_backend(failure)


class LeaveBackend:
    """``oh watch``: ending the view leaves the backend running; the view says so (and how to stop it)."""

    command = "oh watch"
    keys = "q or Ctrl-C leaves the view (the backend keeps running)"
    leave_key = True

    def user_ended(self, view: "LiveView", failure: BaseException | None) -> int:
        import signal as os_signal

        for sig in (os_signal.SIGINT, os_signal.SIGTERM, os_signal.SIGHUP):  # leaving already: no traceback
            os_signal.signal(sig, os_signal.SIG_IGN)
        iid = view.session.instance_id
        if isinstance(failure, OSError) and view.stop_requested:
            failure = None  # the terminal closed: SIGHUP asked to leave, then the last redraw met EIO
        try:
            if failure is not None:
                return _report_failure(view.io, view.session, failure, None)
            said = f"left the view; backend {iid} keeps running — `oh stop {iid}` to stop it"
            if view.mode == "json":
                view.io.ndjson(
                    {"type": "event", "event": "view_left", "instance_id": iid, "message": f"oh watch: {said}"}
                )
            else:  # on a terminal, wrapped between words (80 columns cut the instance id in two)
                stream = view.io.out if view.mode == "plain" else view.io.err
                stream.write(fit(stream, said, "oh watch: "))
                stream.flush()
        except OSError:
            silence_output()  # the terminal is gone (SIGHUP): nothing to tell, nobody to tell
        return 0


class LiveView:
    """A /v1/monitor client drawing ``LiveState`` as a rich view, plain lines or NDJSON (``mode``), with
    the helpers that open VS Code and explain a missing editor; ``ends``: what ending it does to the
    backend (``StopBackend``, the foreground `oh start`, by default)."""

    def __init__(
        self, io: Streams, session, open_mode: str, mode: str, ends: "StopBackend | LeaveBackend | None" = None
    ) -> None:
        from .live import LiveState

        self.io, self.session, self.open_mode, self.mode = io, session, open_mode, mode
        self.ends = ends if ends is not None else StopBackend()
        self.state = LiveState(backend=session.public(), keys=self.ends.keys)
        self._stop: asyncio.Event | None = (
            None  # the asyncio.Event that ends the monitor (set by signals and the q key)
        )
        self._announce: list[tuple[str, str]] | None = None  # NDJSON: start-up warnings until backend_started is out

    @property
    def stop_requested(self) -> bool:
        """A signal or the q key asked the view to end (a write that fails after that is no failure of it)."""
        return self._stop is not None and self._stop.is_set()

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
            if frame.get("type") == "snapshot":
                self._announced()  # subscribed now: every later event is in this stream
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
        """NDJSON mode: the backend and the start-up warnings, as the first events -- written once this
        view's monitor has subscribed (its snapshot came), so that a consumer that acts on
        ``backend_started`` (say, runs a job) sees every event that follows. Written before the monitor
        subscribed, an action's events could fall between the two and be missing from the stream
        (a `job_started` was)."""
        self._announce = list(warnings)

    def _announced(self) -> None:
        if self._announce is None:
            return
        warnings, self._announce = self._announce, None
        self.io.ndjson(
            {"type": "event", "event": "backend_started", **{k: v for k, v in self.session.public().items()}}
        )
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

        stop = self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._stop_on_signals(loop, stop)
        helpers = self._start_helpers()
        live = None
        if self.mode == "rich":
            live = _start_rich(self.state, self.io)
            helpers.append(asyncio.create_task(_refresh(live, self.state)))
            self._redraw_on_resize(loop)
        watcher = asyncio.create_task(monitor(self.load_session, self.on_frame, stop))
        keys = _keys(self, loop) if self.mode in ("rich", "plain") else None
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

        if not runtimenames.uses_editor(self.session.runtime):
            return []
        return [
            asyncio.create_task(_open_later(self.session, self.open_mode, self.state, self.note)),
            asyncio.create_task(_hints_later(self.session, self.state, self.note, self.mode)),
        ]

    # ------------------------------------------------------------ how the view ended
    def stop_backend(self, failure: BaseException | None) -> int:
        """Ctrl-C, a signal or a failed view: stop the backend first, then say so (if output still works)."""
        import signal as os_signal

        from ..launcher.process import stop_backend

        for sig in (
            os_signal.SIGINT,
            os_signal.SIGTERM,
            os_signal.SIGHUP,
        ):  # a second Ctrl-C must not leave it half-stopped
            os_signal.signal(sig, os_signal.SIG_IGN)
        how = stop_backend(self.session)
        if failure is not None:
            return _report_failure(self.io, self.session, failure, how)
        try:
            if self.mode == "json":
                self._announced()  # the view ended before its monitor subscribed: still first
                self.io.ndjson(
                    {"type": "event", "event": "backend_stopped", "instance_id": self.session.instance_id, "how": how}
                )
            else:
                print(
                    f"backend {self.session.instance_id} stopped ({how})",
                    file=self.io.out if self.mode == "plain" else self.io.err,
                    flush=True,
                )
        except OSError:
            silence_output()  # the terminal is gone (SIGHUP): nothing to tell, nobody to tell
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
                self._announced()
                self.io.ndjson(
                    {
                        "type": "event",
                        "event": "backend_stopped",
                        "instance_id": session.instance_id,
                        "how": "external",
                        "reason": reason,
                    }
                )
            if self.mode == "plain":
                self.line(f"backend {session.instance_id} ended: {state.stopping or reason}")
            if not clean or self.mode == "rich":
                self.io.note(
                    f"backend {session.instance_id} ended: {state.stopping or reason}"
                    + ("" if clean else f"; see its log: {process_log(session)}")
                )
        except OSError:
            silence_output()
        return 0 if clean else ERROR


def _keys(view: LiveView, loop):
    """Single keys in the live view, with a terminal on stdin (also a plain view over SSH): consent (issue
    19) when the backend asks -- y allows the oldest waiting action, n rejects it, a allows it and adds its
    "always" rule (saved to config consent_allow) -- and q leaves the view when its policy has a leave key
    (`oh watch`). The terminal is put in cbreak mode (Ctrl-C still signals) and restored by the returned
    callable. None when there is nothing to answer or stdin is no terminal.

    Answers go with the session file's decider credential, exactly as `oh approve` sends them: this view
    has the rights of that command from this user, no more."""
    import sys
    import termios
    import tty

    consent, leave = bool(view.session.approval_timeout), view.ends.leave_key
    if not consent and not leave:
        return None
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd):
            return None
        saved = termios.tcgetattr(fd)
        tty.setcbreak(fd)
    except (OSError, ValueError, termios.error):
        return None
    answer = _answerer(view)

    def readable() -> None:
        try:
            data = os.read(fd, 64).decode("utf-8", "replace").lower()
        except OSError:
            return
        for ch in data:
            if leave and ch == "q" and view._stop is not None:
                view._stop.set()  # the same as a signal: the monitor ends, the policy leaves
                return
            if consent and ch in "yna":
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


def _answerer(view: LiveView):
    """``answer(key)``: y / n / a for the oldest waiting action, one answer in flight at a time."""
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
            frame["reason"] = f"rejected in the live view of {view.ends.command}"

        def send() -> dict:
            from ..launcher import consent as _consent

            result = _consent.request(view.session, frame)
            for r in result.get("results") or []:
                if r.get("rules"):
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

    return answer


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
            return Text(
                (
                    f"oh: the live view cannot draw ({type(exc).__name__}); the backend keeps running. `oh logs "
                    "-f` shows actions."
                ),
                style="red",
            )

    live = Live(
        get_renderable=renderable,
        console=console,
        auto_refresh=False,
        transient=False,
        redirect_stdout=False,
        redirect_stderr=False,
    )
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
        note(
            "no VS Code CLI (code, cursor, windsurf, codium, code-server) on PATH: open the workspace in the "
            "editor yourself (the extension connects by itself)."
        )
    elif cmds:
        note(f"asked the editor to open the workspace (`{os.path.basename(cmds[0][0])}`)")
    elif cmds == [] and open_mode == "always":
        note(
            "code-server cannot be asked to open a folder from outside its own terminal: open the workspace "
            "in its browser tab (the extension connects by itself)."
        )


async def _hints_later(session, state, note, mode: str) -> None:
    """Why no editor may come (live view lines, plain lines, NDJSON notes): at once when no editor oh can
    see has the extension (naming `oh vscode install`), the rest after the grace period with no editor."""
    import asyncio
    import time

    from ..config import paths
    from ..launcher import signal as editor_signal
    from .hints import editor_hints, install_hints

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


def silence_output() -> None:
    """Point stdout/stderr at /dev/null so the interpreter's final flush cannot fail on a dead tty."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass


def _report_failure(io: Streams, session, failure: BaseException, how: str | None) -> int:
    """The view failed: say so (a traceback when it is a bug); ``how`` the backend was stopped, None when it
    was left running (`oh watch`)."""
    import traceback

    fate = f"was stopped ({how})" if how is not None else f"keeps running (`oh stop {session.instance_id}` stops it)"
    try:
        if not isinstance(failure, OSError):  # EIO/EPIPE: the terminal or reader is gone, no bug to report
            traceback.print_exception(failure, file=io.err)
        io.note(
            f"the live view failed ({type(failure).__name__}: {failure}); backend {session.instance_id} {fate}. "
            + ("" if isinstance(failure, OSError) else "Please report this with the traceback above.")
        )
    except OSError:
        pass
    if isinstance(failure, OSError):
        silence_output()  # stdout may still hold what could not be written; its flush at exit would fail
    return ERROR


def process_log(session) -> str:
    from ..launcher.process import log_file_for

    return str(log_file_for(session.instance_id))
