"""``oh status`` / ``oh status --json`` without typer, psutil or the session dataclass.

Same output as ``oh.commands.status`` (tests/cli/test_fastpath.py compares the two). The fast path
answers only the ordinary case: every session file alive and readable, every backend answering
``GET /v1/status``, no field it does not know. Anything else (none running, a stale file to clean,
an unreachable backend, a newer session format) returns None and the full command runs.
"""

from __future__ import annotations

import sys

from . import discover, fastjson, ws
from .exits import NOT_RUNNING, OK

# The session file's public fields, in the order of oh.sessions.Session (token excluded).
PUBLIC = ("instance_id", "pid", "start_time", "host", "port", "runtime", "workspace", "protocol", "oh_version",
          "started_at", "trace", "editor_timeout", "url")
DEFAULTS = {"protocol": 1, "oh_version": "", "started_at": "", "trace": "", "editor_timeout": 30.0, "url": ""}
SECRET = ("token", "editor_token")  # never shown
OPTIONAL = ("allowed_roots",)  # shown when the backend writes it


def _fingerprint(token: str) -> str:
    """``oh.config.secrets.fingerprint`` (first 8 hex of sha256) without loading OpenSSL's hashlib."""
    try:
        from _sha256 import sha256
    except ImportError:  # pragma: no cover
        from hashlib import sha256
    return sha256(token.encode("utf-8")).hexdigest()[:8]


def _row(data: dict) -> dict | None:
    if any(k not in PUBLIC and k not in SECRET and k not in OPTIONAL for k in data):
        return None  # a newer session format: let the full command (the format's owner) show it
    row = {k: data.get(k, DEFAULTS.get(k)) for k in PUBLIC}
    row.update({k: data[k] for k in OPTIONAL if k in data})
    if not row["url"]:
        host = f"[{row['host']}]" if ":" in row["host"] else row["host"]
        row["url"] = f"ws://{host}:{row['port']}"
    row["token_fingerprint"] = _fingerprint(data["token"])
    try:
        code, body = ws.http_get(data["host"], int(data["port"]), "/v1/status", data["token"])
        live = fastjson.loads(body) if code == 200 else None
    except (ws.WsError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(live, dict):
        return None  # 401 mid-rotation, an error...: the full command words it
    live.pop("token", None)
    row.update(live)
    row["reachable"] = True
    return row


NONE_RUNNING = "no backend is running. Start one with `oh start` (or `oh start --detach`)."


def collect() -> list[dict] | None:
    found = discover.live_sessions()
    if found is None:
        return None
    rows = []
    for data in found:
        row = _row(data)
        if row is None:
            return None
        rows.append(row)
    return rows


def status(json_: bool) -> int | None:
    rows = collect()
    if rows is None:
        return None
    if json_:
        import json

        sys.stdout.write(json.dumps({"sessions": rows}, indent=2, default=str) + "\n")
    else:
        sys.stdout.write((render_text(rows) if rows else NONE_RUNNING) + "\n")
    sys.stdout.flush()
    return OK if rows else NOT_RUNNING


def _duration(seconds) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def _editor_line(e: dict) -> str:
    name = e.get("name") or (e.get("editor") or {}).get("name") or "editor"
    version = e.get("version") or (e.get("editor") or {}).get("version") or ""
    folders = ", ".join(e.get("workspace_folders") or [])
    return f"{name} {version}".strip() + (f" ({e.get('editor_id')})" if e.get("editor_id") else "") + (f" — {folders}" if folders else "")


def render_text(rows: list[dict]) -> str:
    """Mirror of ``oh.commands.status.render_text`` for reachable backends."""
    lines = []
    for d in rows:
        lines.append(f"● {d['instance_id']}  {d['runtime']}  {d['url']}  pid {d['pid']}  up {_duration(d.get('uptime_s'))}")
        lines.append(f"  workspace  {d['workspace']}")
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
        if d.get("trace_warning"):
            lines.append(f"  warning    {d['trace_warning']}")
        lines.append(f"  token      fingerprint {d['token_fingerprint']}")
    return "\n".join(lines)
