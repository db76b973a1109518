"""``oh doctor [--json]``: the typer part; the checks and the report are ``oh.commands.doctorview``'s."""

from __future__ import annotations

import typer

from ._io import Streams
from .doctorview import _session_checks, _vscode_checks, run_checks, run_doctor  # noqa: F401 - callers, tests


def doctor(
    json_: bool = typer.Option(False, "--json", help='Machine-readable: {"ok": bool, "checks": [...]}.'),
) -> None:
    """Check Python, dependencies, token storage, directories, sessions, VS Code and ports.

    Exit codes: 0 no check failed (warnings allowed) · 1 at least one check failed.
    """
    raise typer.Exit(run_doctor(Streams.system(), json_=json_))
