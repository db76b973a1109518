"""Issue 11 measurements: N concurrent `run`s on one connection, and background-job overheads.

    python benchmarks/jobs_concurrency.py [--n 50] [--rounds 3]

Real backend (local runtime) on loopback, real bash. Prints one JSON object: wall time of N
concurrent `sleep 0.2; echo` runs on one connection (they overlap in extra shells: ~0.2 s + shell
start costs, not N x 0.2 s), the same N sent one after another, the latency of starting a
background job (the `run` answer) and of a `job` poll, and `job output` throughput from the spool.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time


async def main(n: int, rounds: int) -> dict:
    os.environ.setdefault("OH_HOME", tempfile.mkdtemp(prefix="oh-bench-"))
    from oh.backend.server import Backend, BackendConfig
    from oh.client import Client

    ws = tempfile.mkdtemp(prefix="oh-bench-ws-")
    b = Backend(
        BackendConfig(workspace=ws, write_session=False, max_shells=n + 1, repeat_limit=0), "bench-token-" + "x" * 20
    )
    await b.start()
    out: dict = {"n": n, "rounds": rounds}
    try:
        async with await Client.connect(f"ws://127.0.0.1:{b.port}", "bench-token-" + "x" * 20) as c:
            await c.run("true")
            conc, seq = [], []
            for _ in range(rounds):
                t0 = time.perf_counter()
                obs = await asyncio.gather(*(c.run(f"sleep 0.2; echo {i}") for i in range(n)))
                conc.append(time.perf_counter() - t0)
                assert all(o.exit_code == 0 for o in obs)
            t0 = time.perf_counter()
            for i in range(min(n, 10)):
                await c.run(f"sleep 0.2; echo {i}")
            seq.append((time.perf_counter() - t0) * n / min(n, 10))
            out["concurrent_wall_s"] = round(statistics.median(conc), 3)
            out["sequential_wall_s_extrapolated"] = round(seq[0], 3)
            starts, polls = [], []
            for i in range(20):
                t0 = time.perf_counter()
                started = await c.run_background(f"echo bg{i}")
                starts.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                await c.job_poll(started.job_id)
                polls.append(time.perf_counter() - t0)
                await c.job_wait(started.job_id, timeout=10)
            out["background_start_ms_median"] = round(statistics.median(starts) * 1000, 2)
            out["job_poll_ms_median"] = round(statistics.median(polls) * 1000, 2)
            big = await c.run_background("head -c 50000000 /dev/zero | tr '\\0' 'a'")
            await c.job_wait(big.job_id, timeout=120)
            t0 = time.perf_counter()
            offset, total = 0, 0
            while True:
                part = await c.job_output(big.job_id, offset=offset, limit=4 * 1024 * 1024)
                total += len(part.content)
                offset = part.extras["next_offset"]
                if part.extras["eof"]:
                    break
            dt = time.perf_counter() - t0
            out["spool_kept_bytes"] = total
            out["spool_dropped_bytes"] = part.extras["dropped"]
            out["job_output_MB_per_s"] = round(total / dt / 1e6, 1)
    finally:
        await b.stop("bench")
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    print(json.dumps(asyncio.run(main(a.n, a.rounds)), indent=2))
