"""The text of a ``job`` ``list`` answer, of a background start (``started``), and of the monitor events a job
start or end becomes.

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


def started(md: dict[str, Any], *, where: bool = False) -> tuple[str, bool]:
    """The first line of the answer to a background ``run`` (its metadata ``md``), and whether the job was
    running already (then nothing new started). ``where``: name the working directory."""
    again = "already running" in (md.get("suffix") or "")
    if again:
        return (
            f"Job {md.get('job_id')} with this command is already running (pid {md.get('pid')}); it was not started "
            "again (force: true starts another).",
            True,
        )
    place = f" in {md.get('working_dir')}" if where else ""
    return f"Started in the background as job {md.get('job_id')} (pid {md.get('pid')}){place}.", False


def output_trailer(job_id: Any, state: Any, code: Any, extras: dict[str, Any]) -> str:
    """The line after a page of a job's output (its ``output`` extras): where the log ends, or where to read on."""
    if extras.get("eof"):
        return f"[end of output: job {job_id} {state}, exit code {code}]"
    return (
        f"[bytes {extras.get('offset')}-{extras.get('next_offset')} of {extras.get('size')} so far; job "
        f"{job_id} {state}. Read on with offset {extras.get('next_offset')}.]"
    )
