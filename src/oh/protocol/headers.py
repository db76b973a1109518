"""Text in the agent handshake headers (docs/protocol.md §2.1): ``X-OH-Client`` and ``X-OH-Workdir``
may hold any Unicode (a client named ``claude ✨``, a workspace ``/tmp/проект``), but an HTTP header
value is visible ASCII. A value that is not (or that starts with the marker, or has outer spaces) is
sent as RFC 8187's ext-value: ``UTF-8''`` + the percent-encoded UTF-8 bytes (``/`` kept as is);
anything else goes as it is, so plain values read the same to old and new backends.

Stdlib only: the fast path (no third-party imports) and the clients share it with the backend.
"""

from __future__ import annotations

MARKER = "UTF-8''"


def _plain(value: str) -> bool:
    return (
        all(" " <= ch <= "~" for ch in value)
        and value == value.strip()
        and value[: len(MARKER)].upper() != MARKER.upper()
    )


def encode_value(value: str) -> str:
    """The header value for ``value``: as is when it is plain visible ASCII, else ``UTF-8''…``."""
    if _plain(value):
        return value
    from urllib.parse import quote  # only for the rare non-plain value: the fast path stays lean

    return MARKER + quote(value, safe="/")


def decode_value(raw: str) -> str:
    """The text a header value stands for. Raises ValueError when an encoded value is not UTF-8."""
    if raw[: len(MARKER)].upper() != MARKER.upper():
        return raw
    from urllib.parse import unquote

    try:
        return unquote(raw[len(MARKER) :], encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise ValueError("its UTF-8'' value is not percent-encoded UTF-8") from None
