"""``oh status [--json] [--watch]``: every running backend, after cleaning stale session files."""

from __future__ import annotations

import sys
import time
from typing import Any

import typer

from ._common import NOT_RUNNING, OK, fmt_duration, print_json, print_ndjson

WATCH_INTERVAL = 1.0
EPILOG = "Exit codes: 0 at least one backend is running · 3 none is running."


def collect() -> list[dict[str, Any]]:
    """One dict per live session: the session file's public fields + GET /v1/status. No token."""
    from ..launcher import sessions

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
            d.update(reachable=False, error=str(exc), editors=[], agents=[], stats=None, uptime_s=max(0.0, time.time() - s.start_time))
        else:
            live.pop("token", None)
            d.update(live)
            d["reachable"] = True
        out.append(d)
    return out


def _editor_line(e: dict[str, Any]) -> str:
    name = e.get("name") or (e.get("editor") or {}).get("name") or "editor"
    version = e.get("version") or (e.get("editor") or {}).get("version") or ""
    folders = ", ".join(e.get("workspace_folders") or [])
    return f"{name} {version}".strip() + (f" ({e.get('editor_id')})" if e.get("editor_id") else "") + (f" — {folders}" if folders else "")


def render_text(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no backend is running. Start one with `oh start` (or `oh start --detach`)."
    lines = []
    for d in rows:
        mark = "●" if d.get("reachable") else "○"
        lines.append(f"{mark} {d['instance_id']}  {d['runtime']}  {d['url']}  pid {d['pid']}  up {fmt_duration(d.get('uptime_s'))}")
        lines.append(f"  workspace  {d['workspace']}")
        if not d.get("reachable"):
            lines.append(f"  problem    {d.get('error')}")
        editors = d.get("editors") or []
        if d["runtime"] == "vscode" or editors:
            lines.append("  editors    " + ("none connected (waiting for VS Code)" if not editors else _editor_line(editors[0])))
            for e in editors[1:]:
                lines.append("             " + _editor_line(e))
        agents = d.get("agents") or []
        lines.append(f"  agents     {len(agents)}" + (f" ({', '.join(a.get('name', '?') for a in agents)})" if agents else ""))
        st = d.get("stats") or {}
        if st:
            lines.append(f"  actions    {st.get('done', 0)} done, {st.get('pending', 0)} pending, {st.get('errors', 0)} error{'' if st.get('errors', 0) == 1 else 's'}")
        if d.get("trace"):
            lines.append(f"  trace      {d['trace']}")
        if d.get("trace_warning"):  # read-only or full trace directory: the backend keeps serving
            lines.append(f"  warning    {d['trace_warning']}")
        lines.append(f"  token      fingerprint {d['token_fingerprint']}")
    return "\n".join(lines)


def status(
    json_: bool = typer.Option(False, "--json", help='Machine-readable: {"sessions": [...]} (never the token).'),
    watch: bool = typer.Option(False, "--watch", "-w", help="Refresh until Ctrl-C (NDJSON with --json)."),
) -> None:
    """Every running backend: id, pid, port, runtime, workspace, uptime, editors, agents, actions.

    Only boolean flags here on purpose: any other parameter type makes typer import pydantic
    (~100 ms), and `oh status` must start fast. --watch refreshes every second.
    """
    interval = WATCH_INTERVAL
    if not watch:
        rows = collect()
        if json_:
            print_json({"sessions": rows})
        else:
            typer.echo(render_text(rows))
        raise typer.Exit(OK if rows else NOT_RUNNING)
    tty = sys.stdout.isatty() and not json_
    rows: list = []
    try:
        if tty:
            from rich.console import Console
            from rich.live import Live
            from rich.text import Text

            with Live(Text(""), console=Console(), auto_refresh=False, transient=False) as live:
                while True:
                    rows = collect()
                    live.update(Text(render_text(rows) + f"\n\n(refreshing every {interval:g} s — Ctrl-C to quit)"), refresh=True)
                    time.sleep(interval)
        while True:
            rows = collect()
            if json_:
                print_ndjson({"time": time.time(), "sessions": rows})
            else:
                typer.echo(render_text(rows) + "\n")
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    raise typer.Exit(OK if rows else NOT_RUNNING)
