"""Terminal output as a terminal shows it (docs/protocol.md §3.4.1, "Output").

A pty hands over the raw byte stream: ``\\r\\n`` line ends, colours, progress bars redrawn with ``\\r``
or cursor movement. The agent wants the text a person would read on the screen:

- ``clean(text)`` runs on every chunk (cheap, regex only): ``\\r\\n`` -> ``\\n``, SGR styling, OSC
  sequences (window titles, hyperlinks) and private mode switches (bracketed paste, cursor
  visibility) removed. It reports whether other control bytes remain.
- ``render(text)`` runs only on output that still holds them (``\\r``, backspace, cursor movement,
  erase): the part from the first line holding one is fed to pyte, a well-kept VT100 emulator
  (we write none of the emulation ourselves). The screen is as wide as the longest line (at least
  ``COLS``, the pty's width), so a long line is not wrapped into several, and as tall as the text,
  so nothing scrolls away. Lines before the first control byte are kept verbatim (fast on 20,000
  plain lines followed by one progress bar). Rendering starts ``ROWS`` lines before the first
  control byte, as far up as a cursor movement can reach on a real screen of that height.
"""

from __future__ import annotations

import re

COLS = 160
ROWS = 50

# ESC [ params m (SGR); OSC ... BEL/ST; ESC [ ? n h/l (private modes); ESC = / ESC > (keypad modes);
# ESC ( B and friends (charset selection).
_STRIP = re.compile(
    r"\x1b\[[0-9;:]*m"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b\[\?[0-9;]*[hl]"
    r"|\x1b[=>]"
    r"|\x1b[()][0-9A-Za-z]"
    r"|\x07"
)
# What still needs a terminal after _STRIP: CR (not part of CRLF), backspace, any other escape.
_NEEDS = re.compile(r"[\r\x08\x1b\x00-\x06\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")


# A job-control notice the shell itself prints ("[1]+  Done   sleep 1", zsh's "[1]  + killed  sleep 100"):
# bash prints them when the next foreground command ends, i.e. inside another command's output. The
# live view shows them; the agent's output never holds them (the `jobs` builtin still reports).
_JOB_NOTICE = re.compile(
    r"^\[\d+\][ +-]+ *(?:Done|Exit \d+|Killed|Terminated|Stopped|Hangup|Interrupt|Quit|Aborted|Broken pipe"
    r"|done|exit \d+|killed|terminated|suspended|hangup|interrupt|broken pipe)\b.*(?:\n|$)",
    re.M,
)


def drop_job_notices(text: str) -> str:
    if "[" not in text:
        return text
    return _JOB_NOTICE.sub("", text)


def clean(text: str) -> tuple[str, bool]:
    """(text with CRLF -> LF and styling removed, whether ``render`` is still needed)."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if "\x1b" in text or "\x07" in text:
        text = _STRIP.sub("", text)
    return text, _NEEDS.search(text) is not None


def render(text: str) -> str:
    """``text`` (already ``clean``ed) as a terminal would show it."""
    m = _NEEDS.search(text)
    if m is None:
        return text
    import pyte  # only here: most output never needs it

    # Cursor movement reaches at most the visible screen: start ROWS lines before the first control.
    start = m.start()
    for _ in range(ROWS):
        start = text.rfind("\n", 0, start)
        if start < 0:
            break
    start += 1
    head, body = text[:start], text[start:]
    lines = body.split("\n")
    width = max(COLS, max(len(line) for line in lines) + 1)
    screen = pyte.Screen(width, len(lines) + 1)
    screen.set_mode(pyte.modes.LNM)  # LF also returns the carriage, as the pty's ONLCR did
    stream = pyte.Stream(screen)
    stream.feed(body)
    rows = screen.display
    last = screen.cursor.y
    for y in range(len(rows) - 1, last, -1):
        if rows[y].strip():
            last = y
            break
    out = [row.rstrip() for row in rows[: last + 1]]
    rendered = "\n".join(out)
    if body.endswith("\n") and not rendered.endswith("\n") and screen.cursor.y > last:
        rendered += "\n"
    return head + rendered
