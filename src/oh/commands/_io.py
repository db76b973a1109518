"""The streams a command runs with, and the one mapping from a failure to its output and exit code.

Every command is two parts (the way ``gh`` builds its commands): the typer function parses options
and calls ``run_<command>(io, ...)``, which takes its inputs and a ``Streams`` (and, where a test
wants another one, the services it uses as keyword arguments) and returns the exit code. A test
calls ``run_<command>`` through ``call`` with ``Streams.buffers()`` and reads what it wrote; ``oh``
itself passes ``Streams.system()``. A failure is raised (``OhError`` with its exit code, or a
``SettingError`` / ``UnsafePath`` from config) and turned into output once: ``failure`` here, used by
``oh.cli.main`` and by ``call``.

Stdlib only: ``oh.cli.main`` imports this on every typer-path invocation.
"""

from __future__ import annotations

from ..fastpath.streams import Streams  # the one Streams class: the fast path's verbs take it too

TYPE_CHECKING = False  # typing costs ~20 ms to import; these names serve annotations (and mypy) only
if TYPE_CHECKING:
    from typing import Any, Callable

__all__ = ["Streams", "failure", "report", "call"]


def failure(exc: BaseException) -> tuple[str, int, str | None] | None:
    """(message, exit code, hint) for a failure a command may raise; None for anything else (a bug)."""
    from ..config.paths import CannotWrite, UnsafePath
    from ..config.settings import SettingError
    from ..fastpath.exits import USAGE, OhError

    if isinstance(exc, OhError):
        return exc.message, exc.code, exc.hint
    if isinstance(exc, SettingError):  # a bad flag value, environment variable or config file
        return str(exc), USAGE, None
    if isinstance(exc, CannotWrite):  # a read-only OH_HOME, a file where a directory should be
        return f"cannot write {exc.path}: {exc.reason}.", 1, f"fix: {exc.fix}"
    if isinstance(exc, UnsafePath):  # another user could control an oh directory or file: refuse, say how to fix
        return f"refusing to use {exc.path}: {exc.problem}.", 1, f"fix: {exc.fix}"
    return None


def report(streams: Streams, exc: BaseException) -> int:
    """Write a failure as ``oh.cli.main`` does and return its exit code; re-raise anything else."""
    found = failure(exc)
    if found is None:
        raise exc
    message, code, hint = found
    streams.note(message)
    if hint:
        streams.hint(hint)
    return code


def call(run: Callable[..., int | None], streams: Streams, **options: Any) -> int:
    """Run ``run(streams, **options)`` the way ``oh`` would: its exit code, or the code of what it raised
    (printed to ``streams.err``). For in-process tests; ``oh`` itself goes through ``oh.cli.main``."""
    try:
        return run(streams, **options) or 0
    except Exception as exc:  # noqa: BLE001 - report() re-raises what is not a command failure
        return report(streams, exc)
