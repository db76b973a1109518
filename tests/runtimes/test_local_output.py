"""The bounded output buffer."""

from __future__ import annotations

import random

from oh.runtimes.local.output import OutputBuffer, truncate_middle


def test_chunked_equals_one_shot():
    rng = random.Random(7)
    text = "".join(chr(rng.choice([97, 98, 10, 0x263A])) for _ in range(5000))
    for limit in (10, 101, 4999, 5000, 6000):
        buf = OutputBuffer(limit)
        i = 0
        while i < len(text):
            n = rng.randint(0, 700)
            buf.add(text[i : i + n])
            i += n
        assert buf.text() == truncate_middle(text, limit)
        assert len(buf) == len(text)
    assert truncate_middle("abcdef", 6) == "abcdef"
    assert truncate_middle("abcdefgh", 4) == "ab\n[... 4 characters truncated ...]\ngh"
