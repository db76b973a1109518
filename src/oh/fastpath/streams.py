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

    def say(self, text: str) -> None:
        """A sentence on stdout: on a terminal wrapped between words (continuation lines indented), piped one line."""
        self.write(fit(self.out, text, ""))

    def note(self, message: str) -> None:
        """A message for the user on stderr, prefixed like every oh message."""
        self.err.write(fit(self.err, message, "oh: "))
        self.err.flush()

    def hint(self, text: str) -> None:
        """The indented line under a message that says what to do next."""
        self.err.write(fit(self.err, text, "    "))
        self.err.flush()

    def json(self, obj) -> None:
        import json  # only with --json: the fast path does not load it otherwise

        self.print(json.dumps(obj, indent=2, default=str))

    def ndjson(self, obj) -> None:
        import json

        self.print(json.dumps(obj, default=str, separators=(",", ":")))


def fit(stream, text: str, prefix: str) -> str:
    """``prefix + text``; on a terminal, wrapped at word boundaries to its width with continuation lines
    indented, instead of the terminal cutting words at its edge (80 columns: issue 30 item 13). Piped
    output stays one line per message (scripts and tests read it)."""
    line = prefix + text
    try:
        if not stream.isatty():
            return line + "\n"
        import os

        width = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return line + "\n"
    if width < 20 or all(len(part) <= width for part in line.split("\n")):
        return line + "\n"
    import textwrap

    out = []
    for i, part in enumerate(text.split("\n")):
        first = prefix if i == 0 else "    "
        out.append(
            textwrap.fill(
                part,
                width - 1,
                initial_indent=first,
                subsequent_indent="    ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n".join(out) + "\n"
