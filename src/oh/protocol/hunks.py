"""Hunks: a change cut into numbered pieces that the user accepts or rejects one by one (issue 39 item 2;
docs/protocol.md §3.11 and §3.15.1). Pure: no I/O.

A text change of one file is cut by the ``diff -u`` rule of ``oh.protocol.udiff`` (3 lines of context): each
``@@`` group is one hunk, so the hunks are exactly what ``oh review show`` prints. A change that is not a text
edit — a created or deleted file, binary content, a mode change, a rename — is one whole-file hunk. Hunks
are numbered 1.. across the files of a change, in path order.

``partial`` applies a subset of one file's hunks to its old text (the rest stay as they were): accepting
a set and rejecting its complement are the same operation. ``three_way`` is for a file changed since the
change was made: it merges the wanted text into the current one from the change's text as the base, with
the merge function the caller gives (the history's ``git merge-file``, §3.15): an overlap is a conflict and
nothing changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from .udiff import grouped, hunk_header, hunk_lines

TEXT, BINARY, CREATE, DELETE, MODE, RENAME = "text", "binary", "create", "delete", "mode", "rename"
KINDS = (TEXT, BINARY, CREATE, DELETE, MODE, RENAME)
MAX_HUNKS = 1_000_000  # a selection naming a larger number is no selection
_SPEC = re.compile(r"\A\s*([0-9]{1,7})\s*(?:-\s*([0-9]{1,7})\s*)?\Z")

Group = list[tuple[str, int, int, int, int]]


@dataclass(frozen=True, slots=True)
class Hunk:
    """One numbered piece of a change. ``a1:a2`` (old lines) becomes ``b1:b2`` (new lines) for a text hunk;
    a whole-file hunk has ``whole`` set."""

    n: int
    path: str
    kind: str
    header: str
    added: int
    removed: int
    diff: str
    a1: int = 0
    a2: int = 0
    b1: int = 0
    b2: int = 0

    @property
    def whole(self) -> bool:
        return self.kind != TEXT

    def row(self) -> dict[str, object]:
        """The protocol's shape (``review show``'s ``hunks``)."""
        return {
            "n": self.n,
            "path": self.path,
            "header": self.header,
            "kind": self.kind,
            "added": self.added,
            "removed": self.removed,
            "diff": self.diff,
        }


def _count(text: str | None) -> int:
    return 0 if not text else len(text.splitlines())


def whole(n: int, path: str, kind: str, summary: str, added: int = 0, removed: int = 0) -> Hunk:
    """A whole-file hunk (create, delete, binary, mode, rename): ``summary`` is its one-line description."""
    return Hunk(n, path, kind, f"@@ {kind} @@", added, removed, summary.rstrip("\n") + "\n")


def split(path: str, old: str | None, new: str | None, *, first: int = 1, context: int = 3) -> list[Hunk]:
    """The hunks of ``path`` going from ``old`` to ``new`` (None: the file is absent on that side), numbered
    from ``first``. Equal texts have none."""
    if old is None and new is None or old == new:
        return []
    if old is None:
        return [whole(first, path, CREATE, f"new file {path} ({_count(new)} lines)", added=_count(new))]
    if new is None:
        return [whole(first, path, DELETE, f"deleted file {path} ({_count(old)} lines)", removed=_count(old))]
    a, b, groups = grouped(old, new, context)
    out = []
    for i, group in enumerate(groups):
        body = hunk_lines(a, b, group)
        head = hunk_header(group)
        changed = [op for op in group if op[0] != "equal"]
        start, end = changed[0], changed[-1]
        out.append(
            Hunk(
                first + i,
                path,
                TEXT,
                head.rstrip("\n"),
                sum(op[4] - op[3] for op in changed),
                sum(op[2] - op[1] for op in changed),
                head + "".join(body),
                start[1],
                end[2],
                start[3],
                end[4],
            )
        )
    return out


def partial(old: str, new: str, hunks: Sequence[Hunk], chosen: Iterable[int]) -> str:
    """``old`` with the chosen text hunks of ``old`` → ``new`` applied and the others left out. ``hunks`` are
    ``split(…, old, new)``'s; whole-file hunks are the caller's (their file is either side entirely)."""
    pick = set(chosen)
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    for h in hunks:
        if h.whole or h.n not in pick:
            continue
        out.extend(a[at : h.a1])
        out.extend(b[h.b1 : h.b2])
        at = h.a2
    out.extend(a[at:])
    return "".join(out)


def three_way(current: str, base: str, wanted: str, merge: Callable[[str, str, str], str | None]) -> str | None:
    """The file's text when ``base`` (what the change left) is to become ``wanted`` but the file is now
    ``current``: ``wanted`` itself when nobody changed it, ``current`` when it already is ``wanted``, else
    ``merge(current, base, wanted)`` (None: the changes overlap, a conflict)."""
    if current == base or current == wanted:
        return wanted
    if base == wanted:
        return current
    return merge(current, base, wanted)


def parse_selection(spec: str) -> list[int]:
    """``"1,3-5"`` → [1, 3, 4, 5] (sorted, no repeats). Raises ValueError saying what is wrong."""
    out: set[int] = set()
    for part in spec.split(","):
        m = _SPEC.match(part)
        if m is None:
            raise ValueError(f"{part.strip() or '(empty)'!r} is not a hunk number or range like 2 or 3-5")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if lo < 1 or hi < lo or hi > MAX_HUNKS:
            raise ValueError(f"{part.strip()!r} is not a range of hunk numbers from 1")
        out.update(range(lo, hi + 1))
    return sorted(out)


def ranges(numbers: Iterable[int]) -> str:
    """[1, 2, 3, 5] → "1-3, 5" (how a message lists hunk numbers)."""
    nums = sorted(set(numbers))
    parts: list[str] = []
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ", ".join(parts)


def check_selection(hunks: Sequence[Hunk], numbers: Iterable[int], paths: Iterable[str] = ()) -> str | None:
    """A message naming what is wrong with a selection of hunk numbers and file paths (None: fine)."""
    valid = {h.n for h in hunks}
    bad = sorted(set(numbers) - valid)
    files = {h.path for h in hunks}
    unknown = sorted(set(paths) - files)
    if bad:
        have = ranges(valid) if valid else "none"
        return f"No hunk {ranges(bad)} in this change: its hunks are {have}."
    if unknown:
        return f"No file {', '.join(unknown)} in this change: its files are {', '.join(sorted(files))}."
    return None


def named(hunks: Sequence[Hunk], numbers: Iterable[int], paths: Iterable[str] = ()) -> set[int]:
    """The hunk numbers a selection names: the numbers, and every hunk of the named files."""
    named = set(paths)
    return set(numbers) | {h.n for h in hunks if h.path in named}


def partial_note(path: str, written: Iterable[int], total: int) -> str:
    """The end of the agent's observation when the user accepted part of a proposal (verbatim in the
    VS Code extension too)."""
    kept = sorted(set(written))
    left = [n for n in range(1, total + 1) if n not in set(kept)]

    def said(ns: list[int]) -> tuple[str, str]:  # "hunk 2 … was", "hunks 1, 3 … were" (as the extension says)
        return ("hunk" if len(ns) == 1 else "hunks") + " " + ", ".join(map(str, ns)), "was" if len(ns) == 1 else "were"

    (k, kv), (r, rv) = said(kept), said(left)
    return (
        f"[Review mode: the user accepted part of this change to {path}: {k} of {total} {kv} written; {r} {rv} "
        "rejected and not written. Read the file again before building on it.]"
    )
