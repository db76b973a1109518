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

import io as _stringio
import json
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TextIO


@dataclass
class Streams:
    """stdin, stdout, stderr of one command, and whether stdout is a terminal (rich output)."""

    out: TextIO
    err: TextIO
    inp: TextIO
    tty: bool = False

    @classmethod
    def system(cls) -> "Streams":
        # Looked up at call time, not import time: tests and `_silence_output` replace sys.stdout.
        return cls(sys.stdout, sys.stderr, sys.stdin, sys.stdout.isatty())

    @classmethod
    def buffers(cls, stdin: str = "") -> "Streams":
        """In-memory streams for tests: read ``.out.getvalue()`` / ``.err.getvalue()`` afterwards."""
        return cls(_stringio.StringIO(), _stringio.StringIO(), _stringio.StringIO(stdin), False)

    def print(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def note(self, message: str) -> None:
        """A message for the user on stderr, prefixed like every oh message."""
        self.err.write(f"oh: {message}\n")
        self.err.flush()

    def hint(self, text: str) -> None:
        """The indented line under a message that says what to do next."""
        self.err.write(f"    {text}\n")
        self.err.flush()

    def json(self, obj: Any) -> None:
        self.out.write(json.dumps(obj, indent=2, default=str) + "\n")
        self.out.flush()

    def ndjson(self, obj: Any) -> None:
        self.out.write(json.dumps(obj, default=str, separators=(",", ":")) + "\n")
        self.out.flush()


@contextmanager
def bound(streams: Streams) -> Iterator[None]:
    """``sys.stdin/stdout/stderr`` are ``streams`` for the duration: for code shared with the fast path
    (``oh.fastpath.verbs``), which writes to the process's streams because it must stay stdlib-only and
    import nothing it does not use. A no-op for ``Streams.system()``."""
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = streams.inp, streams.out, streams.err
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def failure(exc: BaseException) -> tuple[str, int, str | None] | None:
    """(message, exit code, hint) for a failure a command may raise; None for anything else (a bug)."""
    from ..config.paths import UnsafePath
    from ..config.settings import SettingError
    from ..fastpath.exits import USAGE, OhError

    if isinstance(exc, OhError):
        return exc.message, exc.code, exc.hint
    if isinstance(exc, SettingError):  # a bad flag value, environment variable or config file
        return str(exc), USAGE, None
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
