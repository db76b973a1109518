"""Text encodings of files: UTF-8 first, else a detected legacy encoding, else binary.

The rule follows the OpenHands file editor (so both runtimes read the same files as text): UTF-8
(a BOM makes it ``utf-8-sig``), else ``charset-normalizer``'s guess (when confident, or when it is
one of the common codecs), else cp1252 / latin-1 /
cp1251; a guess counts only if the whole file decodes and has no control bytes that never occur in
text (NUL, \\x01-\\x08, \\x0e-\\x1f, DEL). Everything else is binary.
"""

from __future__ import annotations

import codecs
import re

# the detector's sample (1 MiB cost 110 ms per read, 64 KiB 54 ms: benchmarks/local_run_options.py); the whole
# file must then decode
SNIFF_BYTES = 64 * 1024
_BINARY_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_FALLBACKS = ("cp1252", "latin-1", "cp1251")
# charset-normalizer speaks IANA names; Python codec names keep messages and writes consistent.
_ALIASES = {
    "windows-1252": "cp1252",
    "windows-1251": "cp1251",
    "iso-8859-1": "latin-1",
    "iso8859_1": "latin-1",
    "ascii": "utf-8",
}


def _clean(text: str) -> bool:
    return _BINARY_CONTROL.search(text) is None


def decode(data: bytes) -> tuple[str, str] | None:
    """(text, encoding) or None for binary data."""
    if data.startswith(codecs.BOM_UTF8):
        try:
            return data.decode("utf-8-sig"), "utf-8-sig"
        except UnicodeDecodeError:
            pass
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            # NUL is valid UTF-8 but never text; other control bytes (ANSI escapes in logs) are fine.
            return (text, "utf-8") if "\x00" not in text[:8192] else None
    candidates: list[str] = []
    guess = _guess(data[:SNIFF_BYTES])
    if guess:
        candidates.append(guess)
    candidates += [c for c in _FALLBACKS if c not in candidates]
    for enc in candidates:
        try:
            text = data.decode(enc)
        except (UnicodeDecodeError, LookupError):
            continue
        if _clean(text):
            return text, enc
    return None


def _guess(sample: bytes) -> str | None:
    """The detector's encoding when it is confident (> 0.9), or a low-confidence guess only when it
    names a common codec: for short texts it also proposes exotic ones that decode to mojibake."""
    try:
        import charset_normalizer
    except ImportError:  # pragma: no cover - a declared dependency; the fallbacks still work
        return None
    results = charset_normalizer.from_bytes(sample)
    best = results.best()
    if best is None:
        return None
    # Single-byte Latin code pages often tie (same chaos, same coherence): French or German text is
    # as "clean" in cp1250 as in cp1252, and the detector then lists cp1250 first (alphabetical),
    # turning "crème" into "crčme". On a tie the most widespread codec wins.
    tied = [_name(m.encoding) for m in results if m.chaos == best.chaos and m.coherence == best.coherence]
    if len(tied) > 5:
        return None  # a few bytes that fit everything: no information, the fallback order decides
    name = next((c for c in _FALLBACKS if c in tied), _name(best.encoding))
    if 1.0 - best.chaos > 0.9:
        return name
    return name if name in _FALLBACKS else None


def _name(encoding: str) -> str:
    name = str(encoding).lower().replace("_", "-")
    name = {"iso8859-1": "latin-1"}.get(name, name)
    return _ALIASES.get(name, name)


def normalize(name: str) -> str:
    """A codec name as Python spells it (``latin-1`` for ``ISO-8859-1``)."""
    try:
        return codecs.lookup(name).name
    except LookupError:
        return name
