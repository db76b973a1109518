"""Bounded output buffer and the stream rewrite of bash's own message prefix."""

from __future__ import annotations

import random

from oh.runtimes.local.output import OutputBuffer, truncate_middle
from oh.runtimes.local.shell import BashShell


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


async def test_bash_prefix_rewritten_across_chunk_boundaries():
    shell = BashShell("/", {}, "/tmp/oh-local-x/run.sh", 10000)
    msg = "/tmp/oh-local-x/run.sh: line 1: foo: command not found\n/tmp/oh-local-x/run.sh is mine\n"
    data = msg.encode()
    for cut in range(len(data)):
        shell._idle = OutputBuffer(10000)
        shell._feed(data[:cut])
        shell._feed(data[cut:])
        shell._feed(b"", final=True)
        assert shell._idle.text() == "bash: line 1: foo: command not found\n/tmp/oh-local-x/run.sh is mine\n", cut
