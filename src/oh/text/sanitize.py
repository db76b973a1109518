"""Make agent-controlled text safe to show in a terminal.

Agents (and editors) choose command lines, paths, client names and editor labels. Printed raw, an
escape sequence in such text could set the window title, clear the screen, move the cursor to
overwrite earlier lines, or hide itself; bidi overrides and zero-width characters can make a command
read differently from what runs. ``visible()`` turns every such character into a visible escape
(``\\x1b``, ``\\u202e``), so the user always sees what the agent sent. Used by the live view (rich,
plain) and ``oh logs`` alike; rich markup is a separate concern: callers wrap the result in
``rich.text.Text`` (never ``Console.print(str)``), so ``[link=...]`` stays literal text.
"""

from __future__ import annotations

import re

# C0 controls (including \n, \t: every line we print is one line), DEL, C1 controls (0x9b is a
# one-byte CSI for some terminals), and format characters that change how text reads: bidi
# embeddings/overrides/isolates and marks, zero-width spaces/joiners, word joiner, invisible
# operators, BOM, interlinear annotations, line/paragraph separators, soft hyphen, tag characters;
# and lone surrogates (JSON can carry them; printing one would raise UnicodeEncodeError).
_FORMAT = (
    "\x7f-\x9f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\u3164\ud800-\udfff\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"
)
_UNSAFE = re.compile(f"[\x00-\x1f{_FORMAT}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: object) -> str:
    """``text`` as one line with every control/format character shown as an escape."""
    s = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_escape, s)


_UNSAFE_IN_JSON = re.compile(f"[{_FORMAT}]")


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    hi, lo = divmod(code - 0x10000, 0x400)  # JSON spells astral characters as a surrogate pair
    return f"\\u{0xD800 + hi:04x}\\u{0xDC00 + lo:04x}"


def json_visible(line: str) -> str:
    """A JSON text with the characters JSON encoders leave raw (DEL, C1, bidi, zero-width) escaped as
    ``\\uXXXX``: the same JSON value, safe to print. C0 controls cannot occur raw inside JSON strings."""
    return _UNSAFE_IN_JSON.sub(_json_escape, line)
