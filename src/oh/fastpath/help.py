"""``oh --help`` (and bare ``oh``) without typer: the top-level help as typer draws it, from a table
cached at build time (``oh.fastpath.helpdata``, written by ``scripts/gen-help``).

Why: importing typer and rich costs 10-20x the interpreter's start, and ``oh --help`` is the first
command a new user types (docs/benchmarks.md, "Commands people type"). tests/cli/test_fast_help.py
checks that this output equals typer's, character for character, at several widths, and that the
cached table is current. Widths under ``MIN_WIDTH`` (where rich squeezes columns differently) and
anything unusual go to typer.
"""

from __future__ import annotations

import os
import textwrap

MIN_WIDTH = 60

_BOLD_CYAN, _YELLOW, _DIM, _RESET = "\x1b[1;36m", "\x1b[33m", "\x1b[2m", "\x1b[0m"


def width() -> int:
    """The width rich would use: TERMINAL_WIDTH (typer), COLUMNS, the terminal's size, else 80."""
    for var in ("TERMINAL_WIDTH", "COLUMNS"):
        value = os.environ.get(var, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    if os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return 80
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns or 80
        except (OSError, ValueError):
            continue
    return 80


def _wrap(text: str, size: int) -> list[str]:
    return textwrap.wrap(text, size, break_on_hyphens=False, break_long_words=True) or [""]


def _panel(title: str, rows: tuple[tuple[str, str], ...], total: int, color: bool) -> list[str]:
    w1 = max(len(name) for name, _ in rows)
    w2 = total - w1 - 6  # "│ " name "  " text " │"
    bar, end = ("│", "") if not color else (f"{_DIM}│{_RESET}", "")
    top = f"╭─ {title} " + "─" * (total - len(title) - 5) + "╮"
    lines = [f"{_DIM}{top}{_RESET}" if color else top]
    for name, text in rows:
        for i, seg in enumerate(_wrap(text, w2)):
            first = name.ljust(w1) if i == 0 else " " * w1
            if color and i == 0:
                first = f"{_BOLD_CYAN}{name.rstrip()}{_RESET}" + " " * (w1 - len(name.rstrip()))
            lines.append(f"{bar} {first}  {seg.ljust(w2)} {bar}{end}")
    bottom = "╰" + "─" * (total - 2) + "╯"
    lines.append(f"{_DIM}{bottom}{_RESET}" if color else bottom)
    return lines


def render(total: int, color: bool = False) -> str | None:
    """The help at ``total`` columns, or None when typer should draw it (too narrow, a word too long)."""
    from .helpdata import COMMANDS, DESCRIPTION, EPILOG, OPTIONS, USAGE

    if total < MIN_WIDTH:
        return None
    blank = " " * total
    usage = f" Usage: {USAGE}".ljust(total)
    if color:
        usage = usage.replace("Usage:", f"{_YELLOW}Usage:{_RESET}", 1)
    lines = [blank, usage, blank]
    lines += [f" {line}".ljust(total) for line in _wrap(DESCRIPTION, total - 2)]
    lines.append(blank)
    lines += _panel("Options", OPTIONS, total, color)
    lines += _panel("Commands", COMMANDS, total, color)
    lines.append(blank)
    lines += [f" {line}".ljust(total) for line in _wrap(EPILOG, total - 2)]
    lines.append(blank)
    if any(len(line) > total for line in lines if "\x1b" not in line):
        return None
    return "\n".join(lines) + "\n\n"


def main(argv: list[str]) -> int | None:
    """``oh --help`` / ``oh -h`` (stdout, exit 0) and bare ``oh`` (stderr, exit 2, a usage error)."""
    import sys

    bare = not argv
    stream = sys.stderr if bare else sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    color = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM", "") not in ("dumb", "unknown")
    text = render(width(), color=color)
    if text is None:
        return None
    stream.write(text)
    stream.flush()
    return 2 if bare else 0
