"""``oh claims`` / ``oh claims release ID|--all``: the agents' claims on paths (issue 37, docs/protocol.md
§3.18). Listing needs any credential; releasing another agent's claim is the user's: sent with the session's
decider credential. Paths and names are agent-controlled: printed through ``text.sanitize.visible``."""

from __future__ import annotations

import time
from typing import Any, Optional

import typer

from ._common import ERROR, UNREACHABLE, USAGE, die, pick_session, target_options
from ._io import Streams

app = typer.Typer(
    help="The agents' claims on paths (another agent's write there is refused until the claim ends); "
    "`oh claims release ID` ends one.",
    no_args_is_help=False,
    invoke_without_command=True,
)

_WORKSPACE, _INSTANCE = target_options()
_JSON = typer.Option(False, "--json", help="Machine-readable output (the backend's answer).")


def _ask(io: Streams, workspace: Optional[str], instance: Optional[str], frame: dict[str, Any]) -> dict[str, Any]:
    from ..launcher.control import BackendUnreachable, control
    from ..text.sanitize import visible

    session = pick_session(workspace, instance)
    try:
        answer = control(session, {"type": "claims", **frame}, token=session.decider_token or None, timeout=10.0)
    except BackendUnreachable as exc:
        die(str(exc), UNREACHABLE, "Is the backend still running? `oh status` shows it.")
    if answer.get("type") == "error":
        code = str(answer.get("error_id", ""))
        die(
            visible(str(answer.get("message", "the backend refused the request"))),
            USAGE if code == "BAD_REQUEST" else ERROR,
        )
    return answer


@app.callback()
def claims(
    ctx: typer.Context,
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """List the live claims: id, agent, paths, how long they still hold."""
    if ctx.invoked_subcommand is None:
        raise typer.Exit(run_claims(Streams.system(), workspace=workspace, instance=instance, json_=json_))


def run_claims(
    io: Streams, *, workspace: Optional[str] = None, instance: Optional[str] = None, json_: bool = False
) -> int:
    answer = _ask(io, workspace, instance, {"op": "list"})
    if json_:
        io.json(answer)
        return 0
    io.out.write(render(answer.get("claims") or [], time.time()))
    return 0


def render(claims: list[dict[str, Any]], now: float) -> str:
    from ..text.sanitize import visible

    if not claims:
        return "No claims.\n"
    lines = []
    for c in claims:
        left = max(0, int(float(c.get("until") or 0) - now))
        paths = " ".join(visible(str(p)) for p in c.get("paths") or [])
        lines.append(f"{visible(str(c.get('claim_id')))}  {visible(str(c.get('name')))}  {left} s left  {paths}\n")
    return "".join(lines)


@app.command()
def release(
    claim_id: Optional[str] = typer.Argument(None, metavar="ID", help="A claim id from `oh claims` (e.g. k1)."),
    all_: bool = typer.Option(False, "--all", help="Release every claim."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
) -> None:
    """End a claim now (any agent's): its paths take every agent's writes again."""
    raise typer.Exit(
        run_release(Streams.system(), claim_id=claim_id, all_=all_, workspace=workspace, instance=instance)
    )


def run_release(
    io: Streams,
    *,
    claim_id: Optional[str] = None,
    all_: bool = False,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
) -> int:
    if (claim_id is None) == (not all_):
        die("Name one claim (`oh claims release k1`) or pass --all.", USAGE)
    frame: dict[str, Any] = {"op": "release", **({"claim_id": claim_id} if claim_id else {"all": True})}
    answer = _ask(io, workspace, instance, frame)
    released = answer.get("released") or []
    io.out.write(f"Released {len(released)} claim(s){': ' + ' '.join(map(str, released)) if released else ''}.\n")
    return 0 if released or all_ else ERROR
