"""What a monitor that subscribes late needs to see (docs/protocol.md §5): the jobs running now and
finished lately, and the last actions' events.

Why the actions: `oh start` subscribes its live view only after the session file exists, and an agent
that reads the same file can act before that; a view reconnecting after a token rotation misses what
ran meanwhile. Replaying the newest events from the snapshot shows them instead of losing them.

And the agent shells' notes (the clean shell a slow rc gave, a missing sandbox): each is said once per
backend, so a view that was not there when it was said would never show it; they hold for the session.

Noting an event costs a deque append (no encoding, no clock formatting): the frames are built only
when a monitor subscribes.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from datetime import datetime, timezone
from typing import Any

RECENT_EVENTS = 100  # action_started/action_finished events kept: about the last 50 actions
FINISHED_JOBS = 20  # finished jobs kept for the snapshot (running ones are always listed)
SHELL_NOTES = 5  # the newest distinct shell notes kept for the snapshot
NOTE_CHARS = 2000  # a note in the snapshot is cut here (a repository's name in one is the agent's text)
# agent_connected too: it names the agent of the actions after it, also once that agent has left.
# Change sets too (§3.15.1): a view that joins late still shows what awaits the user's keep or revert.
_REPLAYED = frozenset(("action_started", "action_finished", "agent_connected", "changeset_opened", "changeset_closed"))


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat()


class MonitorHistory:
    def __init__(self, recent: int = RECENT_EVENTS, finished_jobs: int = FINISHED_JOBS) -> None:
        self._events: deque[tuple[str, float, dict[str, Any]]] = deque(maxlen=recent)
        self._jobs: "OrderedDict[str, dict[str, Any]]" = OrderedDict()
        self._finished_jobs = finished_jobs
        self._notes: "OrderedDict[str, None]" = OrderedDict()  # distinct notes, the newest said last

    def note(self, name: str, fields: dict[str, Any]) -> None:
        """Remember an event just emitted (``fields`` as the event carries them; not copied, not changed)."""
        if name in _REPLAYED:
            self._events.append((name, time.time(), fields))
        elif name in ("job_started", "job_finished"):
            self._note_job(name, fields)
        elif name == "shell_note" and isinstance(fields.get("note"), str):
            note = fields["note"][:NOTE_CHARS]
            self._notes.pop(note, None)  # said again: it moves to the newest place, never listed twice
            self._notes[note] = None
            while len(self._notes) > SHELL_NOTES:
                self._notes.popitem(last=False)

    def _note_job(self, name: str, fields: dict[str, Any]) -> None:
        job_id = fields.get("job_id")
        if not isinstance(job_id, str):
            return
        record = self._jobs.pop(job_id, None) or {
            "job_id": job_id,
            "started": _iso(time.time()) if name == "job_started" else None,
        }
        record.update({k: v for k, v in fields.items() if v is not None or k not in record})
        record["state"] = (fields.get("state") or "FINISHED") if name == "job_finished" else "RUNNING"
        self._jobs[job_id] = record  # newest change last
        finished = [k for k, r in self._jobs.items() if r["state"] != "RUNNING"]
        for old in finished[: max(0, len(finished) - self._finished_jobs)]:
            del self._jobs[old]

    def jobs(self) -> list[dict[str, Any]]:
        """Running jobs and the newest finished ones, oldest change first (``job_id, agent_id, shell,
        summary, cwd, state, exit_code, duration_ms, started``)."""
        return [dict(r) for r in self._jobs.values()]

    def shell_notes(self) -> list[str]:
        """The newest distinct shell notes, oldest first (at most ``SHELL_NOTES``)."""
        return list(self._notes)

    def recent(self) -> list[dict[str, Any]]:
        """The kept action (and agent_connected) events as monitor event frames, in the order they were emitted."""
        return [{"type": "event", "event": name, "time": _iso(at), **fields} for name, at, fields in self._events]
