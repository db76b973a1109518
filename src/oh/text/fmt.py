"""Formatting shared by `oh status` (text/status.py) and the live view (ui/live.py): one owner."""

from __future__ import annotations

from typing import Any


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"


def editor_label(e: dict[str, Any]) -> str:
    """One line naming an editor, from a monitor event (name/version at the top) or a status entry
    (under ``editor``). Editor-controlled text, NOT escaped here: callers pass it through
    ``text.sanitize.visible`` (the live view per label, `oh status` per line)."""
    nested = e.get("editor") if isinstance(e.get("editor"), dict) else {}
    name = e.get("name") or nested.get("name") or "editor"
    version = e.get("version") or nested.get("version") or ""
    folders = ", ".join(str(f) for f in e.get("workspace_folders") or [])
    return f"{name} {version}".strip() + (f" ({e['editor_id']})" if e.get("editor_id") else "") + (f" — {folders}" if folders else "")


# A run that hit its timeout (`timed_out` of the trace record / monitor event; protocol.events.timeout_of):
# what the outcome column says, and its exit code as `oh run` reports it (124, as timeout(1)); None: none yet.
TIMED_OUT = {"killed": ("timed out, killed", 124), "interrupted": ("timed out, interrupted", 124),
             "running": ("timed out, running", None)}


def timed_out(how: Any) -> tuple[str, int | None] | None:
    return TIMED_OUT.get(how) if isinstance(how, str) else None
