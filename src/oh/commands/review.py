"""``oh review``: the local runtime's proposals (review mode, docs/protocol.md §3.11).

``oh review`` lists them, ``show ID`` prints the diff (coloured on a terminal), ``accept ID|--all``
writes them, ``reject ID --reason TEXT`` tells the agent why not. Each request is one frame on the
backend's control leg (token from the session file). Paths, agent names and diff lines are agent-
controlled: printed through ``text.sanitize.visible``.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

import typer

from ._common import ERROR, UNREACHABLE, USAGE, die, pick_session, print_json, target_options

app = typer.Typer(
    help="Review the agent's proposed changes (backend started with `oh start --review`, runtime local).",
    no_args_is_help=False,
    invoke_without_command=True,
)

_WORKSPACE, _INSTANCE = target_options()
_JSON = typer.Option(False, "--json", help="Machine-readable output (the backend's answer).")

# Control-leg refusals and what to do about them (exit 1 unless the request itself was malformed).
_HINTS = {
    "NO_PROPOSAL": "List the pending proposals with `oh review`.",
    "REVIEW_OFF": "Restart with `oh start --review` (or `oh config set review true`).",
    "NOT_HERE": "Use the diff editor's Accept / Reject in VS Code (or the notification).",
}


def _request(workspace: Optional[str], instance: Optional[str], frame: dict[str, Any], json_: bool) -> dict[str, Any]:
    from ..launcher.control import BackendUnreachable, control

    session = pick_session(workspace, instance)
    try:
        # The decider credential (issue 19): the agent token may list, never decide.
        answer = control(session, {"type": "review", **frame}, token=session.decider_token or None, timeout=10.0)
    except BackendUnreachable as exc:
        die(str(exc), UNREACHABLE, "Is the backend still running? `oh status` shows it.")
    if answer.get("type") == "error":
        if json_:
            print_json(answer)
            raise typer.Exit(USAGE if answer.get("error_id") == "BAD_REQUEST" else ERROR)
        from ..text.sanitize import visible

        code = str(answer.get("error_id", ""))
        die(visible(answer.get("message", "the backend refused the request")), USAGE if code == "BAD_REQUEST" else ERROR, _HINTS.get(code))
    return answer


def _age(seconds: Any) -> str:
    from ..text.fmt import fmt_duration

    return fmt_duration(float(seconds)) if isinstance(seconds, (int, float)) else "?"


@app.callback()
def review(
    ctx: typer.Context,
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """List the pending proposals: id, agent, kind, path, age."""
    if ctx.invoked_subcommand is not None:
        return
    from ..text.sanitize import visible

    answer = _request(workspace, instance, {"op": "list"}, json_)
    if json_:
        print_json(answer)
        return
    rows = answer.get("proposals") or []
    if not rows:
        typer.echo("No pending proposals.")
        return
    typer.echo(f"{'ID':<6} {'AGENT':<16} {'KIND':<18} {'AGE':>7}  PATH")
    for r in rows:
        kind = f"{r.get('kind')} {r.get('command')}"
        typer.echo(f"{visible(r.get('id')):<6} {visible(r.get('agent'))[:16]:<16} {visible(kind)[:18]:<18} {_age(r.get('age_s')):>7}  {visible(r.get('path'))}")
    typer.echo(f"Show one with `oh review show ID`; decide with `oh review accept ID|--all` or `oh review reject ID --reason TEXT` "
               f"(undecided ones time out after {answer.get('review_timeout', '?'):g} s).")


def _colour(line: str, tty: bool) -> str:
    from ..text.sanitize import visible

    # Tabs are harmless and common in code: kept; every other control character is escaped.
    safe = "\t".join(visible(part) for part in line.split("\t"))
    if not tty:
        return safe
    if line.startswith(("+++", "---")):
        return f"\x1b[1m{safe}\x1b[0m"
    if line.startswith("@@"):
        return f"\x1b[36m{safe}\x1b[0m"
    if line.startswith("+"):
        return f"\x1b[32m{safe}\x1b[0m"
    if line.startswith("-"):
        return f"\x1b[31m{safe}\x1b[0m"
    return safe


@app.command()
def show(
    proposal_id: str = typer.Argument(..., metavar="ID", help="A proposal id from `oh review` (e.g. p3)."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Print a proposal as a unified diff (coloured on a terminal)."""
    from ..text.sanitize import visible

    answer = _request(workspace, instance, {"op": "show", "id": proposal_id}, json_)
    if json_:
        print_json(answer)
        return
    p = answer.get("proposal") or {}
    tty = sys.stdout.isatty()
    head = f"{visible(p.get('id'))}: {visible(p.get('agent'))} proposes {visible(p.get('kind'))} {visible(p.get('command'))} of {visible(p.get('path'))} ({_age(p.get('age_s'))} ago)"
    typer.echo(f"\x1b[1m{head}\x1b[0m" if tty else head)
    for line in str(p.get("diff", "")).splitlines():
        typer.echo(_colour(line, tty))


def _report(answer: dict[str, Any], json_: bool) -> None:
    from ..text.sanitize import visible

    results = answer.get("results") or []
    if json_:
        print_json(answer)
    else:
        if not results:
            typer.echo("No pending proposals.")
        for r in results:
            typer.echo(f"{visible(r.get('id'))}: {visible(r.get('outcome'))}: {visible(r.get('message'))}")
    if any(r.get("outcome") not in ("accepted", "rejected") for r in results):
        raise typer.Exit(ERROR)  # stale, failed or unknown: nothing was written for those


@app.command()
def accept(
    proposal_id: Optional[str] = typer.Argument(None, metavar="[ID]", help="The proposal to accept (see `oh review`)."),
    all_: bool = typer.Option(False, "--all", help="Accept every pending proposal, oldest first."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Write a proposal (or all of them). A file changed since the proposal is not written (exit 1)."""
    if bool(proposal_id) == all_:
        die("give one proposal ID or --all.", USAGE, "`oh review` lists the pending proposals.")
    frame: dict[str, Any] = {"op": "accept", "all": True} if all_ else {"op": "accept", "id": proposal_id}
    _report(_request(workspace, instance, frame, json_), json_)


@app.command()
def reject(
    proposal_id: str = typer.Argument(..., metavar="ID", help="The proposal to reject (see `oh review`)."),
    reason: str = typer.Option("", "--reason", "-m", help="Why: the agent gets this text with the REJECTED error."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Reject a proposal; the agent gets REJECTED with your reason. Nothing is written."""
    _report(_request(workspace, instance, {"op": "reject", "id": proposal_id, "reason": reason}, json_), json_)

