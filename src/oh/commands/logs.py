"""``oh logs [INSTANCE] [-f] [-n N] [--json]``: a backend's JSONL trace, rendered or raw.

The typer command only; what it does is ``oh.commands.logview`` (typer-free: `oh logs` starts fast)."""

from __future__ import annotations

from typing import Optional

import typer

from ._common import complete_instances
from ._io import Streams
from .logview import _emit, _pick_trace, render_record, run_logs  # noqa: F401 - re-exported (tests, callers)


def logs(
    instance: Optional[str] = typer.Argument(
        None,
        help="Instance id or prefix (running or stopped). Default: the backend for cwd, else the newest trace.",
        autocompletion=complete_instances,
    ),
    follow: bool = typer.Option(
        False, "--follow", "-f", help="Keep printing new records until Ctrl-C (or the backend stops)."
    ),
    lines: int = typer.Option(50, "--lines", "-n", min=0, help="Show the last N records (0 = all)."),
    json_: bool = typer.Option(False, "--json", help="Raw JSONL records."),
    job: Optional[str] = typer.Option(
        None, "--job", help="Only the records of this job id (its run, job actions, job_started/job_finished)."
    ),
) -> None:
    """Show a backend's trace: every action with its outcome, exit code and duration (never file contents).

    Exit codes: 0 ok · 3 no trace found.
    """
    raise typer.Exit(run_logs(Streams.system(), instance=instance, follow=follow, lines=lines, json_=json_, job=job))
