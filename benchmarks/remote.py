#!/usr/bin/env python3
"""Agents elsewhere (issue 28): the Unix socket vs loopback TCP, and `ssh -R` vs direct, side by side.

    .venv/bin/python benchmarks/remote.py            # full run
    .venv/bin/python benchmarks/remote.py --quick    # smoke variant, same figures

One backend (``python -m oh.backend --runtime local``, its Unix socket in a short temporary directory) serves
every route; this process is the agent (oh's async client). Routes:

  tcp     ws://127.0.0.1:PORT                      (what local agents use)
  unix    unix:<backend socket>                    (containers: a mounted socket)
  ssh-R   unix:<remote socket> forwarded by ``ssh -N -R remote:local`` to a real sshd on loopback (another machine)
  ssh-echo  a bare ``ssh host cat`` line echo: the link's own round trip, the yardstick for ssh-R

Figures: round trip of a 1 KiB ``read`` (p50, p99, sequential) and throughput (64 in flight). Goals
(docs/benchmarks.md §10): unix no slower than tcp; ssh-R within 1.5x of (tcp + ssh-echo).
Needs root for the test sshd (as tests/remote/sshd.py, which it reuses); without it the ssh rows are skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from oh.client.aio import Client  # noqa: E402


def start_backend(tmp: Path) -> tuple[subprocess.Popen, dict, str]:
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "one_kib.txt").write_text("x" * 1023 + "\n")
    token = secrets.token_urlsafe(32)
    env = {**os.environ, "OH_HOME": str(tmp / "home"), "OH_SOCKET_DIR": str(tmp / "s"), "OH_USER_SHELL": "0"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "oh.backend",
            "--workspace",
            str(ws),
            "--runtime",
            "local",
            "--token-stdin",
            "--no-trace",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(token + "\n")
    proc.stdin.close()
    ready = json.loads(proc.stdout.readline())
    assert ready.get("ready") and ready.get("socket"), ready
    return proc, ready, token


async def measure(url: str, token: str, path: str, n: int, inflight: int) -> tuple[list[float], float]:
    """(sequential round trips in s, actions/s with ``inflight`` in flight) over one connection."""
    async with await Client.connect(url, token) as c:
        for _ in range(20):  # warm-up
            await c.read(path)
        lat = []
        for _ in range(n):
            t0 = time.perf_counter()
            obs = await c.read(path)
            lat.append(time.perf_counter() - t0)
            assert obs.kind == "read", obs.content
        sem = asyncio.Semaphore(inflight)

        async def one() -> None:
            async with sem:
                await c.read(path)

        t0 = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(n * 2)))
        rate = n * 2 / (time.perf_counter() - t0)
    return lat, rate


def summary(lat: list[float], rates: list[float]) -> dict:
    lat = sorted(lat)
    return {
        "p50_ms": 1000 * statistics.median(lat),
        "p99_ms": 1000 * lat[int(0.99 * (len(lat) - 1))],
        "per_s": statistics.median(rates) if rates else 0.0,
        "n": len(lat),
    }


def interleaved(routes: dict[str, str], token: str, path: str, n: int, rounds: int) -> dict[str, dict]:
    """Every route measured in each round, in turn, so load on a shared machine hits them alike."""
    lat: dict[str, list[float]] = {k: [] for k in routes}
    rates: dict[str, list[float]] = {k: [] for k in routes}
    for _ in range(rounds):
        for name, url in routes.items():
            got, rate = asyncio.run(measure(url, token, path, n // rounds, 64))
            lat[name] += got
            rates[name].append(rate)
    return {k: summary(lat[k], rates[k]) for k in routes}


def ssh_echo(sshd, n: int) -> dict:
    """A bare `ssh host cat`: one line out, the same line back, n times (the link's own round trip)."""
    proc = subprocess.Popen(
        ["ssh", "-o", "BatchMode=yes", *sshd.options(), "root@127.0.0.1", "cat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        bufsize=0,
    )
    assert proc.stdin is not None and proc.stdout is not None
    line = b"x" * 1024 + b"\n"
    lat = []
    for i in range(n + 20):
        t0 = time.perf_counter()
        proc.stdin.write(line)
        got = b""
        while len(got) < len(line):
            got += proc.stdout.read(len(line) - len(got))
        if i >= 20:
            lat.append(time.perf_counter() - t0)
    proc.stdin.close()
    proc.wait(10)
    return summary(lat, [])


def forward(sshd, local_sock: str) -> tuple[subprocess.Popen, str]:
    remote = str(sshd.dir / "bench.sock")
    proc = subprocess.Popen(
        ["ssh", "-N", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindUnlink=yes",
         "-R", f"{remote}:{local_sock}", *sshd.options(), "root@127.0.0.1"],
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while not os.path.exists(remote):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError("the ssh -R forward did not come up")
        time.sleep(0.05)
    return proc, remote


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    n = 300 if args.quick else 3000
    tmp = Path(tempfile.mkdtemp(prefix="ohb", dir="/tmp"))
    proc, ready, token = start_backend(tmp)
    path = str(tmp / "ws" / "one_kib.txt")
    rows: dict[str, dict] = {}
    sshd = fwd = None
    try:
        routes = {"tcp": ready["url"], "unix": "unix:" + ready["socket"]}
        from remote import sshd as sshd_mod

        if sshd_mod.available():
            sshd = sshd_mod.Sshd()
            fwd, remote_sock = forward(sshd, ready["socket"])
            routes["ssh-R"] = "unix:" + remote_sock
        rows = interleaved(routes, token, path, n, 5)
        if sshd is not None:
            rows["ssh-echo"] = ssh_echo(sshd, n)
    finally:
        for p in (fwd, proc):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(10)
        if sshd is not None:
            sshd.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'route':10} {'p50 ms':>8} {'p99 ms':>8} {'actions/s (64 in flight)':>26}")
    for name, r in rows.items():
        print(f"{name:10} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {r['per_s']:26.0f}")
    if "ssh-R" in rows:
        bound = 1.5 * (rows["tcp"]["p50_ms"] + rows["ssh-echo"]["p50_ms"])
        print(f"ssh-R p50 {rows['ssh-R']['p50_ms']:.3f} ms vs 1.5 x (tcp + ssh echo) = {bound:.3f} ms")
    print(f"unix/tcp p50 ratio {rows['unix']['p50_ms'] / rows['tcp']['p50_ms']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
