"""The live view of ``oh start``: a ``/v1/monitor`` client with three renderers.

- ``rich`` (stdout is a TTY): backend line, editor state (spinner while waiting), a table of the
  delegated actions as they happen, stats and trace path.
- ``plain`` (not a TTY): one timestamped line per change.
- ``json``: NDJSON, one object per monitor frame plus the launcher's own ``backend_started`` /
  ``backend_stopped`` events.

``LiveState`` is pure (frames in, state + plain lines out) so it is unit-tested without sockets.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

MAX_ROWS = 200


def _clock(iso: str | None = None) -> str:
    if iso:
        try:
            return datetime.fromisoformat(iso).astimezone().strftime("%H:%M:%S")
        except ValueError:
            pass
    return datetime.now().strftime("%H:%M:%S")


def editor_label(e: dict[str, Any]) -> str:
    name = e.get("name") or "editor"
    version = e.get("version") or ""
    folders = ", ".join(e.get("workspace_folders") or [])
    return f"{name} {version}".strip() + (f" ({e['editor_id']})" if e.get("editor_id") else "") + (f" — {folders}" if folders else "")


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return ""
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


@dataclass
class ActionRow:
    action_id: int
    time: str
    agent: str
    kind: str
    summary: str
    outcome: str | None = None  # None while running
    exit_code: int | None = None
    duration_ms: float | None = None


@dataclass
class LiveState:
    backend: dict[str, Any]
    editors: dict[str, dict[str, Any]] = field(default_factory=dict)
    agents: dict[str, str] = field(default_factory=dict)
    actions: "OrderedDict[int, ActionRow]" = field(default_factory=OrderedDict)
    stats: dict[str, int] = field(default_factory=lambda: {"done": 0, "pending": 0, "errors": 0})
    editor_gone_reason: str | None = None
    waiting_since: float = field(default_factory=time.monotonic)
    started_mono: float = field(default_factory=time.monotonic)
    uptime_base: float = 0.0
    stopping: str | None = None

    @property
    def runtime(self) -> str:
        return self.backend.get("runtime", "?")

    @property
    def editor_state(self) -> str:
        if self.editors:
            return "connected"
        if self.runtime != "vscode":
            return "none"
        return "disconnected" if self.editor_gone_reason is not None else "waiting"

    def uptime(self) -> float:
        return self.uptime_base + (time.monotonic() - self.started_mono)

    def agent_name(self, agent_id: str) -> str:
        name = self.agents.get(agent_id)
        return f"{name}" if name and name != agent_id else agent_id

    def apply(self, frame: dict[str, Any]) -> list[str]:
        """Update from one monitor frame; return plain-text lines describing what changed."""
        kind = frame.get("type")
        if kind == "snapshot":
            snap = frame.get("backend") if isinstance(frame.get("backend"), dict) else frame
            self.backend.update({k: v for k, v in snap.items() if k not in ("type", "editors", "agents", "stats")})
            self.uptime_base = float(snap.get("uptime_s") or 0.0)
            self.started_mono = time.monotonic()
            self.editors = {e.get("editor_id", str(i)): e for i, e in enumerate(frame.get("editors") or [])}
            self.agents = {a.get("agent_id"): a.get("name", "") for a in frame.get("agents") or []}
            if isinstance(frame.get("stats"), dict):
                self.stats.update(frame["stats"])
            lines = [f"backend {self.backend.get('instance_id')} listening on {self.backend.get('url') or self._url()} "
                     f"(runtime {self.runtime}, pid {self.backend.get('pid')}, workspace {self.backend.get('workspace')})"]
            if self.editors:
                lines += [f"editor connected: {editor_label(e)}" for e in self.editors.values()]
            elif self.runtime == "vscode":
                lines.append("waiting for VS Code to connect…")
            return lines
        if kind != "event":
            return []
        name = frame.get("event")
        if name == "editor_connected":
            e = dict(frame.get("editor") or {})
            self.editors[e.get("editor_id", f"e{len(self.editors) + 1}")] = e
            self.editor_gone_reason = None
            return [f"editor connected: {editor_label(e)}"]
        if name == "editor_disconnected":
            e = self.editors.pop(frame.get("editor_id"), None)
            self.editor_gone_reason = frame.get("reason") or "disconnected"
            if not self.editors:
                self.waiting_since = time.monotonic()
            return [f"editor disconnected: {editor_label(e) if e else frame.get('editor_id')} ({self.editor_gone_reason})"]
        if name == "agent_connected":
            self.agents[frame.get("agent_id")] = frame.get("name") or ""
            return [f"agent connected: {frame.get('name')} ({frame.get('agent_id')})"]
        if name == "agent_disconnected":
            self.agents.pop(frame.get("agent_id"), None)
            return [f"agent disconnected: {frame.get('name')} ({frame.get('agent_id')})"]
        if name == "action_started":
            row = ActionRow(frame.get("action_id"), _clock(frame.get("time")), self.agent_name(frame.get("agent_id", "")), frame.get("kind", ""), frame.get("summary", ""))
            self.actions[row.action_id] = row
            while len(self.actions) > MAX_ROWS:
                self.actions.popitem(last=False)
            self.stats["pending"] = self.stats.get("pending", 0) + 1
            return [f"{row.agent} {row.kind} {row.summary} …"]
        if name == "action_finished":
            aid = frame.get("action_id")
            row = self.actions.get(aid)
            if row is None:
                row = ActionRow(aid, _clock(frame.get("time")), self.agent_name(frame.get("agent_id", "")), frame.get("kind", ""), frame.get("summary", ""))
                self.actions[aid] = row
            else:
                self.stats["pending"] = max(0, self.stats.get("pending", 0) - 1)
            row.outcome = frame.get("outcome") or "ok"
            row.exit_code = frame.get("exit_code")
            row.duration_ms = frame.get("duration_ms")
            self.stats["done"] = self.stats.get("done", 0) + 1
            if row.outcome != "ok":
                self.stats["errors"] = self.stats.get("errors", 0) + 1
            code = f" exit {row.exit_code}" if row.exit_code is not None else ""
            return [f"{row.agent} {row.kind} {row.summary} → {row.outcome}{code} in {fmt_ms(row.duration_ms)}"]
        if name == "token_rotated":
            return [f"token rotated: {frame.get('closed', 0)} connection(s) closed"]
        if name == "shutting_down":
            self.stopping = frame.get("reason") or "shutting down"
            return [f"backend shutting down: {self.stopping}"]
        return [f"{name}: {json.dumps({k: v for k, v in frame.items() if k not in ('type', 'event', 'time')})}"]

    def _url(self) -> str:
        host = self.backend.get("host", "127.0.0.1")
        return f"ws://{host}:{self.backend.get('port')}"

    # ------------------------------------------------------------------ rich
    def render(self, height: int = 40):
        from rich.console import Group
        from rich.spinner import Spinner
        from rich.table import Table
        from rich.text import Text

        from ..commands._common import fmt_duration

        b = self.backend
        head = Text.assemble(
            ("oh ", "bold"), ("backend ", "dim"), (str(b.get("instance_id", "?")), "bold cyan"),
            ("  runtime ", "dim"), (self.runtime, "bold"), ("  ", ""), (b.get("url") or self._url(), "green"),
            ("  pid ", "dim"), (str(b.get("pid", "?")), ""), ("  up ", "dim"), (fmt_duration(self.uptime()), ""),
        )
        ws = Text.assemble(("workspace ", "dim"), (str(b.get("workspace", "")), ""))
        state = self.editor_state
        if state == "connected":
            editor = Text.assemble(("● ", "green"), ("editor connected: ", "green"), (" · ".join(editor_label(e) for e in self.editors.values()), ""))
        elif state == "waiting":
            waited = fmt_duration(time.monotonic() - self.waiting_since)
            editor = Spinner("dots", text=Text(f"waiting for VS Code to connect… ({waited})", style="yellow"), style="yellow")
        elif state == "disconnected":
            waited = fmt_duration(time.monotonic() - self.waiting_since)
            editor = Spinner("dots", text=Text(f"editor disconnected ({self.editor_gone_reason}); waiting for it to reconnect… ({waited})", style="red"), style="red")
        else:
            editor = Text("runtime local: actions run directly on this machine, no sandbox", style="yellow")
        table = Table(expand=False, box=None, header_style="bold", pad_edge=False)
        for col, kw in (("time", {}), ("agent", {}), ("kind", {}), ("summary", {"overflow": "ellipsis", "no_wrap": True, "max_width": 60}),
                        ("outcome", {}), ("exit", {"justify": "right"}), ("duration", {"justify": "right"})):
            table.add_column(col, **kw)
        rows = list(self.actions.values())[-max(3, height - 10):]
        for r in rows:
            if r.outcome is None:
                outcome = Text("running…", style="yellow")
            elif r.outcome == "ok" and (r.exit_code in (None, 0)):
                outcome = Text("ok", style="green")
            else:
                outcome = Text(r.outcome, style="red" if r.outcome != "ok" else "yellow")
            table.add_row(r.time, r.agent, r.kind, r.summary, outcome, "" if r.exit_code is None else str(r.exit_code), fmt_ms(r.duration_ms))
        if not rows:
            table.add_row("", "", "", Text("no actions yet", style="dim"), "", "", "")
        st = self.stats
        foot = Text.assemble(
            (f"{st.get('done', 0)} done · {st.get('pending', 0)} pending · {st.get('errors', 0)} errors", "dim"),
            (f"   trace {b.get('trace')}" if b.get("trace") else "", "dim"),
            ("   Ctrl-C stops the backend" if not self.stopping else f"   stopping: {self.stopping}", "dim"),
        )
        return Group(head, ws, editor, Text(""), table, Text(""), foot)


# ---------------------------------------------------------------------- the monitor loop
async def monitor(session_loader: Callable[[], Any], on_frame: Callable[[dict[str, Any]], None], stop: asyncio.Event) -> str:
    """Follow ``/v1/monitor`` until ``stop`` is set or the backend goes away. Reconnects after a
    token rotation (close 4001) by re-reading the session file. Returns why it ended."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake

    retries = 0
    while not stop.is_set():
        session = session_loader()
        if session is None:
            return "session ended"
        try:
            conn = await connect(session.url + "/v1/monitor", additional_headers={"Authorization": f"Bearer {session.token}"},
                                 max_size=None, compression=None, open_timeout=5)
        except (InvalidHandshake, OSError, asyncio.TimeoutError) as exc:
            retries += 1
            if retries > 20:
                return f"cannot connect to the monitor: {exc}"
            await asyncio.sleep(0.25)
            continue
        retries = 0
        stopper = asyncio.create_task(stop.wait())
        try:
            while True:
                recv = asyncio.ensure_future(conn.recv())
                done, _ = await asyncio.wait({recv, stopper}, return_when=asyncio.FIRST_COMPLETED)
                if recv not in done:
                    recv.cancel()
                    await conn.close()
                    return "stopped"
                try:
                    frame = json.loads(recv.result())
                except ConnectionClosed:
                    raise
                except ValueError:
                    continue
                if isinstance(frame, dict):
                    on_frame(frame)
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd else None
            if code == 4001:  # token rotated: the session file has the new one
                await asyncio.sleep(0.05)
                continue
            return "backend shut down" if code == 1001 else f"connection lost ({code})"
        finally:
            stopper.cancel()
    return "stopped"
