"""The live view of ``oh start``: what a ``/v1/monitor`` client receives, in three renderers.

- ``rich`` (stdout is a TTY): backend line, editor state (spinner while waiting), a table of the
  delegated actions as they happen, background jobs (``job_started`` / ``job_finished``) in rows of
  their own, stats (with the running-job count) and trace path.
- ``plain`` (not a TTY): one timestamped line per change.
- ``json``: NDJSON, one object per monitor frame plus the launcher's own ``backend_started`` /
  ``backend_stopped`` events.

``LiveState`` is pure (frames in, state + plain lines out) so it is unit-tested without sockets; the
frames come from ``oh.client.monitor``.
"""

from __future__ import annotations

import json
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, ClassVar

from ..protocol import kinds, runtimenames
from ..protocol.events import COMMAND_SUMMARY_LIMIT
from ..protocol.events import WAIT_SUMMARY as FOLLOW_UP
from ..text import fmt
from ..text.sanitize import visible
from ..text.status import branch_label, history_line, sandbox_label

MAX_ROWS = 200
QUIET_JOB_OPS = re.compile(r"job (list|poll|output)\b")  # looks at jobs: not rows of the view (LiveState.quiet)
SHELL_NOTES = 5  # shell notes a snapshot may replay (the backend keeps as many)
MAX_NOTES_SEEN = 50  # notes remembered as shown, so a reconnect's snapshot repeats none
MAX_JOBS = 50  # job rows kept (running ones are never evicted while finished ones remain)
JOB_STYLES = {"RUNNING": "yellow", "SUCCEEDED": "green", "FAILED": "red", "CANCELLED": "yellow", "LOST": "red"}
RISK_STYLES = {"HIGH": "bold red", "MEDIUM": "yellow", "LOW": "dim", "UNKNOWN": "dim"}
# The kind column fits the longest action kind ("diagnostics", "definition", "references"): cut, they read alike.
KIND_WIDTH = 11


def _clock(iso: str | None = None) -> str:
    if iso:
        try:
            return datetime.fromisoformat(iso).astimezone().strftime("%H:%M:%S")
        except (TypeError, ValueError):
            pass
    return datetime.now().strftime("%H:%M:%S")


PATH_KINDS = kinds.PATH_SUMMARY  # summaries that end with a path


def _fit_path(summary: str, width: int) -> str:
    """A file action's summary cut from the left of its path, so the file name stays: `str_replace …/name.py`."""
    if len(summary) <= width or width < 4:
        return summary
    head, _, path = summary.rpartition(" ")
    room = width - len(head) - 2 if head else width - 1
    if head and room >= 8:
        return f"{head} …{path[-room:]}"
    return "…" + summary[-(width - 1) :]


def _fitter(width: int):
    """``fit(*parts)``: a state line of styled parts fitted to ``width``, whole on one line when it fits, else
    broken between words onto as many lines as it needs (continuations indented); a path breaks after one of
    its ``/``. Only a piece longer than a line is folded; no character is dropped."""
    from rich.text import Text

    inner = max(20, width - 2)

    def fit(*parts: tuple[str, str]) -> list[Text]:
        text = Text.assemble(*parts, no_wrap=True, overflow="ellipsis")
        if text.cell_len <= width:
            return [text]
        out = []
        for i, line in enumerate(text.divide(_breaks(text.plain, inner))):
            line.rstrip()
            line = line if i == 0 else Text("  ").append_text(line)
            line.no_wrap, line.overflow = True, "ellipsis"
            out.append(line)
        return out

    return fit


def _breaks(plain: str, width: int) -> list[int]:
    """Where ``plain`` breaks into lines of at most ``width``: before a word, or after a path's ``/``; a
    piece longer than a line is folded. Spaces may hang past the end (they are stripped)."""
    import re

    offsets: list[int] = []
    col = 0
    for m in re.finditer(r"[^ /]*/+|[^ /]+| +", plain):
        piece = m.group()
        if piece.startswith(" "):
            col += len(piece)
            continue
        if col and col + len(piece) > width:
            offsets.append(m.start())
            col = 0
        cuts = range(width - col, len(piece), width)  # longer than a line: folded
        offsets += [m.start() + cut for cut in cuts]
        col = len(piece) - cuts[-1] if cuts else col + len(piece)
    return offsets


def _wrap(text: str, width: int) -> list[str]:
    """A hint on as many lines as it needs (indented), so its fix at the end is never cut off."""
    import textwrap

    return textwrap.wrap(
        text, width=max(20, width - 1), initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False
    ) or [""]


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def editor_label(e: dict[str, Any]) -> str:
    """One line naming an editor, made visible-safe (editor-controlled text)."""
    return visible(fmt.editor_label(e))


def fmt_ms(ms: float | None) -> str:
    if not isinstance(ms, (int, float)):
        return ""
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


def _risk(value: Any) -> str | None:
    """``security_risk`` from the agent: shown, never trusted (bounded, escaped, upper-cased)."""
    if value is None or value == "":
        return None
    return visible(str(value))[:10].upper()


@dataclass
class ActionRow:
    """One delegated action. Every text field holds escaped (display-safe) text."""

    action_id: Any  # the frame's action id (an int from the backend)
    time: str
    agent: str
    kind: str
    summary: str
    outcome: str | None = None  # None while running
    exit_code: int | None = None
    duration_ms: float | None = None
    risk: str | None = None
    awaiting: bool = False  # review mode: a proposal waiting for the user's decision (§3.11)
    consent: str | None = None  # the approval id while the action waits for the user's consent (§3.13)
    timed_out: str | None = None  # a run that hit its timeout: killed | interrupted | running (fmt.TIMED_OUT)
    job_id: str | None = None  # the command a run (or its follow-up) concerned (§3.8)
    finished_by: int | None = None  # a follow-up (`oh run --wait`) saw the command still running here finish

    @property
    def failed(self) -> bool:
        return self.outcome is not None and self.outcome != "ok"

    @property
    def still_running(self) -> bool:
        """A run that returned without an exit code (soft timeout): the command goes on in its shell."""
        return self.outcome == "ok" and self.exit_code == -1 and self.timed_out not in ("killed", "interrupted")

    @property
    def started_job(self) -> bool:
        """`run` with background: it answers at once with the job's id; the job row follows the command."""
        return self.outcome == "ok" and self.kind == "run" and self.summary.startswith("background: ")

    @property
    def stopped_by_timeout(self) -> bool:
        return self.outcome == "ok" and self.timed_out in ("killed", "interrupted")

    def outcome_text(self) -> str:
        if self.outcome is None:
            if self.consent:
                return f"awaiting consent {self.consent}"
            return "awaiting review" if self.awaiting else "running…"
        if self.finished_by is not None:
            return "finished later"
        ended = fmt.timed_out(self.timed_out) if self.outcome == "ok" else None
        if ended:
            return ended[0]
        if self.started_job:
            return f"started {self.job_id}" if self.job_id else "started"
        if self.still_running:
            return "still running"
        return self.outcome

    def exit_text(self) -> str:
        ended = fmt.timed_out(self.timed_out) if self.outcome == "ok" else None
        if ended:
            return "" if ended[1] is None else str(ended[1])
        return "" if self.exit_code is None or self.still_running or self.started_job else str(self.exit_code)


@dataclass
class JobRow:
    """One background job (§3.8), from ``job_started`` / ``job_finished``. Text fields are escaped.
    It answers the same questions as ``ActionRow`` so both share the table's columns."""

    job_id: str
    time: str
    agent: str
    summary: str
    state: str = "RUNNING"
    exit_code: int | None = None
    duration_ms: float | None = None
    risk: str | None = None  # jobs carry none; here so the table treats both rows alike

    @property
    def kind(self) -> str:
        return self.job_id  # the id is what `oh jobs cancel ID` needs

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"

    def outcome_text(self) -> str:
        return self.state

    def exit_text(self) -> str:
        return "" if self.exit_code is None else str(self.exit_code)


@dataclass
class LiveState:
    backend: dict[str, Any]
    # keyed by the ids as the backend's frames carry them (ints and strings; None when a frame lacks one)
    editors: dict[Any, dict[str, Any]] = field(default_factory=dict)
    agents: dict[Any, str] = field(default_factory=dict)
    actions: "OrderedDict[Any, ActionRow]" = field(default_factory=OrderedDict)
    jobs: "OrderedDict[str, JobRow]" = field(default_factory=OrderedDict)
    stats: dict[str, int] = field(default_factory=lambda: {"done": 0, "pending": 0, "errors": 0})
    editor_gone_reason: str | None = None
    waiting_since: float = field(default_factory=time.monotonic)
    started_mono: float = field(default_factory=time.monotonic)
    uptime_base: float = 0.0
    stopping: str | None = None
    dropped: int = 0  # rows evicted beyond MAX_ROWS (counted in "earlier actions hidden")
    hints: list[str] = field(default_factory=list)  # why no editor may come (runtime vscode)
    shell_notes: list[str] = field(default_factory=list)  # the agent shells' notes (the clean-shell fallback), kept
    notes_seen: list[str] = field(default_factory=list)  # every note shown (bounded): a snapshot repeats none of them
    # Consent (§3.13): approval id -> its row (escaped text), oldest first; the keys y / n / a answer the first.
    approvals: "OrderedDict[str, dict[str, Any]]" = field(default_factory=OrderedDict)
    proposals: dict[Any, str] = field(default_factory=dict)  # action id -> proposal id ("" in VS Code): awaiting review
    changesets: dict[str, str] = field(default_factory=dict)  # h12 -> command: its changes await keep/revert (§3.15.1)
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)  # k1 -> the claim (several agents, §3.18)
    synced: bool = False  # the monitor's snapshot arrived: the table shows what the backend did since
    keys: str = "Ctrl-C stops the backend"  # the footer's key: what ending this view does (`oh watch` leaves it)
    version: int = 0  # bumped on every change, so the rich view redraws only when needed
    _spinner: Any = None

    @property
    def runtime(self) -> str:
        return visible(self.backend.get("runtime", "?"))

    @property
    def editor_state(self) -> str:
        if self.editors:
            return "connected"
        if not runtimenames.uses_editor(self.runtime):
            return "none"
        return "disconnected" if self.editor_gone_reason is not None else "waiting"

    def uptime(self) -> float:
        return self.uptime_base + (time.monotonic() - self.started_mono)

    def agent_name(self, agent_id: Any) -> str:
        name = self.agents.get(agent_id)
        return visible(name if name and name != agent_id else (agent_id or ""))

    def _row(self, frame: dict[str, Any]) -> ActionRow:
        kind = str(frame.get("kind", ""))
        summary = str(frame.get("summary", ""))
        if kind and summary.startswith(kind + " "):  # "job output j2", "stat a.py": the kind has its column
            summary = summary[len(kind) + 1 :]
        return ActionRow(
            frame.get("action_id"),
            _clock(frame.get("time")),
            self.agent_name(frame.get("agent_id", "")),
            visible(kind),
            visible(self.relative(summary, kind)),
            risk=_risk(frame.get("security_risk")),
        )

    @staticmethod
    def quiet(frame: dict[str, Any]) -> bool:
        """A look at jobs (`oh jobs`, `oh jobs output [-f]`, an agent's poll): a question about a command, not an
        action on the workspace; the view shows the jobs themselves (issue 41: each call was an action row, and a
        Ctrl-C'd `oh jobs output -f` an error). `wait` and `input`/`cancel` stay: they are what the agent does."""
        return frame.get("kind") == "job" and QUIET_JOB_OPS.match(str(frame.get("summary", ""))) is not None

    def relative(self, summary: str, kind: str) -> str:
        """A file action's summary with paths inside the workspace relative to it: at 80 columns the cut
        end of an absolute path is the file name. A command (run) is shown as the agent wrote it."""
        ws = self.backend.get("workspace")
        if kind == "run" or not isinstance(ws, str) or not ws.startswith("/"):
            return summary
        prefix = ws.rstrip("/") + "/"
        words = [
            w[len(prefix) :] or "." if w.startswith(prefix) else ("." if w == ws else w) for w in summary.split(" ")
        ]
        return " ".join(words)

    @property
    def animating(self) -> bool:
        """The spinner is on screen: the view must redraw often for it to turn."""
        return self.editor_state in ("waiting", "disconnected")

    def apply(self, frame: dict[str, Any]) -> list[str]:
        """Update from one monitor frame; return display-safe plain lines describing what changed."""
        self.version += 1
        return [visible(line) for line in self._apply(frame)]

    def _apply(self, frame: dict[str, Any]) -> list[str]:
        kind = frame.get("type")
        if kind == "snapshot":
            return self._on_snapshot(frame)
        if kind != "event":
            return []
        name = frame.get("event")
        handler = self._EVENTS.get(name) if isinstance(name, str) else None
        if handler is not None:
            return handler(self, frame)
        # An event this view does not know (a newer backend): shown as its JSON, never dropped.
        return [
            f"{name}: {json.dumps({k: v for k, v in frame.items() if k not in ('type', 'event', 'time')}, default=str)}"
        ]

    def _on_snapshot(self, frame: dict[str, Any]) -> list[str]:
        given = frame.get("backend")
        snap: dict[str, Any] = given if isinstance(given, dict) else frame
        self.backend.update(
            {
                k: v
                for k, v in snap.items()
                if k not in ("type", "editors", "agents", "stats", "jobs", "recent", "shell_notes", "claims")
            }
        )
        if isinstance(snap.get("claims"), list):  # several agents (§3.18): the claims held now
            self.claims = {str(c.get("claim_id")): c for c in snap["claims"] if isinstance(c, dict)}
        self.uptime_base = float(snap.get("uptime_s") or 0.0)
        self.started_mono = time.monotonic()
        self.editors = {e.get("editor_id", str(i)): e for i, e in enumerate(frame.get("editors") or [])}
        self.agents = {a.get("agent_id"): a.get("name", "") for a in frame.get("agents") or []}
        # The backend's recent actions and its jobs (§5): what ran before this view subscribed, or
        # while it reconnected, gets its rows; the snapshot's stats are the truth for the counts.
        replayed = self._replay(frame.get("recent"), frame.get("jobs"))
        if isinstance(frame.get("stats"), dict):
            self.stats.update(frame["stats"])
        # Actions older than the snapshot's recent ones have no row: count them as earlier actions hidden.
        seen = self.stats.get("done", 0) + self.stats.get("pending", 0)
        self.dropped = max(self.dropped, seen - len(self.actions))
        self.synced = True
        lines = [
            f"backend {self.backend.get('instance_id')} listening on {self.backend.get('url') or self._url()} "
            f"(runtime {self.runtime}, pid {self.backend.get('pid')}, workspace {self.backend.get('workspace')})"
        ]
        if self.editors:
            lines += [f"editor connected: {editor_label(e)}" for e in self.editors.values()]
        elif runtimenames.uses_editor(self.runtime):
            lines.append("waiting for VS Code to connect…")
        lines += self.version_problems()
        if isinstance(self.backend.get("branch"), dict):
            lines.append("branch mode: " + branch_label(self.backend["branch"]))
        if isinstance(self.backend.get("sandbox"), dict):
            lines.append("sandbox: " + sandbox_label(self.backend["sandbox"]))
        said = history_line(self.backend.get("history"))
        if said is not None:
            lines.append(said)
        # Notes the shells said before this view subscribed (each is said once per backend; they hold).
        given = frame.get("shell_notes")
        notes: list[Any] = given if isinstance(given, list) else []
        for note in notes[-SHELL_NOTES:]:
            if isinstance(note, str) and self._note_text(note) not in self.notes_seen:
                lines += self._on_shell_note({"note": note})
        consent = snap.get("consent") if isinstance(snap.get("consent"), dict) else None
        if consent is not None:
            lines.append(
                f"consent: {visible(consent.get('level', '?'))} ({plural(len(consent.get('rules') or []), 'rule')})"
            )
            for row in consent.get("waiting") or []:
                if isinstance(row, dict) and row.get("id") not in self.approvals:
                    replayed += self._on_approval_requested(row)
        return lines + replayed

    def _replay(self, events: Any, jobs: Any) -> list[str]:
        """Action events and jobs from the snapshot this view has not shown yet (a reconnect repeats some)."""
        events = (
            [ev for ev in events if isinstance(ev, dict) and ev.get("type") == "event"]
            if isinstance(events, list)
            else []
        )
        connected = self.agents
        # Agents that have left since name their actions too (agent_connected events are replayed for that).
        self.agents = {
            **{ev.get("agent_id"): ev.get("name") or "" for ev in events if ev.get("event") == "agent_connected"},
            **connected,
        }
        lines: list[str] = []
        try:
            for ev in events:
                row = self.actions.get(ev.get("action_id"))
                if ev.get("event") == "action_started" and row is None:
                    lines += self._on_action_started(ev)
                elif ev.get("event") == "action_finished" and (row is None or row.outcome is None):
                    lines += self._on_action_finished(ev)
                elif ev.get("event") == "changeset_opened" and ev.get("changeset") not in self.changesets:
                    lines += self._on_changeset_opened(ev)
                elif ev.get("event") == "changeset_closed" and ev.get("changeset") in self.changesets:
                    lines += self._on_changeset_closed(ev)
            lines += self._restore_jobs(jobs)
        finally:
            self.agents = connected
        return lines

    def _restore_jobs(self, jobs: Any) -> list[str]:
        """Job rows from the snapshot: running ones and recently finished ones this view has not seen."""
        lines: list[str] = []
        for job in jobs if isinstance(jobs, list) else []:
            if not isinstance(job, dict) or not job.get("job_id"):
                continue
            known = self.jobs.get(visible(str(job["job_id"]))[:24])
            state = visible(str(job.get("state") or "RUNNING"))[:12].upper()
            if known is not None and known.state == state:
                continue
            frame = {**job, "time": job.get("started")}
            if state == "RUNNING":
                row = self._job_row(frame)
                row.state = "RUNNING"
                lines.append(
                    f"job {row.job_id} running: {row.agent} {row.summary} ({plural(self.running_jobs, 'job')} running)"
                )
            else:
                lines += self._on_job_finished(frame)
        return lines

    def _on_branch(self, frame: dict[str, Any]) -> list[str]:
        """Branch mode switched (or was turned off by the user) before an agent's first change."""
        self.backend["branch"] = {k: v for k, v in frame.items() if k not in ("type", "event", "time")}
        return ["branch mode: " + branch_label(self.backend["branch"])]

    def _on_shell_note(self, frame: dict[str, Any]) -> list[str]:
        """An agent shell's note (the clean-shell fallback of a slow or failing rc file, a fixed setting)."""
        said = self._note_text(frame.get("note"))
        if said not in self.shell_notes:  # the rich view keeps it on screen: it holds for the whole session
            self.shell_notes = [*self.shell_notes, said][-2:]
        if said not in self.notes_seen:
            self.notes_seen = [*self.notes_seen, said][-MAX_NOTES_SEEN:]
        return [said]

    @staticmethod
    def _note_text(note: Any) -> str:
        return "shell: " + visible(str(note or ""))[:600]

    def _on_editor_connected(self, frame: dict[str, Any]) -> list[str]:
        e = dict(frame.get("editor") or {})
        self.editors[e.get("editor_id", f"e{len(self.editors) + 1}")] = e
        self.editor_gone_reason = None
        self.backend.pop("editor_refused", None)  # an editor got in: an older refusal is not the story any more
        return [f"editor connected: {editor_label(e)}", *self.version_problems()]

    def _on_editor_refused(self, frame: dict[str, Any]) -> list[str]:
        """An editor whose extension cannot talk to this oh (protocol/versions.py): the message names the fix."""
        self.backend["editor_refused"] = {"message": frame.get("message")}
        return self.version_problems()

    def version_problems(self) -> list[str]:
        """oh and the extension as a pair (protocol/versions.py): a refused editor, or a connected one
        from another release; each line ends with the fix. Display-safe."""
        out = []
        refused = self.backend.get("editor_refused")
        if isinstance(refused, dict) and refused.get("message"):
            out.append("editor refused: " + visible(str(refused["message"])))
        for e in self.editors.values():
            vc = e.get("version_check")
            if isinstance(vc, dict) and vc.get("message"):
                out.append(visible(f"extension version: {vc['message']} Fix: {vc.get('fix', '')}".strip()))
        return out

    def _on_editor_disconnected(self, frame: dict[str, Any]) -> list[str]:
        e = self.editors.pop(frame.get("editor_id"), None)
        self.editor_gone_reason = visible(frame.get("reason") or "disconnected")
        if not self.editors:
            self.waiting_since = time.monotonic()
        return [f"editor disconnected: {editor_label(e) if e else frame.get('editor_id')} ({self.editor_gone_reason})"]

    def _on_agent_connected(self, frame: dict[str, Any]) -> list[str]:
        self.agents[frame.get("agent_id")] = frame.get("name") or ""
        wt = frame.get("worktree")
        where = f", in its worktree on {wt.get('branch')}" if isinstance(wt, dict) else ""  # issue 37: --isolate
        return [visible(f"agent connected: {frame.get('name')} ({frame.get('agent_id')}){where}")]

    # Agents elsewhere (issue 28): shares made, ended, and the state of `oh share ssh` links.
    def _on_share_created(self, frame: dict[str, Any]) -> list[str]:
        maps = f", map {', '.join(map(str, frame.get('map') or []))}" if frame.get("map") else ""
        return [visible(f"share {frame.get('share_id')} created for {frame.get('where')}{maps}")]

    def _on_share_ended(self, frame: dict[str, Any]) -> list[str]:
        return [
            visible(
                f"share {frame.get('share_id')} {frame.get('reason')}: {frame.get('closed', 0)} connection(s) closed"
            )
        ]

    def _on_share_link(self, frame: dict[str, Any]) -> list[str]:
        why = f": {frame['reason']}" if frame.get("reason") else ""
        return [visible(f"share {frame.get('share_id')} link to {frame.get('host')} {frame.get('state')}{why}")]

    def _on_shares_revoked(self, frame: dict[str, Any]) -> list[str]:
        return [visible(f"shares {', '.join(map(str, frame.get('shares') or []))} revoked ({frame.get('reason')})")]

    def _on_stale_refused(self, frame: dict[str, Any]) -> list[str]:
        """Several agents (§3.18): a write/edit based on a stale read, refused."""
        return [
            visible(
                f"stale write refused: {frame.get('name')} ({frame.get('agent_id')}) {frame.get('path')}, "
                f"changed by {frame.get('changed_by')}"
            )[:600]
        ]

    def _on_claim_made(self, frame: dict[str, Any]) -> list[str]:
        self.claims[str(frame.get("claim_id"))] = dict(frame)
        paths = " ".join(map(str, frame.get("paths") or []))
        return [
            visible(f"claim {frame.get('claim_id')}: {frame.get('name')} ({frame.get('agent_id')}) holds {paths}")[:600]
        ]

    def _on_claim_ended(self, frame: dict[str, Any]) -> list[str]:
        self.claims.pop(str(frame.get("claim_id")), None)
        return [visible(f"claim {frame.get('claim_id')} of {frame.get('name')} ended ({frame.get('why')})")]

    def _on_agent_disconnected(self, frame: dict[str, Any]) -> list[str]:
        self.agents.pop(frame.get("agent_id"), None)
        return [f"agent disconnected: {frame.get('name')} ({frame.get('agent_id')})"]

    def _on_action_started(self, frame: dict[str, Any]) -> list[str]:
        if self.quiet(frame):
            return []
        row = self._row(frame)
        self.actions[row.action_id] = row
        while len(self.actions) > MAX_ROWS:
            self.actions.popitem(last=False)
            self.dropped += 1
        self.stats["pending"] = self.stats.get("pending", 0) + 1
        risk = f" [risk {row.risk}]" if row.risk else ""
        return [f"{row.agent} {row.kind} {row.summary}{risk} …"]

    def _on_action_finished(self, frame: dict[str, Any]) -> list[str]:
        if self.quiet(frame):
            return []
        aid = frame.get("action_id")
        row = self.actions.get(aid)
        if row is None:  # started before we subscribed (the snapshot counted it as pending) or evicted
            row = self._row(frame)
            self.actions[aid] = row
            self.dropped = max(0, self.dropped - 1)
        self.stats["pending"] = max(0, self.stats.get("pending", 0) - 1)
        if row.risk is None:
            row.risk = _risk(frame.get("security_risk"))
        row.outcome = visible(frame.get("outcome") or "ok")
        code = frame.get("exit_code")
        row.exit_code = code if isinstance(code, int) else None
        row.duration_ms = frame.get("duration_ms")
        row.timed_out = frame.get("timed_out") if isinstance(frame.get("timed_out"), str) else None
        row.job_id = visible(frame["job_id"])[:24] if isinstance(frame.get("job_id"), str) else None
        self._follow_up_finished(row)
        self.stats["done"] = self.stats.get("done", 0) + 1
        if row.failed:
            self.stats["errors"] = self.stats.get("errors", 0) + 1
        code_txt = f" exit {row.exit_text()}" if row.exit_text() else ""
        risk = f" [risk {row.risk}]" if row.risk else ""
        blind = " (blind: never read)" if frame.get("blind") is True else ""
        return [
            f"{row.agent} {row.kind} {row.summary}{risk} → {row.outcome_text()}{code_txt} in "
            f"{fmt_ms(row.duration_ms)}{blind}{_changed_text(frame.get('changed'))}"
        ]

    def _follow_up_finished(self, row: ActionRow) -> None:
        """A follow-up (`oh run --wait`, input) names the command it went to by job id: its row says which
        command it waited for, and once the command ended, the row that said "still running" says so."""
        if row.kind != "run":
            return
        if row.job_id is not None:
            earlier = [r for r in self.actions.values() if r is not row and r.job_id == row.job_id and r.kind == "run"]
        elif row.summary == FOLLOW_UP:  # a runtime without job ids (VS Code): the agent's last command still running
            earlier = [
                r
                for r in self.actions.values()
                if r is not row
                and r.kind == "run"
                and r.job_id is None
                and r.agent == row.agent
                and r.still_running
                and not r.summary.startswith(FOLLOW_UP)
                and r.finished_by is None
            ][-1:]
        else:
            return
        if not earlier:
            return
        first = earlier[0]
        if not row.summary or row.summary == FOLLOW_UP:
            row.summary = f"{FOLLOW_UP}: {first.summary}"[:COMMAND_SUMMARY_LIMIT]  # the width cuts it, not 80
        if row.outcome == "ok" and row.exit_code is not None and row.exit_code >= 0:
            waits = [
                r for r in self.actions.values() if r is not row and r.agent == row.agent and r.summary == row.summary
            ]
            for r in earlier + (waits if row.job_id is None else []):  # earlier follow-ups of the same command too
                if r.still_running:
                    r.finished_by = row.action_id

    @property
    def running_jobs(self) -> int:
        return sum(1 for j in self.jobs.values() if j.running)

    def _job_row(self, frame: dict[str, Any]) -> JobRow:
        job_id = visible(frame.get("job_id") or "?")[:24]
        row = self.jobs.get(job_id)
        if row is None:  # a job_finished for a job that started before this view subscribed
            row = JobRow(
                job_id,
                _clock(frame.get("time")),
                self.agent_name(frame.get("agent_id", "")),
                visible(frame.get("summary", "")),
            )
            self.jobs[job_id] = row
            self._evict_jobs()
        return row

    def _evict_jobs(self) -> None:
        # Oldest finished jobs go first; a running job stays (it is what the user watches).
        while len(self.jobs) > MAX_JOBS:
            old = next((k for k, j in self.jobs.items() if not j.running), None)
            if old is None:
                break
            del self.jobs[old]

    def _on_job_started(self, frame: dict[str, Any]) -> list[str]:
        row = self._job_row(frame)
        row.state = "RUNNING"
        return [f"job {row.job_id} started: {row.agent} {row.summary} ({plural(self.running_jobs, 'job')} running)"]

    def _on_job_finished(self, frame: dict[str, Any]) -> list[str]:
        row = self._job_row(frame)
        row.state = visible(frame.get("state") or "FINISHED")[:12].upper()
        code = frame.get("exit_code")
        row.exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        ms = frame.get("duration_ms")
        row.duration_ms = ms if isinstance(ms, (int, float)) and not isinstance(ms, bool) else None
        code_txt = f" exit {row.exit_code}" if row.exit_code is not None else ""
        dur = f" in {fmt_ms(row.duration_ms)}" if row.duration_ms is not None else ""
        return [
            f"job {row.job_id} {row.state}{code_txt}{dur}: {row.agent} {row.summary} "
            f"({plural(self.running_jobs, 'job')} running)"
        ]

    def _on_proposal_opened(self, frame: dict[str, Any]) -> list[str]:
        """Review mode: an action became a proposal (local: ``oh review``; VS Code: its diff editor)."""
        aid = frame.get("action_id")
        pid = visible(frame.get("proposal_id") or "")[:16]
        self.proposals[aid] = pid
        row = self.actions.get(aid)
        if row is not None:
            row.awaiting = True
        how = f"`oh review show {pid}`, then accept or reject" if pid else "review it in VS Code"
        return [
            f"{self.agent_name(frame.get('agent_id', ''))} proposes {visible(frame.get('kind', ''))} "
            f"{visible(frame.get('path', ''))}: awaiting review ({how})"
        ]

    def _on_proposal_closed(self, frame: dict[str, Any]) -> list[str]:
        aid = frame.get("action_id")
        pid = self.proposals.pop(aid, "")
        row = self.actions.get(aid)
        if row is not None:
            row.awaiting = False
        by = f" by {visible(frame['by'])}" if frame.get("by") else ""
        return [
            f"proposal {pid + ' ' if pid else ''}{visible(frame.get('path', ''))}: "
            f"{visible(frame.get('decision') or 'closed')}{by}"
        ]

    def _on_changeset_opened(self, frame: dict[str, Any]) -> list[str]:
        """History + review: a command's file changes landed and await the user's keep or revert."""
        cid = visible(frame.get("changeset") or "")[:16]
        what = visible(frame.get("what") or "")[:120]
        self.changesets[cid] = what
        given = frame.get("files")
        files = given if isinstance(given, int) else 0
        return [
            f"{visible(frame.get('agent') or '?')}'s command `{what}` changed {plural(files, 'file')}: change "
            f"set {cid} "
            f"awaits review (`oh review show {cid}`, then `oh review accept {cid}` keeps / `oh review reject "
            f"{cid}` reverts)"
        ]

    def _on_changeset_closed(self, frame: dict[str, Any]) -> list[str]:
        cid = visible(frame.get("changeset") or "")[:16]
        what = self.changesets.pop(cid, visible(frame.get("what") or "")[:120])
        by = f" by {visible(frame['by'])}" if frame.get("by") else ""
        return [f"change set {cid} `{what}`: {visible(frame.get('decision') or 'closed')}{by}"]

    def _on_approval_requested(self, frame: dict[str, Any]) -> list[str]:
        """An action waits for the user's consent (§3.13)."""
        aid = visible(frame.get("id") or "")[:16]
        row: dict[str, Any] = {
            "id": aid,
            "action_id": frame.get("action_id"),
            "agent": self.agent_name(frame.get("agent_id", "")),
            "kind": visible(frame.get("kind") or ""),
            "what": visible(frame.get("what") or "")[:300],
            "reason": visible(frame.get("reason") or "")[:200],
            # the whole command, one escaped line per line: shown wrapped, never cut without saying so
            "command": [visible(x) for x in str(frame.get("command") or "").split("\n")]
            if frame.get("command")
            else [],
            "risk": _risk(frame.get("security_risk")),
            "always": [visible(r)[:100] for r in frame.get("always") or [] if isinstance(r, str)],
        }
        self.approvals[aid] = row
        action = self.actions.get(frame.get("action_id"))
        if action is not None:
            action.consent = aid
        risk = f" [security_risk {row['risk']}]" if row["risk"] else ""
        always = f" / a = always ({', '.join(row['always'])})" if row["always"] else ""
        whole = (
            [f"    $ {line}" for line in row["command"]] if len(row["command"]) > 1 or len(row["what"]) >= 300 else []
        )
        return [
            f"{aid} awaiting your consent: {row['agent']} wants to {row['kind']} `{row['what']}`{risk} "
            f"({row['reason']}); y = allow / n = reject{always}, or `oh approve {aid}` / `oh reject {aid}`"
        ] + ([f"{aid} the whole command:"] + whole if whole else [])

    def _on_approval_decided(self, frame: dict[str, Any]) -> list[str]:
        aid = visible(frame.get("id") or "")[:16]
        self.approvals.pop(aid, None)
        action = self.actions.get(frame.get("action_id"))
        if action is not None:
            action.consent = None
        who = visible(frame.get("by") or "?")
        what = visible(frame.get("what") or "")[:200]
        rule = (
            f" (rule added: {visible(frame['rule'])})"
            if frame.get("rule") and frame.get("decision") == "allowed"
            else ""
        )
        reason = (
            f": {visible(frame['reason'])[:200]}" if frame.get("reason") and frame.get("decision") != "allowed" else ""
        )
        return [
            f"{aid + ' ' if aid else ''}{visible(frame.get('decision') or '?')} by {who} at "
            f"{_clock(frame.get('at'))}: `{what}`{rule}{reason}"
        ]

    @staticmethod
    def _command_lines(ask: dict[str, Any], width: int, room: int) -> list[Any]:
        """The asked command, wrapped to ``width``, in at most ``room`` lines; what does not fit is named
        (with where to read it all), never silently cut."""
        from rich.text import Text

        w = max(20, width - 4)  # cut at the width, not at words: every character stays, spaces included
        lines = [line[i : i + w] for line in ask.get("command") or [] for i in range(0, max(len(line), 1), w)]
        if len(lines) <= 1 and len(ask["what"]) < 300:
            return []  # the one-line summary above already shows all of it
        shown = lines if len(lines) <= room else lines[: room - 1]
        out = [Text("  $ " + line, style="bold", no_wrap=True) for line in shown]
        if len(shown) < len(lines):
            out.append(
                Text(
                    f"  … {len(lines) - len(shown)} more lines: `oh approvals` shows the whole command",
                    style="yellow",
                    no_wrap=True,
                )
            )
        return out

    def first_approval(self) -> dict[str, Any] | None:
        return next(iter(self.approvals.values()), None)

    def _on_token_rotated(self, frame: dict[str, Any]) -> list[str]:
        return [f"token rotated: {frame.get('closed', 0)} connection(s) closed"]

    def _on_shutting_down(self, frame: dict[str, Any]) -> list[str]:
        self.stopping = visible(frame.get("reason") or "shutting down")
        return [f"backend shutting down: {self.stopping}"]

    _EVENTS: ClassVar[dict[str, Callable[["LiveState", dict[str, Any]], list[str]]]] = {
        "editor_connected": _on_editor_connected,
        "editor_disconnected": _on_editor_disconnected,
        "editor_refused": _on_editor_refused,
        "agent_connected": _on_agent_connected,
        "agent_disconnected": _on_agent_disconnected,
        "share_created": _on_share_created,
        "share_ended": _on_share_ended,
        "share_link": _on_share_link,
        "shares_revoked": _on_shares_revoked,
        "action_started": _on_action_started,
        "action_finished": _on_action_finished,
        "job_started": _on_job_started,
        "job_finished": _on_job_finished,
        "proposal_opened": _on_proposal_opened,
        "proposal_closed": _on_proposal_closed,
        "changeset_opened": _on_changeset_opened,
        "changeset_closed": _on_changeset_closed,
        "approval_requested": _on_approval_requested,
        "approval_decided": _on_approval_decided,
        "token_rotated": _on_token_rotated,
        "shutting_down": _on_shutting_down,
        "branch": _on_branch,
        "shell_note": _on_shell_note,
        "stale_refused": _on_stale_refused,
        "claim_made": _on_claim_made,
        "claim_ended": _on_claim_ended,
    }

    def _url(self) -> str:
        host = self.backend.get("host", "127.0.0.1")
        return f"ws://{host}:{self.backend.get('port')}"

    def stats_line(self) -> str:
        st = self.stats
        line = f"{st.get('done', 0)} done · {st.get('pending', 0)} pending · {plural(st.get('errors', 0), 'error')}"
        line += f" · {plural(self.running_jobs, 'job')} running" if self.jobs else ""
        line += f" · {len(self.approvals)} awaiting consent" if self.approvals else ""
        line += f" · {plural(len(self.changesets), 'change set')} awaiting review" if self.changesets else ""
        line += f" · {plural(len(self.claims), 'claim')}" if self.claims else ""
        return line + (f" · {plural(len(self.proposals), 'proposal')} awaiting review" if self.proposals else "")

    # ------------------------------------------------------------------ rich
    def render(self, height: int = 40, width: int = 120):
        """The rich view. Every agent- or editor-controlled string goes in as ``Text`` built from
        escaped text, never as a markup string. A state line (workspace, sandbox, editor, the counts)
        that does not fit is broken between words onto more lines, never cut mid-word; the action rows
        get what is left of ``height``, so nothing scrolls off or wraps at 80 columns."""
        # rich is imported by the rich renderer only (lazy: the plain and JSON views never load it).
        from rich.console import Group
        from rich.text import Text

        def one_line(*parts: tuple[str, str]) -> Text:
            return Text.assemble(*parts, no_wrap=True, overflow="ellipsis")

        fit = _fitter(width)
        b = self.backend
        head, ws = self._head(width, one_line, fit)
        editor, hints = self._editor_line(width, one_line, fit)
        hints += [one_line((line, "yellow")) for note in self.shell_notes for line in _wrap(note, width)]
        hints += self._approval_lines(one_line, width, height, fit)
        problems = [
            line
            for p in self.version_problems()
            for line in fit(("  ", ""), (p, "bold red" if p.startswith("editor refused") else "yellow"))
        ]
        counts, ctrl_c = (
            self.stats_line(),
            self.keys if not self.stopping else f"stopping: {self.stopping}",
        )
        together = len(counts) + 3 + len(ctrl_c) <= width  # else the key on a line of its own, never broken
        stats = (
            fit((counts, "dim"), (f"   {ctrl_c}", "dim"))
            if together
            else [*fit((counts, "dim")), *fit((ctrl_c, "dim"))]
        )
        trace = fit(("trace ", "dim"), (visible(b["trace"]), "dim")) if b.get("trace") else []
        # Besides the rows: those lines, and a blank line, the table's header, a blank line, "N hidden".
        chrome = 1 + len(ws) + len(editor) + len(problems) + len(hints) + len(stats) + max(1, len(trace)) + 4
        room = max(1, height - chrome)
        # Jobs get up to a third of the rows (at most 8, plus their title line); actions the rest.
        job_room = min(len(self.jobs), 8, max(1, room // 3)) if self.jobs else 0
        table, shown, hidden, job_lines = self._table(max(1, room - job_room - (1 if job_room else 0)), width, job_room)
        parts: list[Any] = [head, *ws, *editor, *problems, *hints, Text(""), table]
        if hidden:
            parts.append(one_line((f"{plural(hidden, 'earlier action')} hidden (`oh logs` shows all)", "dim")))
        if job_lines:
            more = len(self.jobs) - len(job_lines)
            parts.append(
                one_line(
                    ("background jobs", "bold"),
                    (f" · {self.running_jobs} running", "yellow" if self.running_jobs else "dim"),
                    (f" · {more} more (`oh jobs`)" if more else "", "dim"),
                )
            )
            parts += job_lines
        return Group(*parts, Text(""), *stats, *trace)

    def _head(self, width: int, one_line, fit):
        """The backend line (labels dropped first at 80 columns) and the workspace lines."""
        b = self.backend
        url = visible(b.get("url") or self._url())
        head_parts = [
            ("oh ", "bold"),
            ("backend ", "dim"),
            (visible(b.get("instance_id", "?")), "bold cyan"),
            ("  runtime ", "dim"),
            (self.runtime, "bold"),
            ("  ", ""),
            (url, "green"),
            ("  pid ", "dim"),
            (str(b.get("pid", "?")), ""),
            ("  up ", "dim"),
            (fmt.fmt_duration(self.uptime()), ""),
        ]
        if sum(len(text) for text, _ in head_parts) > width:  # 80 columns: drop labels before anything is cut
            head_parts = [
                ("backend ", "dim"),
                (visible(b.get("instance_id", "?")), "bold cyan"),
                (" · ", "dim"),
                (self.runtime, "bold"),
                (" · ", "dim"),
                (url.removeprefix("ws://"), "green"),
                (" · pid ", "dim"),
                (str(b.get("pid", "?")), ""),
                (" · up ", "dim"),
                (fmt.fmt_duration(self.uptime()), ""),
            ]
        head = one_line(*head_parts)
        ws = fit(
            ("workspace ", "dim"),
            (visible(b.get("workspace", "")), ""),
            *(
                (("  branch ", "dim"), (visible(branch_label(b["branch"])), "magenta"))
                if isinstance(b.get("branch"), dict)
                else ()
            ),
        )
        return head, ws

    def _editor_line(self, width: int, one_line, fit):
        """The editor's state (a spinner while waiting), or the local runtime's sandbox, and the hints under it."""
        from rich.spinner import Spinner
        from rich.text import Text

        state = self.editor_state
        editor: list[Any]
        hints: list[Text] = []
        if state == "connected":
            editor = fit(
                ("● ", "green"),
                ("editor connected: ", "green"),
                (" · ".join(editor_label(e) for e in self.editors.values()), ""),
            )
        elif state in ("waiting", "disconnected"):
            waited = fmt.fmt_duration(time.monotonic() - self.waiting_since)
            if state == "waiting":
                text, style = f"waiting for VS Code to connect… ({waited})", "yellow"
            else:  # the reason on lines of its own: the spinner's line stays short enough for 80 columns
                text, style = f"editor disconnected; waiting for it to reconnect… ({waited})", "red"
                hints = fit(("  why: ", "dim"), ((self.editor_gone_reason or "")[:200], "red"))
            if self._spinner is None:  # one spinner for the whole view: a new one each frame never turns
                self._spinner = Spinner("dots")
            self._spinner.text = Text(text, style=style, no_wrap=True, overflow="ellipsis")
            self._spinner.style = style
            editor = [self._spinner]
            hints += [one_line((line, "dim")) for h in self.hints for line in _wrap(h, width)]
        else:
            b = self.backend
            sb = b.get("sandbox") if isinstance(b.get("sandbox"), dict) else None
            if sb is not None and sb.get("confined"):
                editor = fit(("runtime local: the agent's shell is sandboxed: ", "green"), (sandbox_label(sb), ""))
            else:
                why = sandbox_label(sb) if sb is not None else "no sandbox"
                editor = fit((f"runtime local: actions run directly on this machine, {why}", "yellow"))
        return editor, hints

    def _approval_lines(self, one_line, width: int, height: int, fit) -> list[Any]:
        """The first waiting approval and the keys that answer it: the question above everything that moves."""
        hints: list[Any] = []
        ask = self.first_approval()
        if ask is not None:
            more = len(self.approvals) - 1
            whole = self._command_lines(ask, width, max(3, height // 3))
            style = RISK_STYLES.get(ask["risk"] or "", "")
            risk = ((f"  security_risk {ask['risk']}", style),) if ask["risk"] else ()
            risk_first = ((f"security_risk {ask['risk']} ", style),) if ask["risk"] else ()
            question = (
                ("? ", "bold yellow"),
                (ask["id"] + " ", "bold"),
                (f"{ask['agent']} wants to {ask['kind']} ", ""),
                (ask["what"], "bold"),
            )
            # With the command on lines of its own below, the question may be cut (its risk goes first);
            # else it is the only place the command is shown: wrapped, whole.
            hints += [one_line(*question[:3], *risk_first, question[3])] if whole else fit(*question, *risk)
            hints += whole
            hints.extend(
                fit(
                    ("  y", "bold green"),
                    (" allow  ", ""),
                    ("n", "bold red"),
                    (" reject  ", ""),
                    *((("a", "bold cyan"), (f" always ({', '.join(ask['always'])})  ", "")) if ask["always"] else ()),
                    (f"why: {ask['reason']}", "dim"),
                    (f"  (+{more} more: `oh approvals`)" if more > 0 else "", "dim"),
                )
            )
        return hints

    def _shown_jobs(self, room: int) -> list[JobRow]:
        """Up to ``room`` job rows in start order: running jobs first choice, then the newest finished."""
        if room <= 0:
            return []
        rows = list(self.jobs.values())
        keep = {id(j) for j in [j for j in rows if j.running][-room:]}
        for j in reversed(rows):
            if len(keep) >= room:
                break
            keep.add(id(j))
        return [j for j in rows if id(j) in keep]

    def _table(self, room: int, width: int, job_room: int = 0):
        """The actions table fitted to ``width``: time, agent, kind, outcome, exit and duration keep
        their width; the summary takes what is left (ellipsis) and is the first to shrink. Job rows
        share the columns (kind holds the job id, outcome its state), so both read the same at 80."""
        from rich.console import Group
        from rich.text import Text

        rows = list(self.actions.values())
        shown = rows[-room:] if rows else []
        hidden = self.dropped + len(rows) - len(shown)
        jobs = self._shown_jobs(job_room)
        both: list[Any] = [*shown, *jobs]

        widths, names = _column_widths(both, shown, width)
        right = ("exit", "duration")

        def line(cells: dict[str, Text]) -> Text:
            # Each cell cut (ellipsis) and padded to its column: one Text per row is ~20x cheaper
            # than a rich Table, and the widths are already decided above.
            out = Text(no_wrap=True, overflow="ellipsis")
            for i, name in enumerate(names):
                cell = cells.get(name) or Text("")
                cell.truncate(widths[name], overflow="ellipsis")
                cell.align("right" if name in right else "left", widths[name])
                if i:
                    out.append(" ")
                out.append_text(cell)
            return out

        lines = [line({n: Text(n, style="bold") for n in names})]
        for r in shown:
            outcome = _outcome_cell(r)
            summary = _fit_path(r.summary, widths["summary"]) if r.kind in PATH_KINDS else r.summary
            lines.append(
                line(
                    {
                        "time": Text(r.time),
                        "agent": Text(r.agent),
                        "kind": Text(r.kind),
                        "summary": Text(summary),
                        "risk": Text(r.risk or "", style=RISK_STYLES.get(r.risk or "", "")),
                        "outcome": outcome,
                        "exit": Text(r.exit_text()),
                        "duration": Text(fmt_ms(r.duration_ms)),
                    }
                )
            )
        if not shown:
            lines.append(line({"summary": Text("no actions yet" if self.synced else "connecting…", style="dim")}))
        table = Group(*lines)
        job_lines = [
            line(
                {
                    "time": Text(j.time),
                    "agent": Text(j.agent),
                    "kind": Text(j.kind),
                    "summary": Text(j.summary),
                    "outcome": Text(j.state, style=JOB_STYLES.get(j.state, "")),
                    "exit": Text(j.exit_text()),
                    "duration": Text(fmt_ms(j.duration_ms)),
                }
            )
            for j in jobs
        ]
        return table, shown, hidden, job_lines


def _column_widths(both: list[Any], shown: list[Any], width: int) -> tuple[dict[str, int], list[str]]:
    """The live view's column widths fitted to ``width`` (who gives way first: the summary), and the columns."""
    from rich.cells import cell_len

    with_risk = any(r.risk for r in shown)

    def w(values: list[str], header: str, cap: int) -> int:
        return min(cap, max([len(header), *(cell_len(v) for v in values)]))

    widths = {
        "time": 8,
        "agent": w([r.agent for r in both], "agent", 14),
        "kind": w([r.kind for r in both], "kind", KIND_WIDTH),
        "summary": max([len("no actions yet"), *(cell_len(r.summary) for r in both)]),
        "risk": w([r.risk or "" for r in shown], "risk", 7) if with_risk else 0,
        "outcome": w([r.outcome_text() for r in both], "outcome", 19),
        "exit": w([r.exit_text() for r in both], "exit", 4),
        "duration": w([fmt_ms(r.duration_ms) for r in both], "duration", 8),
    }
    names = [n for n in widths if widths[n]]
    excess = sum(widths[n] for n in names) + len(names) - 1 - width  # one space between columns
    # Who gives way, in order: the summary first (down to 16, then 8 once the agent is down to 10).
    for name, least in (
        ("summary", 16),
        ("agent", 10),
        ("summary", 8),
        ("agent", 6),
        ("outcome", 10),
        ("kind", 6),
        ("kind", 4),
    ):
        if excess <= 0:
            break
        give = min(excess, max(0, widths[name] - least))
        widths[name] -= give
        excess -= give
    return widths, names


def _outcome_cell(r: Any):
    """An action row's outcome, coloured: running, finished by someone else, failed, ok, or a non-zero exit."""
    from rich.text import Text

    if r.outcome is None or r.still_running:
        return Text(r.outcome_text(), style="yellow")
    if r.finished_by is not None:
        return Text(r.outcome_text(), style="dim")
    if r.failed or r.stopped_by_timeout:
        return Text(r.outcome_text(), style="red")
    if r.exit_code in (None, 0):
        return Text("ok", style="green")
    return Text("ok", style="yellow")  # the command ran and exited non-zero


def _changed_text(changed: Any) -> str:
    """A run's ``+N −M in K files`` (history on, §3.15), or "" (none said, or not numbers)."""
    if not isinstance(changed, dict) or not all(isinstance(changed.get(k), int) for k in ("files", "added", "removed")):
        return ""
    k = changed["files"]
    return f", +{changed['added']} \u2212{changed['removed']} in {k} file{'s' if k != 1 else ''}"
