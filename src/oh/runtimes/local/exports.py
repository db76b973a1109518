"""The agent shell's exports as names and values, read from its ``export -p`` snapshot without running it.

The engine host (enginehost.py) answers an ``exports`` request with these, so the VS Code extension can start the
agent's extra and one-shot shells with them, as the local runtime's group.py does (docs/protocol.md §3.4.1). The
snapshot file is written by the agent's shell, which may be sandboxed and may write it at will: it is parsed here as
data, never sourced (a shell that evaluated it unconfined, for an escalated one-shot, would run whatever the
confined agent wrote there). Names are checked like ``run``'s ``env`` names, and oh's own secrets never leave.
"""

from __future__ import annotations

import re
import shlex

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET = re.compile(r"^OH_.*(TOKEN|SECRET)|^OH_TOKEN$")
# Set by each shell for itself: a new shell has its own.
_OWN = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})
_PREFIX = re.compile(r"(?:declare|typeset|export)((?:\s+-[A-Za-z0-9]+)*)\s+")
# zsh's tied array (`export -T PATH path=( /usr/bin /bin )`): the scalar is the words joined with ':'.
_TIED = re.compile(r"\s+[A-Za-z_][A-Za-z0-9_]*=\(\s*")
_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def parse_exports(text: str) -> dict[str, str]:
    """``NAME -> value`` of each exported variable with a value in bash's or zsh's ``export -p`` output.

    Declarations without a value, bad names, oh's secrets and each shell's own (PWD, SHLVL, …) are left out;
    text that is not a declaration ends the parse (what was read so far is kept)."""
    out: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\n;":
            i += 1
        m = _PREFIX.match(text, i)
        if m is None:
            break
        i = m.end()
        name = NAME.match(text, i)
        if name is None:
            break
        i = name.end()
        if "T" in m.group(1):
            value, i = _tied(text, i)
            if value is None:
                break
            if name.group() not in _OWN and not _SECRET.match(name.group()):
                out[name.group()] = value
        elif i < n and text[i] == "=":
            value, i = _word(text, i + 1)
            if value is None:
                break
            if name.group() not in _OWN and not _SECRET.match(name.group()):
                out[name.group()] = value
        elif i < n and text[i] not in " \t\n;":
            break
    return out


def export_script(text: str, cwd: str) -> str:
    """What a new shell runs to start with these exports in ``cwd``: ``builtin export NAME=<quoted value>`` lines from
    the parsed snapshot (never the snapshot itself: the agent's shell may have written anything there), then a cd."""
    lines = [f"builtin export {k}={shlex.quote(v)}" for k, v in parse_exports(text).items()]
    # Quiet, as the sourced snapshot was: a read-only or special name of this shell just stays as it is.
    quiet = f"{{\n{chr(10).join(lines)}\n}} >/dev/null 2>&1\n" if lines else ""
    return f"{quiet}builtin cd -- {shlex.quote(cwd)}"


def _tied(text: str, i: int) -> tuple[str | None, int]:
    m = _TIED.match(text, i)
    if m is None:
        return None, i
    i, words = m.end(), []
    while i < len(text) and text[i] != ")":
        word, i = _word(text, i)
        if word is None:
            return None, i
        words.append(word)
        while i < len(text) and text[i] in " \t\n":
            i += 1
    return (":".join(words), i + 1) if i < len(text) else (None, i)


def _word(text: str, i: int) -> tuple[str | None, int]:
    """One shell word from ``i`` (quotes: '…', "…", $'…', backslash); (None, i) when a quote is not closed."""
    parts: list[str] = []
    n = len(text)
    while i < n and text[i] not in " \t\n;)":
        c = text[i]
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                return None, i
            parts.append(text[i + 1 : end])
            i = end + 1
        elif c == "$" and text.startswith("$'", i):
            s, i = _ansi_c(text, i + 2)
            if s is None:
                return None, i
            parts.append(s)
        elif c == '"':
            s, i = _double(text, i + 1)
            if s is None:
                return None, i
            parts.append(s)
        elif c == "\\" and i + 1 < n:
            parts.append(text[i + 1])
            i += 2
        else:
            parts.append(c)
            i += 1
    return "".join(parts), i


def _double(text: str, i: int) -> tuple[str | None, int]:
    parts: list[str] = []
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(parts), i + 1
        if c == "\\" and i + 1 < len(text) and text[i + 1] in '"\\$`\n':
            parts.append(text[i + 1] if text[i + 1] != "\n" else "")
            i += 2
            continue
        parts.append(c)
        i += 1
    return None, i


def _ansi_c(text: str, i: int) -> tuple[str | None, int]:
    """$'…' of bash (octal, \\x bytes) and zsh (\\C-x control, \\M-x meta bytes): bytes, read as UTF-8."""
    out = bytearray()
    n = len(text)
    while i < n:
        c = text[i]
        if c == "'":
            return out.decode("utf-8", "surrogateescape"), i + 1
        if c != "\\" or i + 1 >= n:
            out += c.encode("utf-8", "surrogateescape")
            i += 1
            continue
        byte, i = _escape(text, i + 1)
        out += byte
    return None, i


def _escape(text: str, i: int) -> tuple[bytes, int]:
    """The byte(s) of the escape whose letter is at ``i``, and where the text goes on."""
    e = text[i]
    i += 1
    if e in _ESCAPES:
        return _ESCAPES[e].encode(), i
    if e in "01234567":
        m = re.match(r"[0-7]{0,2}", text[i:])
        digits = e + (m.group() if m else "")
        return bytes([int(digits, 8) & 0xFF]), i + len(digits) - 1
    if e == "x":
        m = re.match(r"[0-9A-Fa-f]{1,2}", text[i:])
        return (bytes([int(m.group(), 16)]), i + m.end()) if m else (b"\\x", i)
    if e in "CM" and text.startswith("-", i) and i + 1 < len(text):
        if text.startswith("\\", i + 1) and i + 2 < len(text):  # \M-\C-x: a meta control character
            inner, j = _escape(text, i + 2)
        else:
            inner, j = text[i + 1].encode("utf-8", "surrogateescape"), i + 2
        b = inner[0] if inner else 0
        return bytes([(0x7F if b == 0x3F else b & 0x1F) if e == "C" else b | 0x80]), j
    return (e if e in "\\'\"?" else "\\" + e).encode("utf-8", "surrogateescape"), i
