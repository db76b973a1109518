"""Costs of the local runtime's run options and encodings, in process (no sockets): medians over N runs.

    .venv/bin/python benchmarks/local_run_options.py [N]

- run `true` (the baseline; its metadata now includes user, host and python -- cached lookups);
- run `true` with one `env` variable (one extra internal command through the shell's pipe);
- run with `reset` (kill + fresh bash);
- read of a 1 MiB UTF-8 file vs a 1 MiB latin-1 file (charset detection on a 1 MiB sample);
- read with `encoding: base64` of a 1 MiB binary file.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import time

from oh.protocol.events import parse_action
from oh.runtimes.local import LocalRuntime

_ids = itertools.count(1)


def act(kind: str, **args):
    return parse_action({"id": next(_ids), "action": kind, "args": args})


async def median_ms(rt: LocalRuntime, n: int, make) -> float:
    times = []
    for _ in range(n):
        action = make()
        t = time.perf_counter()
        obs = await rt.execute(action, "bench")
        times.append((time.perf_counter() - t) * 1000)
        assert obs["observation"] != "error", obs
    return statistics.median(times)


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as ws:
        with open(os.path.join(ws, "utf8.txt"), "w", encoding="utf-8") as f:
            f.write(("héllo wörld " * 10 + "\n") * 8700)
        with open(os.path.join(ws, "latin.txt"), "wb") as f:
            f.write((("caf\xe9 cr\xe8me br\xfbl\xe9e " * 5) + "\n").encode("latin-1") * 9000)
        with open(os.path.join(ws, "blob.bin"), "wb") as f:
            f.write(os.urandom(1 << 20))
        rt = LocalRuntime(ws)
        try:
            await rt.execute(act("run", command="true"), "bench")  # warm the shell
            rows = [
                ("run true", await median_ms(rt, n, lambda: act("run", command="true"))),
                (
                    "run true + env (1 var)",
                    await median_ms(rt, n, lambda: act("run", command="true", env={"SECRET": "x" * 32})),
                ),
                (
                    "run true + reset",
                    await median_ms(rt, max(n // 4, 5), lambda: act("run", command="true", reset=True)),
                ),
                ("read 1 MiB UTF-8", await median_ms(rt, max(n // 4, 5), lambda: act("read", path="utf8.txt"))),
                (
                    "read 1 MiB latin-1 (detected)",
                    await median_ms(rt, max(n // 4, 5), lambda: act("read", path="latin.txt")),
                ),
                (
                    "read 1 MiB binary, base64",
                    await median_ms(rt, max(n // 4, 5), lambda: act("read", path="blob.bin", encoding="base64")),
                ),
            ]
        finally:
            await rt.close()
    for name, ms in rows:
        print(f"{name:32s} {ms:8.2f} ms")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
