"""The text of a ``job`` ``list`` answer, and of the monitor events a job start or end becomes.

Pure: the vscode runtime merges what the editor listed with the jobs it remembers of editors that
went away (``merge``), and lists those alone when no editor is connected (``listing``); the backend
turns a job record into a monitor event's fields (``event_fields``).
"""

from __future__ import annotations

from typing import Any

EMPTY = "No jobs."
SUMMARY_LIMIT = 300


def line(record: dict[str, Any]) -> str:
    """One job of a listing (a background job the backend remembers)."""
    return f"{record['job_id']}  {record['state']}  background  {record['command'][:120]}"


def listing(records: list[dict[str, Any]]) -> str:
    """The listing of ``records`` alone ("No jobs." for none)."""
    return "\n".join(line(r) for r in records) if records else EMPTY


def merge(content: str | None, records: list[dict[str, Any]]) -> str:
    """An editor's listing with ``records`` appended (its "No jobs." dropped once something is listed)."""
    text = content or ""
    for r in records:
        text = (text.replace(EMPTY, "").rstrip("\n") + "\n" + line(r)).lstrip("\n")
    return text


def event_fields(name: str, job: dict[str, Any]) -> dict[str, Any]:
    """The fields of a ``job_started`` / ``job_finished`` monitor event (and trace record) for ``job``."""
    # As much as an action's summary (protocol.events.COMMAND_SUMMARY_LIMIT): a wide terminal shows it whole.
    command = " ".join(str(job.get("command", "")).split())
    summary = command if len(command) <= SUMMARY_LIMIT else command[: SUMMARY_LIMIT - 1] + "…"
    fields = {
        "job_id": job.get("job_id"),
        "agent_id": job.get("agent_id"),
        "shell": job.get("shell"),
        "summary": summary,
    }
    if name == "job_finished":
        dur = job.get("duration_s")
        fields.update(
            state=job.get("state"),
            exit_code=job.get("exit_code"),
            duration_ms=round(dur * 1000, 1) if isinstance(dur, (int, float)) else None,
        )
    else:
        fields.update(cwd=job.get("cwd"))
    return fields
