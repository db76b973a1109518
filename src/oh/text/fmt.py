"""Formatting shared by `oh status` (text/status.py), the live view (ui/live.py), `oh logs` and `oh run`: one owner."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing costs ~20 ms to import; these names serve annotations (and mypy) only
if TYPE_CHECKING:
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
    given = e.get("editor")
    nested: dict[str, Any] = given if isinstance(given, dict) else {}
    name = e.get("name") or nested.get("name") or "editor"
    version = e.get("version") or nested.get("version") or ""
    folders = ", ".join(str(f) for f in e.get("workspace_folders") or [])
    return (
        f"{name} {version}".strip()
        + (f" ({e['editor_id']})" if e.get("editor_id") else "")
        + (f" — {folders}" if folders else "")
    )


# A run that hit its timeout (`timed_out` of the trace record / monitor event; timeout_of below):
# what the outcome column says, and its exit code as `oh run` reports it (124, as timeout(1)); None: none yet.
TIMED_OUT = {
    "killed": ("timed out, killed", 124),
    "interrupted": ("timed out, interrupted", 124),
    "running": ("timed out, running", None),
}


def timed_out(how: Any) -> tuple[str, int | None] | None:
    return TIMED_OUT.get(how) if isinstance(how, str) else None


# How a `run` that hit its timeout ended, from the suffix both runtimes write (local: runtimes/local/terminal.py,
# VS Code: extension/src/runstate.ts): "timed out after N seconds and was killed" (hard timeout), "... and was
# interrupted (C-c)" (VS Code's hard timeout when C-c was enough), "... and is still running" (soft timeout).
_TIMED_OUT = re.compile(
    r"timed out after [0-9.]+ seconds? and (was killed|was interrupted \(C-c\) and then killed|was "
    r"interrupted|is still running)"
)
_TIMEOUT_ENDS = {
    "was killed": "killed",
    "was interrupted (C-c) and then killed": "killed",
    "was interrupted": "interrupted",
    "is still running": "running",
}


def timeout_of(obs: dict[str, Any]) -> str | None:
    """A run observation that hit its timeout: "killed" / "interrupted" (hard timeout: the command was
    stopped; shown as "timed out" with exit code 124, as timeout(1)) or "running" (soft timeout: it goes
    on). None otherwise (finished, an error, or only "no new output" for a while)."""
    if obs.get("observation") != "run":
        return None
    md = obs.get("extras", {}).get("metadata") or {}
    if md.get("exit_code") != -1 or not isinstance(md.get("suffix"), str):
        return None
    found = _TIMED_OUT.search(md["suffix"])
    return _TIMEOUT_ENDS[found.group(1)] if found else None
