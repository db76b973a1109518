"""``oh status [--json] [--watch]``: every running backend, after cleaning stale session files."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, TextIO

import typer

from ._common import NOT_RUNNING, OK
from ._io import Streams

WATCH_INTERVAL = 1.0
EPILOG = "Exit codes: 0 at least one backend is running · 3 none is running."


def reap_dead() -> list[dict[str, Any]]:
    """Backends that died without removing their session file (a clean stop removes its own): listing
    replaces such a file by a note (oh.sessions), whichever command listed first (often `oh run`); here
    each note is taken once, so the user is told instead of the backend vanishing."""
    from .. import sessions
    from ..launcher.process import log_file_for

    sessions.list_sessions()  # notes for the stale files still there
    return [
        {
            "instance_id": d["instance_id"],
            "pid": d["pid"],
            "runtime": d["runtime"],
            "workspace": d["workspace"],
            "log": str(log_file_for(d["instance_id"])),
        }
        for d in sessions.take_died()
    ]


def tell_dead(dead: list[dict[str, Any]], err: TextIO | None = None) -> None:
    from ..text.sanitize import visible

    for d in dead:
        print(
            visible(
                f"oh: backend {d['instance_id']} (pid {d['pid']}, {d['runtime']}, workspace {d['workspace']}) died "
                f"without stopping cleanly; its session was removed. Its log: {d['log']}"
            ),
            file=err or sys.stderr,
        )


def collect() -> list[dict[str, Any]]:
    """One dict per live session: the session file's public fields + GET /v1/status. No token."""
    from .. import sessions

    found = sessions.list_sessions()
    if not found:
        return []
    from ..config import secrets
    from ..launcher.control import BackendUnreachable, status

    # The token store is deliberately not read here: keyring costs ~100+ ms to load and may ask
    # to unlock a desktop keychain just to show status. Compare with `oh token show` instead.
    out = []
    for s in found:
        d = s.public()
        d["token_fingerprint"] = secrets.fingerprint(s.token)
        try:
            live = status(s)
        except BackendUnreachable as exc:
            d.update(
                reachable=False,
                error=str(exc),
                editors=[],
                agents=[],
                stats=None,
                uptime_s=max(0.0, time.time() - s.start_time),
            )
        else:
            live.pop("token", None)
            d.update(live)
            d["reachable"] = True
        out.append(d)
    return out


def render_text(rows: list[dict[str, Any]], dead: list[dict[str, Any]] | None = None) -> str:
    from ..protocol import runtimenames
    from ..text.status import render_text as render  # one renderer with the fast path

    return render(rows, dead, uses_editor=runtimenames.uses_editor)


def status(
    json_: bool = typer.Option(
        False,
        "--json",
        help=(
            'Machine-readable: {"sessions": [...], "died": [...] (backends found dead, only if any)} (never the token).'
        ),
    ),
    watch: bool = typer.Option(False, "--watch", "-w", help="Refresh until Ctrl-C (NDJSON with --json)."),
) -> None:
    """Every running backend: id, pid, port, runtime, workspace, uptime, editors, agents, actions.

    Also says once when a backend died since the last look (and where its log is). --watch refreshes every second.
    """
    # Only boolean flags here on purpose: any other parameter type makes typer import pydantic (~100 ms),
    # and `oh status` must start fast.
    raise typer.Exit(run_status(Streams.system(), json_=json_, watch=watch))


def run_status(
    io: Streams,
    *,
    json_: bool = False,
    watch: bool = False,
    interval: float = WATCH_INTERVAL,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """``oh status``'s behaviour. --watch ends on KeyboardInterrupt (Ctrl-C), raised here by ``sleep``
    as by a test's ``sleep``; the exit code says whether the last round found a backend."""
    if not watch:
        dead = reap_dead()
        tell_dead(dead, io.err)
        rows = collect()
        if json_:
            io.json({"sessions": rows, **({"died": dead} if dead else {})})  # "died": only when one did
        else:
            io.print(render_text(rows))
        return OK if rows else NOT_RUNNING
    rows = []
    try:
        if io.tty and not json_:
            _watch_rich(io, interval, sleep, rows)
        while True:
            dead = reap_dead()
            rows = collect()
            if json_:
                io.ndjson({"time": time.time(), "sessions": rows, **({"died": dead} if dead else {})})
            else:
                tell_dead(dead, io.err)
                io.print(render_text(rows) + "\n")
            sleep(interval)
    except KeyboardInterrupt:
        pass
    return OK if rows else NOT_RUNNING


def _watch_rich(io: Streams, interval: float, sleep: Callable[[float], None], rows: list) -> None:
    """--watch on a terminal: one frame redrawn in place until Ctrl-C (KeyboardInterrupt); ``rows``
    keeps the last round's sessions for the exit code."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    with Live(Text(""), console=Console(file=io.out), auto_refresh=False, transient=False) as live:
        died: list = []  # kept on screen: a line that vanished after a second would be missed
        while True:
            died += reap_dead()
            rows[:] = collect()
            live.update(
                Text(render_text(rows, died) + f"\n\n(refreshing every {interval:g} s — Ctrl-C to quit)"), refresh=True
            )
            sleep(interval)
