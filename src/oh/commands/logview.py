"""``oh logs``' behaviour: a backend's JSONL trace, rendered or raw. No typer here: ``oh.commands.logs`` is the
command's typer part, and ``oh.commands.quick`` runs a bare ``oh logs`` from this module (startup)."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from pathlib import Path

from ..text import fmt
from ._common import NOT_RUNNING, die
from ._io import Streams

TYPE_CHECKING = False  # typing costs ~20 ms to import; these names serve annotations (and mypy) only
if TYPE_CHECKING:
    from typing import Any, Callable, Optional


def render_record(rec: dict[str, Any]) -> str:
    """One trace record as one line; unknown fields are shown as key=value (the format may grow)."""
    t = str(rec.get("t", ""))
    try:
        clock = datetime.fromisoformat(t).astimezone().strftime("%H:%M:%S.%f")[:-3]
    except ValueError:
        clock = t
    kind = rec.get("kind", "?")
    parts = [clock, f"{kind:<7}"]
    who = rec.get("agent_name") or rec.get("agent") or rec.get("agent_id")
    if who:  # its name, as the live view shows it (the id for a nameless agent or an older trace)
        parts.append(str(who))
    if rec.get("action") or rec.get("action_id") is not None:
        parts.append(f"{rec.get('action', '')}#{rec.get('action_id', '')}".strip("#"))
    if rec.get("summary"):
        parts.append(str(rec["summary"]))
    ended = fmt.timed_out(rec.get("timed_out"))
    if kind != "request" and ended:  # a run that hit its timeout: not "ok, exit -1"
        parts.append(f"→ {ended[0]}")
        if ended[1] is not None:
            parts.append(f"exit {ended[1]}")
    elif kind != "request":
        if rec.get("outcome"):
            parts.append(f"→ {rec['outcome']}")
        started_job = str(rec.get("summary", "")).startswith("background: ") and rec.get("exit_code") == -1
        if rec.get("exit_code") is not None and not started_job:  # a job's start has no exit code: it runs on
            parts.append(f"exit {rec['exit_code']}")
        if rec.get("duration_ms") is not None:
            parts.append(f"{rec['duration_ms']} ms")
    if rec.get("error_id") and rec.get("error_id") != rec.get("outcome"):
        parts.append(str(rec["error_id"]))
    for said in ("message", "note"):  # an error's message, a shell's note (the clean shell and why): prose
        if rec.get(said):
            parts.append(f"— {rec[said]}")
    known = {
        "t",
        "kind",
        "agent",
        "agent_name",
        "agent_id",
        "action",
        "action_id",
        "agent_action_id",
        "summary",
        "outcome",
        "exit_code",
        "duration_ms",
        "error_id",
        "message",
        "note",
        "cause",
        "timed_out",
    }
    extra = {k: v for k, v in rec.items() if k not in known}
    if extra:
        parts.append(" ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in extra.items()))
    return "  ".join(parts)


def _emit(io: Streams, line: str, raw: bool) -> None:
    from ..text.sanitize import json_visible, visible

    line = line.rstrip("\n")
    if not line:
        return
    if raw:
        # --json: records are JSON, whose encoder escaped every C0 control; C1/bidi characters are
        # re-escaped (same JSON value); a line that is not JSON (a torn write) is escaped for display.
        try:
            json.loads(line)
            line = json_visible(line)
        except ValueError:
            line = visible(line)
        io.out.write(line + "\n")
    else:
        try:
            rec = json.loads(line)
            text = render_record(rec) if isinstance(rec, dict) else line
        except ValueError:
            text = line
        # Commands, paths and client names in the trace are agent-controlled: shown, never executed
        # by the terminal (escape sequences, bidi tricks).
        io.out.write(visible(text) + "\n")
    io.out.flush()


def _fast_trace() -> Path | None:
    """The trace of the backend serving the cwd, read the way ``oh.fastpath`` reads session files (no psutil,
    no session dataclass: startup, docs/benchmarks.md); None when anything is unusual (the full rule decides)."""
    from ..fastpath import discover
    from ..protocol.paths import within

    found = discover.live_sessions()
    target = os.path.realpath(os.getcwd())
    best = None
    for s in found or []:
        if within(target, s["workspace"]) and (best is None or len(s["workspace"]) > len(best["workspace"])):
            best = s
    trace = best.get("trace") if best else None
    return Path(trace) if isinstance(trace, str) and trace else None


# _pick_trace's second value when no backend serves the cwd and it fell back to the newest trace: the
# records may be another workspace's, so run_logs says whose (a new user saw a stranger's or an empty one).
NEWEST = "newest"


def _pick_trace(instance: Optional[str], follow: bool = True) -> tuple[Path, Any]:
    if not instance and not follow:  # the session itself is needed only to see it stop (-f)
        fast = _fast_trace()
        if fast is not None:
            return fast, None
    from .. import sessions
    from ..config import paths

    if instance:
        live = sessions.find(instance)
        if len(live) == 1 and live[0].trace:
            return Path(live[0].trace), live[0]
        old = sorted(paths.traces_dir().glob(f"{instance}*.jsonl")) if paths.traces_dir().is_dir() else []
        if len(old) == 1:
            return old[0], None
        if len(live) > 1 or len(old) > 1:
            die(f"instance id {instance!r} is ambiguous.", 2, "Give more characters.")
        die(
            f"no trace for instance {instance!r}.",
            NOT_RUNNING,
            "List running backends with `oh status`; traces live in " + str(paths.traces_dir()),
        )
    s = sessions.for_workspace(os.getcwd())
    if s is not None and s.trace:
        return Path(s.trace), s
    traces = (
        sorted(paths.traces_dir().glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)
        if paths.traces_dir().is_dir()
        else []
    )
    if not traces:
        die("no trace yet: no backend has recorded any action.", NOT_RUNNING, "Start one with `oh start`.")
    return traces[0], NEWEST


def run_logs(
    io: Streams,
    *,
    instance: Optional[str] = None,
    follow: bool = False,
    lines: int = 50,
    json_: bool = False,
    job: Optional[str] = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """``oh logs``'s behaviour. -f ends when the backend stops or on KeyboardInterrupt (Ctrl-C, or a test's
    ``sleep``)."""
    path, session = _pick_trace(instance, follow)
    if not path.exists() and not follow:
        die(f"{path} does not exist yet (no action recorded).", NOT_RUNNING)
    if session == NEWEST:
        session = None
        io.note(f"no backend serves {os.getcwd()}: the newest trace, backend {path.stem}'s (`oh logs ID` picks one).")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            tail = f.readlines()
            pos = f.tell()
    except FileNotFoundError:
        tail, pos = [], 0
    if job:  # the trace is compact JSON: `"job_id":"j3"` appears verbatim in that job's records
        tail = [line for line in tail if f'"job_id":"{job}"' in line]
    for line in tail[-lines:] if lines else tail:
        _emit(io, line, json_)
    if not tail and not json_:
        io.note(f"backend {path.stem} has recorded no action{' of job ' + job if job else ''} yet.")
    if not follow:
        return 0
    from .. import sessions

    inode = path.stat().st_ino if path.exists() else None
    partial = ""
    try:
        while True:
            try:
                st = path.stat()
            except FileNotFoundError:
                st = None
            if st is not None and (st.st_ino != inode or st.st_size < pos):  # rotated or truncated
                inode, pos = st.st_ino, 0
            if st is not None and st.st_size > pos:
                with open(path, encoding="utf-8", errors="replace") as f:
                    f.seek(pos)
                    chunk = f.read()
                    pos = f.tell()
                partial += chunk
                *complete, partial = partial.split("\n")
                for line in complete:
                    if not job or f'"job_id":"{job}"' in line:
                        _emit(io, line, json_)
            elif session is not None and not sessions.is_alive(session):
                print(f"oh logs: backend {session.instance_id} stopped", file=io.err)
                return 0
            sleep(0.2)
    except KeyboardInterrupt:
        return 0
