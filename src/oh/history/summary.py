"""What a command changed, at a glance (issue 39 item 3): ``+N −M in K files`` from an entry's changes, its
contents out of the store. A binary file, or one whose content is not stored, counts as a file without lines."""

from __future__ import annotations

import difflib
from collections import Counter
from typing import Any, Iterable

from ..protocol import history as H
from .store import ObjectStore

EXACT_LINES = 2000  # up to this many lines a side: a real diff (difflib); above: line multisets (moves not counted)
MAX_BYTES = 4 * 1024 * 1024  # a side larger than this: counted as a file, its lines not read


def _lines(store: ObjectStore, s: H.FileState | None) -> list[bytes] | None:
    """The file's lines; [] when it did not exist; None when they cannot be counted (binary, not stored, big)."""
    if s is None:
        return []
    if s.kind != H.REGULAR or not s.stored or not s.hash or s.hash not in store or s.size > MAX_BYTES:
        return None
    data = store.get(s.hash)
    if b"\0" in data[:8192]:
        return None
    return data.splitlines()


def _count(a: list[bytes], b: list[bytes]) -> tuple[int, int]:
    if not a or not b:
        return len(b), len(a)
    if len(a) <= EXACT_LINES and len(b) <= EXACT_LINES:
        added = removed = 0
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if tag != "equal":
                removed += i2 - i1
                added += j2 - j1
        return added, removed
    ca, cb = Counter(a), Counter(b)
    return sum((cb - ca).values()), sum((ca - cb).values())


def counts(store: ObjectStore, changes: Iterable[H.Change]) -> dict[str, int]:
    """``{"files": K, "added": N, "removed": M}`` over these changes (a rename with the same content: 0 lines)."""
    files = added = removed = 0
    for c in changes:
        files += 1
        a, b = _lines(store, c.before), _lines(store, c.after)
        if a is None or b is None:
            continue
        plus, minus = _count(a, b)
        added, removed = added + plus, removed + minus
    return {"files": files, "added": added, "removed": removed}


def text(n: dict[str, Any]) -> str:
    """``+12 −3 in 2 files`` (the minus sign is U+2212, as a diffstat reads)."""
    k = n.get("files", 0)
    return f"+{n.get('added', 0)} \u2212{n.get('removed', 0)} in {k} file{'s' if k != 1 else ''}"
