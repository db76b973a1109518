"""Issue 36 item 4: what opening beneath the workspace's descriptor costs a file action. In process (no sockets).

    .venv/bin/python benchmarks/file_actions_beneath.py [N]
    PYTHONPATH=/path/to/an/older/src .venv/bin/python benchmarks/file_actions_beneath.py [N]   # "before"

p50 and p90 (ms) over N actions of the local runtime's `read` (1 KiB), `write` (1 KiB overwrite), `write`
append, `stat` and `edit` str_replace, on ``a/b/c/file.txt`` (three directories deep: the walk's cost grows
with the depth), each way this code has: ``openat2`` (RESOLVE_BENEATH) and the component walk (forced).
Run against a tree without ``oh.beneath`` it measures that tree's actions once, as "before".
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

try:
    from oh import beneath
except ImportError:  # a tree from before issue 36
    beneath = None  # type: ignore[assignment]

_ids = itertools.count(1)
PATH = "a/b/c/file.txt"


def act(kind: str, **args):
    return parse_action({"id": next(_ids), "action": kind, "args": args})


async def percentiles(rt: LocalRuntime, n: int, make) -> tuple[float, float]:
    times = []
    for i in range(n):
        action = make(i)
        t = time.perf_counter()
        obs = await rt.execute(action, "bench")
        times.append((time.perf_counter() - t) * 1000)
        assert obs["observation"] != "error", obs
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9)]


def actions():
    line = "x" * 63 + "\n"
    edits = itertools.count()  # the file holds v<k>: each edit makes it v<k+1>, warm-up runs included

    def edit(_: int):
        k = next(edits)
        return act("edit", path="a/b/c/edit.txt", command="str_replace", old_str=f"v{k}\n", new_str=f"v{k + 1}\n")

    return {
        "read 1 KiB": lambda i: act("read", path=PATH),
        "write 1 KiB": lambda i: act("write", path=PATH, content=line * 16),
        "write append": lambda i: act("write", path="a/b/c/log.txt", content=line, mode="append"),
        "stat": lambda i: act("stat", path=PATH),
        "edit str_replace": edit,
    }


async def measure(n: int, label: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = os.path.join(tmp, "ws")
        os.makedirs(os.path.join(ws, "a", "b", "c"))
        with open(os.path.join(ws, PATH), "w") as f:
            f.write("x" * 1023 + "\n")
        with open(os.path.join(ws, "a/b/c/edit.txt"), "w") as f:
            f.write("head\nv0\ntail\n")
        rt = LocalRuntime(ws)
        try:
            for name, make in actions().items():
                await percentiles(rt, min(n, 50), make)  # warm-up
                p50, p90 = await percentiles(rt, n, make)
                print(f"| {label} | {name} | {p50:.3f} | {p90:.3f} |")
        finally:
            await rt.close()


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    print(f"N = {n}, Linux {os.uname().release}, Python {sys.version.split()[0]}")
    print("| way | action | p50 ms | p90 ms |\n|---|---|---|---|")
    if beneath is None:
        asyncio.run(measure(n, "before (check, then open by name)"))
        return
    ways = [("openat2", False), ("component walk", True)] if beneath.uses_openat2() else [("component walk", True)]
    for label, walk in ways:
        beneath.force_walk(walk)
        asyncio.run(measure(n, label))
    beneath.force_walk(False)


if __name__ == "__main__":
    main()
