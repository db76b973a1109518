"""``oh stop [INSTANCE | --workspace DIR | --all]``."""

from __future__ import annotations

from typing import Optional

import typer

from ._common import NOT_RUNNING, USAGE, complete_instances, die, pick_session, print_json


def stop(
    instance: Optional[str] = typer.Argument(None, help="Instance id (or a unique prefix).", autocompletion=complete_instances),
    workspace: Optional[str] = typer.Option(None, "--workspace", "-C", help="Stop the backend serving this directory (default: cwd)."),
    all_: bool = typer.Option(False, "--all", help="Stop every running backend."),
    timeout: float = typer.Option(10.0, "--timeout", min=0.0, help="Seconds to wait for a graceful stop before SIGTERM (then SIGKILL 5 s later)."),
    json_: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Stop backends: graceful shutdown request, then SIGTERM, then SIGKILL; removes the session file.

    Exit codes: 0 stopped · 2 conflicting arguments · 3 nothing to stop.
    """
    from .. import sessions
    from ..launcher.process import stop_backend

    if sum(bool(x) for x in (instance, workspace, all_)) > 1:
        die("give one of INSTANCE, --workspace or --all.", USAGE)
    if all_:
        targets = sessions.list_sessions()
        if not targets:
            if json_:
                print_json({"stopped": []})
                raise typer.Exit(NOT_RUNNING)
            die("no backend is running.", NOT_RUNNING)
    else:
        targets = [pick_session(workspace, instance)]
    stopped = []
    for s in targets:
        how = stop_backend(s, timeout=timeout)
        stopped.append({"instance_id": s.instance_id, "pid": s.pid, "workspace": s.workspace, "how": how})
        if not json_:
            text = {"shutdown": "stopped", "sigterm": "stopped with SIGTERM (it did not answer the shutdown request)",
                    "sigkill": "killed with SIGKILL (it ignored SIGTERM)", "gone": "was already gone; session file removed"}[how]
            typer.echo(f"{s.instance_id} ({s.workspace}) {text}")
    if json_:
        print_json({"stopped": stopped})
