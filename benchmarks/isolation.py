"""Issue 18 items 1-2: does one agent stall or bloat the backend for everyone? (docs/reliability.md §6)

    python benchmarks/isolation.py [--src DIR] [--only stalls|memory]

Starts a real backend process (``python -m oh.backend``, as the launcher does; ``--src`` runs another
checkout's code, e.g. main's, for a before/after) and measures with the issue's adversarial inputs:

stalls: another agent's ``stat`` latency while (a) an ``edit`` replaces a ~390 KB file of 80,000
        short lines (each one of 800 values) by another such text, (b) the same change is proposed in
        review mode, (c) ``oh review show`` diffs that proposal.
memory: backend RSS (psutil) before and after (a) an agent that never reads sends 20 / 60 reads of
        a 4 MiB file, (b) 2,000 pending proposals of 100 KB, (c) one 40 MiB proposal.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time

import psutil
from websockets.asyncio.client import connect

TOKEN = "bench-" + secrets.token_urlsafe(24)
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MIB = 1024 * 1024


def start(src: str | None, workspace: str, *extra: str) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(OH_HOME=tempfile.mkdtemp(prefix="oh-iso-home-"), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    if src:
        env["PYTHONPATH"] = src
    r, w = os.pipe()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "oh.backend",
            "--workspace",
            workspace,
            "--token-stdin",
            "--ready-fd",
            str(w),
            "--no-trace",
            *extra,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(w,),
        env=env,
    )
    os.close(w)
    proc.stdin.write((TOKEN + "\n").encode())
    proc.stdin.close()
    with os.fdopen(r, "rb") as f:
        ready = json.loads(f.readline())
    return proc, f"ws://127.0.0.1:{ready['port']}"


def rss(proc) -> float:
    return psutil.Process(proc.pid).memory_info().rss / MIB


def adversarial(seed: int) -> str:
    rng = random.Random(seed)
    values = [f"value-{i}" for i in range(800)]
    return "".join(rng.choice(values) + "\n" for _ in range(80_000))


async def bystander_latency(ws, until: asyncio.Future) -> float:
    """Max latency of another agent's stat (``ws``: connected beforehand), asked back to back until
    ``until`` is done."""
    worst = 0.0
    i = 0
    while not until.done():
        i += 1
        t0 = time.perf_counter()
        await ws.send(json.dumps({"id": i, "action": "stat", "args": {"path": "big.txt"}}))
        await ws.recv()
        worst = max(worst, time.perf_counter() - t0)
        await asyncio.sleep(0.005)
    return worst


async def timed(coro) -> float:
    t0 = time.perf_counter()
    await coro
    return time.perf_counter() - t0


async def stalls(src: str | None) -> dict:
    out = {}
    old, new = adversarial(1), adversarial(2)
    edit = {
        "id": 1,
        "action": "edit",
        "args": {"path": "big.txt", "command": "str_replace", "old_str": old, "new_str": new},
    }
    for review in (False, True):
        ws_dir = tempfile.mkdtemp(prefix="oh-iso-ws-")
        with open(os.path.join(ws_dir, "big.txt"), "w") as f:
            f.write(old)
        proc, url = start(src, ws_dir, *(["--review"] if review else []))
        try:
            async with (
                connect(url + "/v1/agent", additional_headers=AUTH, max_size=None) as slow,
                connect(url + "/v1/agent", additional_headers=AUTH) as by,
            ):
                if not review:

                    async def do_edit():
                        await slow.send(json.dumps(edit))
                        await slow.recv()

                    task = asyncio.ensure_future(timed(do_edit()))
                    await asyncio.sleep(0.05)
                    worst = await bystander_latency(by, task)
                    out["edit"] = {"slow_s": round(await task, 2), "bystander_stat_max_ms": round(worst * 1000, 1)}
                    continue
                async with connect(url + "/v1/monitor", additional_headers=AUTH, max_size=None) as mon:
                    await mon.recv()

                    async def opened():
                        await slow.send(json.dumps(edit))
                        while True:
                            ev = json.loads(await mon.recv())
                            if ev.get("event") == "proposal_opened":
                                return ev["proposal_id"]

                    task = asyncio.ensure_future(opened())
                    t0 = time.perf_counter()
                    await asyncio.sleep(0.05)
                    worst = await bystander_latency(by, task)
                    out["proposal"] = {
                        "slow_s": round(time.perf_counter() - t0, 2),
                        "bystander_stat_max_ms": round(worst * 1000, 1),
                    }
                    pid = task.result()
                async with connect(url + "/v1/control", additional_headers=AUTH, max_size=None) as ctl:

                    async def show():
                        await ctl.send(json.dumps({"type": "review", "op": "show", "id": pid}))
                        await ctl.recv()

                    task = asyncio.ensure_future(timed(show()))
                    await asyncio.sleep(0.05)
                    worst = await bystander_latency(by, task)
                    out["review_show"] = {
                        "slow_s": round(await task, 2),
                        "bystander_stat_max_ms": round(worst * 1000, 1),
                    }
        finally:
            proc.terminate()
            proc.wait(10)
    return out


async def settle(proc, seconds: float = 3.0) -> float:
    """RSS once it stops growing (sampled every 0.25 s for ``seconds`` without a new high)."""
    best, quiet = rss(proc), 0.0
    while quiet < seconds:
        await asyncio.sleep(0.25)
        now = rss(proc)
        if now > best + 0.5:
            best, quiet = now, 0.0
        else:
            quiet += 0.25
    return max(best, rss(proc))


async def memory(src: str | None) -> dict:
    out = {}
    ws_dir = tempfile.mkdtemp(prefix="oh-iso-ws-")
    with open(os.path.join(ws_dir, "four.bin"), "w") as f:
        f.write("x" * (4 * MIB))
    for n in (20, 60):
        proc, url = start(src, ws_dir)
        try:
            async with connect(url + "/v1/agent", additional_headers=AUTH) as warm:
                await warm.send(json.dumps({"id": 1, "action": "stat", "args": {"path": "four.bin"}}))
                await warm.recv()
            base = rss(proc)
            # max_queue=1: this client's own reader stops after one frame, so the backend's sends block.
            async with connect(url + "/v1/agent", additional_headers=AUTH, max_size=None, max_queue=1) as idle:
                for i in range(n):
                    await idle.send(json.dumps({"id": i + 1, "action": "read", "args": {"path": "four.bin"}}))
                peak = await settle(proc)
                async with connect(url + "/v1/agent", additional_headers=AUTH) as other:
                    t0 = time.perf_counter()
                    await other.send(json.dumps({"id": 1, "action": "stat", "args": {"path": "four.bin"}}))
                    await asyncio.wait_for(other.recv(), 10)
                    other_ms = (time.perf_counter() - t0) * 1000
            out[f"non_reader_{n}_reads_of_4MiB"] = {
                "rss_before_mib": round(base, 1),
                "rss_after_mib": round(peak, 1),
                "delta_mib": round(peak - base, 1),
                "other_agent_stat_ms": round(other_ms, 1),
            }
        finally:
            proc.terminate()
            proc.wait(10)
    for label, count, size in (("pending_2000_proposals_of_100KB", 2000, 100_000), ("one_40MiB_proposal", 1, 40 * MIB)):
        ws2 = tempfile.mkdtemp(prefix="oh-iso-ws-")
        proc, url = start(src, ws2, "--review")
        try:
            base = rss(proc)
            refused = 0
            async with connect(url + "/v1/agent", additional_headers=AUTH, max_size=None) as ag:
                body = "y" * size
                for i in range(count):
                    await ag.send(
                        json.dumps({"id": i + 1, "action": "write", "args": {"path": f"p{i}.txt", "content": body}})
                    )
                del body
                # refusals come back at once; accepted proposals wait (no answer)
                while True:
                    try:
                        msg = json.loads(await asyncio.wait_for(ag.recv(), 3))
                    except asyncio.TimeoutError:
                        break
                    refused += (msg.get("extras") or {}).get("error_id") == "BUSY"
                peak = await settle(proc)
                async with connect(url + "/v1/control", additional_headers=AUTH, max_size=None) as ctl:
                    await ctl.send(json.dumps({"type": "review", "op": "list"}))
                    pending = len(json.loads(await ctl.recv())["proposals"])
            out[label] = {
                "rss_before_mib": round(base, 1),
                "rss_after_mib": round(peak, 1),
                "delta_mib": round(peak - base, 1),
                "pending": pending,
                "refused_busy": refused,
            }
        finally:
            proc.terminate()
            proc.wait(10)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", help="run this source tree's oh (PYTHONPATH), e.g. /work/main/src")
    ap.add_argument("--only", choices=("stalls", "memory"))
    a = ap.parse_args()
    result = {"src": a.src or "this checkout", "python": sys.version.split()[0], "cpus": os.cpu_count()}
    if a.only in (None, "stalls"):
        result["stalls"] = asyncio.run(stalls(a.src))
    if a.only in (None, "memory"):
        result["memory"] = asyncio.run(memory(a.src))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
