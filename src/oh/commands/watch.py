"""``oh watch [INSTANCE] [--plain|--json]``: the live view of a backend that already runs (started with
``oh start -d``, by an agent, a devcontainer or another terminal). Leaving it leaves the backend running.

Parse, pick the backend, then ``ui.liveview.watch`` (the same controller as the foreground ``oh start``,
with the policy that leaves the backend running)."""

from __future__ import annotations

from typing import Any, Optional

import typer

from ._common import NOT_RUNNING, USAGE, complete_instances, die, pick_session
from ._io import Streams

EPILOG = (
    "Keys (stdin a terminal): q leaves the view; y / n / a answer the oldest action waiting for your consent "
    "(allow / reject / always allow), as `oh approve` / `oh reject` would. Ctrl-C, q, SIGTERM and SIGHUP (the "
    "terminal closed) leave the view; the backend keeps running (`oh stop` stops it). "
    "Exit codes: 0 left the view (also by closing its terminal), or the backend stopped cleanly while watched · "
    "1 the backend died (crash, kill) or the view failed (the reader of its output went away, an internal error): "
    "the backend is left as it was · "
    "2 bad flag, or several backends run and none serves the current directory: give an INSTANCE · "
    "3 no backend is running (or none with that id)."
)


def watch(
    instance: Optional[str] = typer.Argument(
        None,
        help="Instance id or unique prefix (`oh status` lists them). Default: the only running backend, else the "
        "one serving the current directory.",
        autocompletion=complete_instances,
    ),
    workspace: Optional[str] = typer.Option(
        None, "--workspace", "-C", metavar="DIR", help="Watch the backend serving this directory instead."
    ),
    plain: bool = typer.Option(
        False,
        "--plain",
        help="One timestamped line per change instead of the full-screen view (the default without a TTY).",
    ),
    json_: bool = typer.Option(
        False, "--json", help="NDJSON: the backend's monitor frames (a snapshot first, then events), then `view_left`."
    ),
) -> None:
    """Watch a running backend live: connection state, agents, every action, consent questions.

    The live view of a foreground `oh start`, for a backend started with
    `oh start -d`, by an agent or in another terminal: first what ran before
    (recent actions, jobs, shell notes), then every action as it happens.
    Leaving it (q, Ctrl-C, closing the terminal) leaves the backend running;
    when the backend stops, the view says so and ends.
    """
    raise typer.Exit(run_watch(Streams.system(), instance=instance, workspace=workspace, plain=plain, json_=json_))


def run_watch(
    io: Streams,
    *,
    instance: Optional[str] = None,
    workspace: Optional[str] = None,
    plain: bool = False,
    json_: bool = False,
) -> int:
    """``oh watch``'s behaviour: the view's exit code (see ``EPILOG``)."""
    if plain and json_:
        die("--plain and --json exclude each other: give one.", USAGE)
    if instance and workspace:
        die(f"INSTANCE ({instance}) and --workspace exclude each other: give one.", USAGE)
    session = pick_watched(instance, workspace)
    mode = "json" if json_ else ("plain" if plain or not io.tty else "rich")
    from ..ui.liveview import watch as view

    return view(io, session, mode)


def pick_watched(instance: Optional[str], workspace: Optional[str]) -> Any:
    """The backend to watch, chosen like `oh stop` / `oh logs` choose: INSTANCE (id or prefix); --workspace;
    else the only running backend; else the one serving the current directory; else a usage error that
    lists them. Only this machine's backends: the view needs the session file (its token, the decider
    credential), never an `OH_URL` or connect file (a share credential cannot watch)."""
    import os

    from .. import sessions

    if instance:
        return pick_session(None, instance)
    running = sessions.list_sessions()
    if workspace:
        target = os.path.realpath(workspace)
        found = sessions.for_workspace(target)
        if found is None:
            ids = ", ".join(s.instance_id for s in running)
            die(
                f"no running backend serves {target}.",
                NOT_RUNNING,
                f"Running: {ids} (`oh watch ID`)." if running else "Start one with `oh start -d -C DIR`.",
            )
        return found
    if not running:
        die(
            "no backend is running: nothing to watch.",
            NOT_RUNNING,
            "Start one with `oh start -d` (then `oh watch`), or `oh start` for a backend with its own live view.",
        )
    if len(running) == 1:
        return running[0]
    here = sessions.for_workspace(os.path.realpath(os.getcwd()))
    if here is not None:
        return here
    rows = "\n".join(f"  {s.instance_id}  {s.runtime:<6}  {s.workspace}" for s in running)
    die(
        f"{len(running)} backends are running and none serves {os.getcwd()}; which one?\n{rows}",
        USAGE,
        f"Give its id: `oh watch {running[0].instance_id}` (a unique prefix is enough), or run `oh watch` in its "
        "workspace.",
    )
