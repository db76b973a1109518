"""Several agents, one workspace (issue 37): what the stale-write guard costs and what it saves.

    .venv/bin/python benchmarks/multiagent.py [--ops 1000] [--agents 16] [--updates 500] [--files 50]

1. Overhead: one agent, sequential write/edit round trips on a 1 KiB file through a real backend (local
   runtime, in this process), with the guard on and bypassed (the arbiter layer's ``execute`` replaced by its
   inner runtime's), in alternating blocks; p50 of each and the difference. Also the guard's own work per
   change (``file_state`` twice: the check and the new version) timed alone.
2. Lost updates: N agents (own connections) x M read-modify-write updates on F shared files, each update
   appending a unique token line through ``write``. ``force``: every write goes through (arbitration off);
   ``versions``: a STALE refusal is answered by reading again and redoing the update. Lost = accepted
   tokens missing from the final files. Throughput = accepted updates per second.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

TOKEN = "bench-token-0123456789abcdef"


async def _backend(workspace: str):
    from oh.backend.server import Backend, BackendConfig

    b = Backend(BackendConfig(workspace=workspace, runtime="local"), TOKEN)
    await b.start()
    return b


async def overhead(ops: int) -> dict:
    from oh.client import Client
    from oh.runtimes.arbiter import file_state

    ws = tempfile.mkdtemp(prefix="oh-bench-ma-")
    b = await _backend(ws)
    arb = b.stack.arbiter
    path = os.path.join(ws, "f.txt")
    body = "x" * 1023 + "\n"
    Path(path).write_text(body)
    times: dict[str, list[float]] = {"on": [], "off": []}
    layer: list[float] = []  # the guard's own time per change: the arbiter's execute minus its inner runtime's
    guarded = arb.execute
    inner = arb.inner
    inner_execute = inner.execute
    spent = [0.0]

    async def timed_inner(action, agent):
        t0 = time.perf_counter()
        try:
            return await inner_execute(action, agent)
        finally:
            spent[0] = time.perf_counter() - t0

    async def timed_guard(action, agent):
        t0 = time.perf_counter()
        obs = await guarded(action, agent)
        layer.append(time.perf_counter() - t0 - spent[0])
        return obs

    try:
        c = await Client.connect(f"ws://127.0.0.1:{b.port}", TOKEN, name="bench")
        await c.read("f.txt")
        for block in range(20):
            mode = "on" if block % 2 == 0 else "off"
            if mode == "off":
                arb.execute = inner_execute  # bypassed: the layer below answers directly
            else:
                arb.execute = timed_guard
                inner.execute = timed_inner
            for i in range(ops // 20):
                t0 = time.perf_counter()
                if i % 2:
                    obs = await c.write("f.txt", body)
                else:
                    obs = await c.edit("f.txt", "str_replace", old_str="x\n", new_str="y\n")
                times[mode].append(time.perf_counter() - t0)
                assert obs.kind != "error", obs
        await c.close()
    finally:
        await b.stop("bench")
    own = []
    for _ in range(2000):
        t0 = time.perf_counter()
        file_state(path)
        file_state(path)
        own.append(time.perf_counter() - t0)
    on, off = statistics.median(times["on"]) * 1e3, statistics.median(times["off"]) * 1e3
    return {
        "p50_on_ms": on,
        "p50_off_ms": off,
        "delta_ms": on - off,
        "file_reads_ms": statistics.median(own) * 1e3,
        "layer_p50_ms": statistics.median(layer) * 1e3,
    }


async def lost_updates(agents: int, updates: int, files: int, force: bool, seed: int = 7) -> dict:
    from oh.client import Client

    ws = tempfile.mkdtemp(prefix="oh-bench-ma-")
    names = [f"f{k:02d}.txt" for k in range(files)]
    for n in names:
        Path(ws, n).write_text("")
    b = await _backend(ws)
    accepted: dict[str, set[str]] = {n: set() for n in names}
    stale = 0

    async def agent(i: int) -> None:
        nonlocal stale
        rng = random.Random(seed * 1000 + i)
        c = await Client.connect(f"ws://127.0.0.1:{b.port}", TOKEN, name=f"a{i}")
        try:
            for u in range(updates):
                name, token = rng.choice(names), f"<{i:02d}-{u:04d}>"
                for _ in range(100):
                    seen = await c.read(name)
                    obs = await c.write(name, seen.content + token + "\n", force=force)
                    if obs.error_id == "STALE":
                        stale += 1
                        continue
                    assert obs.kind == "write", obs
                    accepted[name].add(token)
                    break
        finally:
            await c.close()

    try:
        t0 = time.perf_counter()
        await asyncio.gather(*(agent(i) for i in range(agents)))
        wall = time.perf_counter() - t0
    finally:
        await b.stop("bench")
    lost = sum(len(accepted[n] - set(Path(ws, n).read_text().split())) for n in names)
    total = sum(len(v) for v in accepted.values())
    return {"accepted": total, "lost": lost, "stale": stale, "seconds": wall, "per_s": total / wall}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=1000)
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--updates", type=int, default=500)
    ap.add_argument("--files", type=int, default=50)
    a = ap.parse_args()
    o = await overhead(a.ops)
    print(
        f"overhead: p50 write/edit {o['p50_on_ms']:.3f} ms guarded vs {o['p50_off_ms']:.3f} ms bypassed "
        f"({o['delta_ms'] * 1000:+.0f} µs); the guard layer's own time p50 {o['layer_p50_ms'] * 1000:.0f} µs per "
        f"change (its two file reads alone {o['file_reads_ms'] * 1000:.0f} µs)"
    )
    for force in (True, False):
        r = await lost_updates(a.agents, a.updates, a.files, force)
        print(
            f"{a.agents} agents x {a.updates} updates on {a.files} files, {'force' if force else 'versions'}: "
            f"{r['accepted']} accepted, {r['lost']} lost, {r['stale']} STALE retries, {r['seconds']:.1f} s, "
            f"{r['per_s']:.0f} accepted updates/s"
        )


if __name__ == "__main__":
    asyncio.run(main())
