"""The ``diff`` text of an ``edit`` observation: one definition, mirrored byte for byte by the
extension (extension/src/udiff.ts), so an agent sees the same diff whichever editor executed it.

The rule: cut the lines both texts share at the start and at the end (keeping ``context`` of them),
run difflib's ``SequenceMatcher`` (no junk function, ``autojunk`` on, as ``difflib.unified_diff`` uses
it) on what is left, and print the hunks in ``diff -u`` form with line numbers of the whole file. A line
without a final newline is followed by ``\\ No newline at end of file``. Cutting first keeps a one-line
edit of a large file O(size) instead of difflib's worst case, and it is part of the rule: difflib's
popular-element heuristic looks at the length of what it is given, so both languages must cut alike.

Bounded work (issue 18): difflib's matcher costs up to (lines of ``old``) x (occurrences of each in
``new``) per longest-match search, and it searches again in every gap it leaves, so a scattered change
of a large file with few distinct lines took seconds (80,000 lines of 800 values: 3.3 s) and worse
inputs take minutes. Each search is charged ``(ahi - alo) + sum of |where(old line)|`` over its range
(``where`` = the non-popular occurrences in ``new``), counted before it runs; once a search would take
the total past ``budget`` (``WORK_BUDGET``), that range and every range still queued are not searched:
they become plain replacements. The result is still a correct patch (coarser hunks), the same in both
languages (the charge is a pure function of the input), and it takes O(size + budget) time.

Pure: no I/O. tests/contract/diff-corpus.json holds a seeded corpus both test suites check.
"""

from __future__ import annotations

from difflib import Match, SequenceMatcher
from itertools import accumulate

NO_EOL = "\\ No newline at end of file\n"
# Charge units (see above) one diff may spend searching: about 1-2 s of CPython on this project's
# reference machine (docs/reliability.md), where 80,000 lines with one change at each end cost 8.1M.
WORK_BUDGET = 12_000_000


class _BudgetMatcher(SequenceMatcher[str]):
    """difflib's matcher whose longest-match searches stop being run once ``budget`` is spent."""

    def __init__(self, a: list[str], b: list[str], budget: int) -> None:
        super().__init__(None, a, b)
        self.budget = budget
        self.exhausted = False
        where: dict[str, list[int]] = self.b2j  # type: ignore[attr-defined]  # difflib's index of b; popular lines already removed (autojunk)
        # prefix[i] = charge of a[:i]: one per line plus its occurrences in b.
        self._prefix = [0, *accumulate(1 + len(where.get(line, ())) for line in a)]

    def find_longest_match(  # noqa: D102 - difflib's
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> Match:
        cost = self._prefix[len(self._prefix) - 1 if ahi is None else ahi] - self._prefix[alo]  # None: to the end
        if self.exhausted or cost > self.budget:
            self.exhausted = True
            return Match(alo, blo, 0)  # "no match": the range stays one replacement
        self.budget -= cost
        return super().find_longest_match(alo, ahi, blo, bhi)


def _range(start: int, stop: int) -> str:
    """``start,length`` of a hunk side, 1-based; an empty side names the line before it."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def _label(side: str, path: str) -> str:
    return f"{side}{path}" if path.startswith("/") else f"{side}/{path}"


def grouped(
    old: str, new: str, context: int = 3, budget: int = WORK_BUDGET
) -> tuple[list[str], list[str], list[list[tuple[str, int, int, int, int]]]]:
    """(old lines, new lines, hunks): each hunk is difflib's grouped opcodes with whole-file line indexes,
    computed by the rule above (shared head and tail cut first, then the budgeted matcher)."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    same_head = 0
    while same_head < len(a) and same_head < len(b) and a[same_head] == b[same_head]:
        same_head += 1
    same_tail = 0
    while (
        same_tail < len(a) - same_head
        and same_tail < len(b) - same_head
        and a[len(a) - 1 - same_tail] == b[len(b) - 1 - same_tail]
    ):
        same_tail += 1
    skip = max(same_head - context, 0)
    a_mid = a[skip : len(a) - max(same_tail - context, 0)]
    b_mid = b[skip : len(b) - max(same_tail - context, 0)]
    groups = [
        [(tag, skip + i1, skip + i2, skip + j1, skip + j2) for tag, i1, i2, j1, j2 in group]
        for group in _BudgetMatcher(a_mid, b_mid, budget).get_grouped_opcodes(context)
    ]
    return a, b, groups


def hunk_header(group: list[tuple[str, int, int, int, int]]) -> str:
    first, last = group[0], group[-1]
    return f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"


def hunk_lines(a: list[str], b: list[str], group: list[tuple[str, int, int, int, int]]) -> list[str]:
    """One hunk's body in ``diff -u`` form (no header)."""
    out: list[str] = []

    def emit(mark: str, lines: list[str]) -> None:
        for line in lines:
            out.append(mark + line if line.endswith("\n") else mark + line + "\n" + NO_EOL)

    for tag, i1, i2, j1, j2 in group:
        if tag == "equal":
            emit(" ", a[i1:i2])
            continue
        if tag in ("replace", "delete"):
            emit("-", a[i1:i2])
        if tag in ("replace", "insert"):
            emit("+", b[j1:j2])
    return out


def unified_diff(path: str, old: str, new: str, context: int = 3, budget: int = WORK_BUDGET) -> str:
    """``diff -u``-style text from ``old`` to ``new``; ``""`` when they are equal."""
    if old == new:
        return ""
    a, b, groups = grouped(old, new, context, budget)
    out = [f"--- {_label('a', path)}\n", f"+++ {_label('b', path)}\n"]
    for group in groups:
        out.append(hunk_header(group))
        out.extend(hunk_lines(a, b, group))
    return "".join(out)
