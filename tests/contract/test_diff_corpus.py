"""The shared diff corpus: Python's rule gives exactly the committed diffs (the extension's suite checks
the same file: extension/test/udiff.test.ts), and the committed file is what the generator writes."""

from __future__ import annotations

import difflib
import json

from oh.protocol import udiff
from oh.protocol.udiff import unified_diff
from oh.runtimes.local import editor

from . import gen_diff_corpus

CASES = json.loads(gen_diff_corpus.CORPUS.read_text(encoding="ascii"))


def test_corpus_is_large_and_current():
    assert len(CASES) >= 3000
    # Regenerating gives the same bytes: the corpus is neither stale nor edited by hand.
    assert gen_diff_corpus.render(gen_diff_corpus.corpus()) == gen_diff_corpus.CORPUS.read_text(encoding="ascii")


def test_every_case_matches():
    wrong = [
        k
        for k, c in enumerate(CASES)
        if unified_diff(c["path"], c["old"], c["new"], c["context"], c.get("budget", udiff.WORK_BUDGET)) != c["diff"]
    ]
    assert wrong == [], f"{len(wrong)} cases differ, first: {wrong[:5]}"


def test_the_local_editor_uses_this_diff():
    assert editor.unified_diff is unified_diff


def _apply(old: str, diff: str) -> str:
    """Applies a diff made by unified_diff: proves each diff is a correct patch, not only a stable text."""
    a = old.splitlines(keepends=True)
    lines = diff.splitlines(keepends=True)[2:]
    out: list[str] = []
    ai = 0
    k = 0
    while k < len(lines):
        head = lines[k]
        assert head.startswith("@@ -"), head
        start = int(head[4:].split(",")[0].split(" ")[0])
        old_len = head[4:].split(" ")[0]
        start = start if old_len.endswith(",0") else start - 1
        out.extend(a[ai:start])
        ai = start
        k += 1
        while k < len(lines) and not lines[k].startswith("@@ -"):
            mark, body = lines[k][0], lines[k][1:]
            if k + 1 < len(lines) and lines[k + 1] == "\\ No newline at end of file\n":
                body = body[:-1]
                k += 1
            if mark in " -":
                assert a[ai] == body
                ai += 1
            if mark in " +":
                out.append(body)
            k += 1
    return "".join(out + a[ai:])


def test_diffs_apply():
    for k, c in enumerate(CASES):
        if c["old"] != c["new"]:
            assert _apply(c["old"], c["diff"]) == c["new"], f"case {k}"


def test_small_edits_equal_plain_difflib():
    """Where nothing is cut (small files), the rule is exactly difflib.unified_diff plus the no-EOL marker."""
    old, new = "a\nb\nc\n", "a\nB\nc\nd"
    plain = "".join(
        l if l.endswith("\n") else l + "\n\\ No newline at end of file\n"
        for l in difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a/f", "b/f")
    )
    assert unified_diff("f", old, new) == plain
