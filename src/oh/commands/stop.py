"""``oh stop [INSTANCE | --workspace DIR | --all]``."""

from __future__ import annotations

from typing import Callable, Optional

import typer

from ._common import NOT_RUNNING, USAGE, complete_instances, die, pick_session
from ._io import Streams


def stop(
    instance: Optional[str] = typer.Argument(
        None, help="Instance id (or a unique prefix).", autocompletion=complete_instances
    ),
    workspace: Optional[str] = typer.Option(
        None, "--workspace", "-C", help="Stop the backend serving this directory (default: cwd)."
    ),
    all_: bool = typer.Option(False, "--all", help="Stop every running backend."),
    timeout: float = typer.Option(
        10.0, "--timeout", min=0.0, help="Seconds to wait for a graceful stop before SIGTERM (then SIGKILL 5 s later)."
    ),
    json_: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Stop backends: graceful shutdown request, then SIGTERM, then SIGKILL; removes the session file.

    Exit codes: 0 stopped · 1 a backend still runs after SIGKILL · 2 conflicting arguments · 3 nothing to stop.
    """
    raise typer.Exit(
        run_stop(Streams.system(), instance=instance, workspace=workspace, all_=all_, timeout=timeout, json_=json_)
    )


def run_stop(
    io: Streams,
    *,
    instance: Optional[str] = None,
    workspace: Optional[str] = None,
    all_: bool = False,
    timeout: float = 10.0,
    json_: bool = False,
    stop_backend: Optional[Callable] = None,
) -> int:
    """``oh stop``'s behaviour; ``stop_backend`` defaults to ``launcher.process.stop_backend``."""
    from .. import sessions

    if stop_backend is None:
        from functools import partial

        from ..launcher.process import stop_backend as service

        # "stopped" only once its pid has left the process table too (bounded: a parent that never reaps)
        stop_backend = partial(service, reap=5.0)
    given = [
        name for name, x in ((f"INSTANCE ({instance})", instance), ("--workspace", workspace), ("--all", all_)) if x
    ]
    if len(given) > 1:
        die(f"{' and '.join(given)} exclude each other: give only one of INSTANCE, --workspace or --all.", USAGE)
    if all_:
        targets = sessions.list_sessions()
        if not targets:
            if json_:
                io.json({"stopped": []})
                return NOT_RUNNING
            die("no backend is running.", NOT_RUNNING)
    else:
        targets = [pick_session(workspace, instance, to_stop=True)]
    stopped = []
    for s in targets:
        how = stop_backend(s, timeout=timeout)
        stopped.append({"instance_id": s.instance_id, "pid": s.pid, "workspace": s.workspace, "how": how})
        if json_:
            continue
        if how == "alive":
            io.note(
                f"{s.instance_id} ({s.workspace}) is still running (pid {s.pid}) after the shutdown request, "
                "SIGTERM and SIGKILL: it may be stuck in the kernel (D state in `ps`); check it with `ps -p "
                f"{s.pid} -o stat,cmd`."
            )
            continue
        text = {
            "shutdown": "stopped",
            "sigterm": "stopped with SIGTERM (it did not answer the shutdown request)",
            "sigkill": "killed with SIGKILL (it ignored SIGTERM)",
            "gone": "was already gone; session file removed",
            "zombie": (
                f"stopped; its exited process {s.pid} still waits to be reaped by its parent (a zombie: it runs "
                "nothing)"
            ),
        }[how]
        io.print(f"{s.instance_id} ({s.workspace}) {text}")
    if json_:
        io.json({"stopped": stopped})
    return 1 if any(x["how"] == "alive" for x in stopped) else 0
