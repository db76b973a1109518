"""Writes tests/contract/diff-corpus.json: seeded random edits and the diff Python's rule gives for each.

Both test suites check it (tests/contract/test_diff_corpus.py, extension/test/udiff.test.ts). Rerun after
a deliberate change of the diff rule: ``.venv/bin/python tests/contract/gen_diff_corpus.py``; the pytest
side fails when the committed file no longer matches what this script would write.

The cases aim at the places two diff algorithms part ways: small alphabets (many equal lines to choose
between), repeated lines, CR/CRLF and Python's other line breaks, missing final newlines, non-ASCII,
and 200+ line middles where difflib's popular-line heuristic (autojunk) switches on.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "src"))

from oh.protocol.udiff import unified_diff  # noqa: E402

SEED = 20261123
CORPUS = HERE / "diff-corpus.json"
# A few short lines so random edits produce many equal lines and ambiguous alignments.
WORDS = ["a", "b", "c", "d", "", "}", "    x = 1", "é", "😀", "tab\there"]
ENDS = ["\n"] * 12 + ["\r\n", "\r", "\x0c", "\u2028", "\x85"]
PATHS = ["/w/a.txt", "/w/deep/b.py", "rel/c.md", "d"]


def line(rng: random.Random, words: list[str]) -> str:
    return rng.choice(words) + rng.choice(ENDS)


def text_of(lines: list[str], rng: random.Random) -> str:
    t = "".join(lines)
    if t and rng.random() < 0.15:  # a last line without newline
        t = t.rstrip("\n")
    return t


def edit(rng: random.Random, lines: list[str], words: list[str], edits: int) -> list[str]:
    out = list(lines)
    for _ in range(edits):
        op = rng.randrange(5)
        at = rng.randrange(len(out) + 1)
        if op == 0 or not out:
            out[at:at] = [line(rng, words) for _ in range(rng.randint(1, 3))]
        elif op == 1:
            del out[min(at, len(out) - 1) : min(at, len(out) - 1) + rng.randint(1, 3)]
        elif op == 2:
            out[min(at, len(out) - 1)] = line(rng, words)
        elif op == 3:  # move a line
            moved = out.pop(min(at, len(out) - 1))
            out.insert(rng.randrange(len(out) + 1), moved)
        else:  # duplicate a block
            i = min(at, len(out) - 1)
            out[i:i] = out[i : i + rng.randint(1, 4)]
    return out


def case(rng: random.Random, n_lines: tuple[int, int], words: list[str], edits: tuple[int, int]) -> dict:
    lines = [line(rng, words) for _ in range(rng.randint(*n_lines))]
    old = text_of(lines, rng)
    new = text_of(edit(rng, lines, words, rng.randint(*edits)), rng)
    context = 3 if rng.random() < 0.9 else rng.choice([0, 1, 2, 5])
    path = rng.choice(PATHS)
    return {"path": path, "context": context, "old": old, "new": new, "diff": unified_diff(path, old, new, context)}


def corpus() -> list[dict]:
    rng = random.Random(SEED)
    cases = []
    for _ in range(2600):  # small files, small edits
        cases.append(case(rng, (0, 20), WORDS[: rng.randint(2, len(WORDS))], (1, 4)))
    for _ in range(300):  # medium files, edits anywhere
        cases.append(case(rng, (20, 80), WORDS, (1, 8)))
    for _ in range(100):  # 200+ changed lines with popular lines: autojunk matters
        lines = [line(rng, ["a", "b", "", "}", f"u{rng.randrange(40)}"]) for _ in range(rng.randint(200, 300))]
        old = "".join(lines)
        changed = edit(rng, lines, ["a", "}", "z"], rng.randint(2, 6))
        changed[0:0] = ["head\n"]  # edits at both ends keep the whole file in the matched middle
        changed.append("tail\n")
        new = "".join(changed)
        cases.append(
            {"path": "/w/big.txt", "context": 3, "old": old, "new": new, "diff": unified_diff("/w/big.txt", old, new)}
        )
    cases.append({"path": "/w/same", "context": 3, "old": "x\n", "new": "x\n", "diff": ""})
    for _ in range(200):  # the work budget runs out (issue 18): which ranges are still searched must agree
        c = case(rng, (20, 250), WORDS[: rng.randint(2, 6)], (2, 12))
        c["budget"] = rng.choice([0, 1, 50, 200, 1000, 5000])
        c["diff"] = unified_diff(c["path"], c["old"], c["new"], c["context"], c["budget"])
        cases.append(c)
    return cases


def render(cases: list[dict]) -> str:
    """One case per line (reviewable diffs of the corpus), ASCII only (no encoding surprises)."""
    return "[\n" + ",\n".join(json.dumps(c, ensure_ascii=True) for c in cases) + "\n]\n"


if __name__ == "__main__":
    CORPUS.write_text(render(corpus()), encoding="ascii")
    print(f"wrote {CORPUS}")
