"""Commands people type that run without typer or rich: ``oh config get KEY``, a bare ``oh logs``,
``oh approvals [--json]`` and ``oh doctor [--json]``.

``oh.cli.main`` offers the command line here after ``oh.fastpath`` declined it and before it builds
the typer app (whose import alone costs 10-20x the interpreter's start: docs/benchmarks.md,
"Commands people type"). ``main`` returns an exit code when it handled the command, None to hand
over to typer (help, completion, usage errors, anything else). Stdlib and oh's own light modules
only; the typer commands call the same ``run_*`` functions, so both paths print the same.
"""

from __future__ import annotations

import os

from ._io import Streams, report


def main(argv: list[str]) -> int | None:
    if os.environ.get("_OH_COMPLETE") or os.environ.get("OH_NO_FASTPATH"):
        return None
    if len(argv) == 3 and argv[:2] == ["config", "get"] and not argv[2].startswith("-"):
        io = Streams.system()
        try:
            return config_get(io, key=argv[2])
        except Exception as exc:  # noqa: BLE001 - report() re-raises what is not a command failure
            return report(io, exc)
    if argv == ["logs"]:  # the last 50 records of the cwd's backend (or the newest trace)
        from .logview import run_logs

        io = Streams.system()
        try:
            return run_logs(io)
        except Exception as exc:  # noqa: BLE001 - report() re-raises what is not a command failure
            return report(io, exc)
    if argv in (["approvals"], ["approvals", "--json"]):  # ask the backend without websockets
        from .approvalsview import fast_list

        io = Streams.system()
        try:
            return fast_list(io, json_=len(argv) == 2)
        except Exception as exc:  # noqa: BLE001 - report() re-raises what is not a command failure
            return report(io, exc)
    if argv in (["doctor"], ["doctor", "--json"]):
        from .doctorview import run_doctor

        io = Streams.system()
        try:
            return run_doctor(io, json_=len(argv) == 2)
        except Exception as exc:  # noqa: BLE001 - report() re-raises what is not a command failure
            return report(io, exc)
    return None


def config_get(io: Streams, *, key: str) -> int:
    """``oh config get``: one setting's effective value; a list setting one item per line (as
    ``oh config add`` takes them), so scripts can read it without parsing."""
    from ..config import settings as s
    from ..fastpath.exits import USAGE, OhError

    try:
        name = s.key(key).name
        value = s.Settings.load().get(name)
    except s.ConfigFileError:
        raise
    except s.SettingError as exc:
        raise OhError(str(exc), USAGE) from None
    if isinstance(value, list):
        for item in value:
            io.print(s.display(item))
        return 0
    io.print(s.display(value))
    return 0
