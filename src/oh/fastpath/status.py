"""``oh status`` / ``oh status --json`` without typer, psutil or the session dataclass.

Same output as ``oh.commands.status`` (tests/cli/test_fastpath.py compares the two). The fast path
answers only the ordinary case: every session file alive and readable, every backend answering
``GET /v1/status``, no field it does not know. Anything else (none running, a stale file to clean,
an unreachable backend, a newer session format) returns None and the full command runs.
"""

from __future__ import annotations

from . import discover, fastjson, ws
from .exits import NOT_RUNNING, OK
from .streams import Streams

# The session file's public fields, in the order of oh.sessions.Session (token excluded).
PUBLIC = (
    "instance_id",
    "pid",
    "start_time",
    "host",
    "port",
    "runtime",
    "workspace",
    "protocol",
    "oh_version",
    "started_at",
    "trace",
    "editor_timeout",
    "url",
)
DEFAULTS = {"protocol": 1, "oh_version": "", "started_at": "", "trace": "", "editor_timeout": 30.0, "url": ""}
SECRET = ("token", "editor_token", "decider_token")  # never shown
OPTIONAL = (
    "allowed_roots",
    "review_timeout",
    "approval_timeout",
    "python",
    "socket",
)  # shown when the backend writes them


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
    if found is None or discover.died_notes():
        return None  # a backend died since the last look: the full command says so (oh.sessions.take_died)
    rows = []
    for data in found:
        row = _row(data)
        if row is None:
            return None
        rows.append(row)
    return rows


def status(io: Streams, json_: bool) -> int | None:
    rows = collect()
    if rows is None:
        return None
    if json_:
        io.json({"sessions": rows})
    else:
        io.print(render_text(rows) if rows else NONE_RUNNING)
    return OK if rows else NOT_RUNNING


def render_text(rows: list[dict]) -> str:
    # Only when text is printed: ``text`` loads ``re`` (the escaping of backend/editor/agent text).
    from ..protocol import runtimenames  # stdlib only
    from ..text.status import render_text as render

    return render(rows, uses_editor=runtimenames.uses_editor)
