"""``oh history``, ``oh diff ENTRY``, ``oh undo ENTRY [--to]``: the timeline of file changes (issue 29,
docs/protocol.md §3.15). Each is one ``history`` request on the backend's control leg; undo uses the
decider credential (the user's, from the session file), so it may merge three ways past other changes.
Paths, agent names, commands and diff lines are agent-controlled: printed through ``text.sanitize.visible``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import typer

from ._common import ERROR, UNREACHABLE, USAGE, die, pick_session, target_options
from ._io import Streams

_WORKSPACE, _INSTANCE = target_options()
_JSON = typer.Option(False, "--json", help="Machine-readable output (the backend's answer).")
_HINTS = {
    "HISTORY_OFF": "Turn it on: restart with `oh start --history` (or `oh config set history true`: on by default).",
    "NO_ENTRY": "`oh history` lists the entries.",
    "CONFLICT": "Or undo the later entries first (`oh history` lists them).",
}


def _send_control(session, frame: dict[str, Any]) -> dict[str, Any]:
    from ..launcher.control import control

    # A 1,000-file undo or a big diff takes a while on a slow disk: a longer wait than status's.
    return control(session, frame, token=session.decider_token or None, timeout=120.0)


def _request(io: Streams, workspace, instance, frame: dict[str, Any], json_: bool, control) -> dict[str, Any] | None:
    """The backend's answer, or None when a refusal was printed as JSON (the caller exits 1)."""
    from ..launcher.control import BackendUnreachable
    from ..text.sanitize import visible

    session = pick_session(workspace, instance)
    try:
        answer = control(session, {"type": "history", **frame})
    except BackendUnreachable as exc:
        die(str(exc), UNREACHABLE, "Is the backend still running? `oh status` shows it.")
    code = str(answer.get("error_id") or answer.get("error") or "")
    if answer.get("type") == "error" or answer.get("ok") is False:
        if json_:
            io.json(answer)
            return None
        die(
            visible(answer.get("message", "the backend refused the request")),
            USAGE if code == "BAD_REQUEST" else ERROR,
            _HINTS.get(code),
        )
    return answer


def history(
    agent: Optional[str] = typer.Option(None, "--agent", "-a", help="Only this agent's entries."),
    limit: int = typer.Option(200, "--limit", "-n", min=1, help="The last N entries."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """The timeline of file changes: entry, agent, what ran, files changed (+ created, - deleted)."""
    raise typer.Exit(
        run_history(Streams.system(), agent=agent, limit=limit, workspace=workspace, instance=instance, json_=json_)
    )


def run_history(
    io: Streams,
    *,
    agent: Optional[str] = None,
    limit: int = 200,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    control: Callable[[Any, dict[str, Any]], dict[str, Any]] = _send_control,
) -> int:
    from ..text.sanitize import visible

    frame: dict[str, Any] = {"op": "list", "limit": limit, **({"agent": agent} if agent else {})}
    answer = _request(io, workspace, instance, frame, json_, control)
    if answer is None:
        return ERROR
    if json_:
        io.json(answer)
        return 0
    rows = answer.get("entries") or []
    if not rows:
        io.print("No entries yet: nothing changed a file since history was turned on.")
        return 0
    io.print(f"{'ENTRY':>5}  {'AGENT':<14} {'KIND':<8} {'FILES':>5} {'+':>4} {'-':>4}  {'STATUS':<11} WHAT")
    for r in rows:
        flags = " (ambiguous)" if r.get("ambiguous") else ""
        flags += " (collected: not undoable; history_max_mb)" if r.get("collected") else ""
        flags += f" (+{r['ignored']} ignored, not stored)" if r.get("ignored") else ""
        name = visible(r.get("agent"))
        if r.get("by") == "agent" and name == "user":  # an agent that calls itself "user" is shown as an agent
            name = "agent 'user'"
        io.print(
            f"{r.get('id'):>5}  {name[:14]:<14} {visible(r.get('kind'))[:8]:<8} "
            f"{r.get('files', 0):>5} {r.get('created', 0):>4} {r.get('deleted', 0):>4}  "
            f"{visible(r.get('status'))[:11]:<11} {visible(r.get('what'))[:80]}{flags}"
        )
    io.print(
        "Show one with `oh diff ENTRY`; revert it with `oh undo ENTRY` (or everything since with `oh undo --to ENTRY`)."
    )
    return 0


def diff(
    entry: int = typer.Argument(..., metavar="ENTRY", min=1, help="An entry number from `oh history`."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Print what one entry changed as a unified diff (coloured on a terminal)."""
    raise typer.Exit(run_diff(Streams.system(), entry=entry, workspace=workspace, instance=instance, json_=json_))


def run_diff(
    io: Streams,
    *,
    entry: int,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    control: Callable[[Any, dict[str, Any]], dict[str, Any]] = _send_control,
) -> int:
    from ..text.sanitize import visible
    from .review import _colour

    answer = _request(io, workspace, instance, {"op": "show", "entry": entry}, json_, control)
    if answer is None:
        return ERROR
    if json_:
        io.json(answer)
        return 0
    e = answer.get("entry") or {}
    kind, what = visible(e.get("kind")), visible(e.get("what"))
    said = what if what.startswith(kind + " ") else f"{kind} {what}"  # a write's what is "write PATH" already
    files = _n(e.get("files", 0), "file")
    head = f"entry {e.get('id')}: {visible(e.get('agent'))} {said} ({files}, {visible(e.get('status'))})"
    io.print(f"\x1b[1m{head}\x1b[0m" if io.tty else head)
    for line in str(e.get("diff", "")).splitlines():
        io.print(_colour(line, io.tty))
    for p in e.get("ignored_paths") or []:
        io.print(f"# {visible(p)}: changed in an ignored tree (not stored)")
    return 0


def undo(
    entry: int = typer.Argument(..., metavar="ENTRY", min=1, help="An entry number from `oh history`."),
    to: bool = typer.Option(False, "--to", help="Undo this entry and every later one: back to before it."),
    include_ambiguous: bool = typer.Option(
        False, "--include-ambiguous", help="Also revert changes someone else may have made (kept by default)."
    ),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Revert what an entry changed, merging with later edits; on a conflict nothing changes (exit 1)."""
    raise typer.Exit(
        run_undo(
            Streams.system(),
            entry=entry,
            to=to,
            workspace=workspace,
            instance=instance,
            json_=json_,
            include_ambiguous=include_ambiguous,
        )
    )


def run_undo(
    io: Streams,
    *,
    entry: int,
    to: bool = False,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    control: Callable[[Any, dict[str, Any]], dict[str, Any]] = _send_control,
    include_ambiguous: bool = False,
) -> int:
    from ..text.sanitize import visible

    req = {"op": "undo", "entry": entry, "to": to, "include_ambiguous": include_ambiguous}
    answer = _request(io, workspace, instance, req, json_, control)
    if answer is None:
        return ERROR
    if json_:
        io.json(answer)
        return 0
    files = answer.get("files") or []
    _said_kept(io, answer.get("kept_ambiguous") or [])
    if answer.get("entry") is None:
        io.print(visible(answer.get("message", "Nothing to undo.")))
        return 0
    io.print(
        f"Undone {'entry' if len(answer.get('undoes') or []) == 1 else 'entries'} "
        f"{', '.join(map(str, answer.get('undoes') or []))}: {_n(len(files), 'file')} restored "
        f"(entry {answer['entry']}; `oh undo {answer['entry']}` redoes)."
    )
    for p in files[:50]:
        io.print(f"  {visible(p)}")
    if len(files) > 50:
        io.print(f"  ... and {len(files) - 50} more")
    return 0


def _said_kept(io: Streams, kept: list[Any]) -> None:
    """The ambiguous changes an undo kept (issue 36): oh cannot tell they were the entry's (another action, or
    the user, may have made them), so they stay unless the user includes them."""
    from ..text.sanitize import visible

    if not kept:
        return
    io.print(
        f"Kept {_n(len(kept), 'ambiguous change')} (someone else may have made them; "
        "`--include-ambiguous` reverts them too):"
    )
    for p in kept[:50]:
        io.print(f"  {visible(p)}")
    if len(kept) > 50:
        io.print(f"  ... and {len(kept) - 50} more")


def _n(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
