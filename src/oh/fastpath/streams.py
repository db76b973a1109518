"""The streams a command runs with (what gh calls IOStreams): passed down to every verb, never swapped.

Stdlib only and import-free (``oh run`` loads it on its fast path): the typer commands use the same class
(``oh.commands._io`` re-exports it), so a verb shared by both paths writes to whatever streams its caller
gave it, and a test gives it ``Streams.buffers()``.
"""

from __future__ import annotations

import sys


class Streams:
    """stdin, stdout, stderr of one command, and whether stdout is a terminal (rich output)."""

    __slots__ = ("out", "err", "inp", "tty")

    def __init__(self, out, err, inp, tty: bool = False) -> None:
        self.out = out
        self.err = err
        self.inp = inp
        self.tty = tty

    def __repr__(self) -> str:
        return f"Streams(out={self.out!r}, err={self.err!r}, inp={self.inp!r}, tty={self.tty!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Streams) and (self.out, self.err, self.inp, self.tty) == (
            other.out,
            other.err,
            other.inp,
            other.tty,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value (as the dataclass it replaces)

    @classmethod
    def system(cls) -> "Streams":
        # Looked up at call time, not import time: tests and `ui.liveview.silence_output` replace sys.stdout.
        return cls(sys.stdout, sys.stderr, sys.stdin, sys.stdout.isatty())

    @classmethod
    def buffers(cls, stdin: str = "") -> "Streams":
        """In-memory streams for tests: read ``.out.getvalue()`` / ``.err.getvalue()`` afterwards."""
        from io import StringIO

        return cls(StringIO(), StringIO(), StringIO(stdin), False)

    def write(self, text: str) -> None:
        """``text`` as it is on stdout."""
        self.out.write(text)
        self.out.flush()

    def print(self, text: str = "") -> None:
        self.write(text + "\n")

    def note(self, message: str) -> None:
        """A message for the user on stderr, prefixed like every oh message."""
        self.err.write(f"oh: {message}\n")
        self.err.flush()

    def hint(self, text: str) -> None:
        """The indented line under a message that says what to do next."""
        self.err.write(f"    {text}\n")
        self.err.flush()

    def json(self, obj) -> None:
        import json  # only with --json: the fast path does not load it otherwise

        self.print(json.dumps(obj, indent=2, default=str))

    def ndjson(self, obj) -> None:
        import json

        self.print(json.dumps(obj, default=str, separators=(",", ":")))
