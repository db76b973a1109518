"""A `run true` through a local-runtime backend under the default sandbox: the backend's CPU per action and the
round trip, beside `subprocess.run(["true"])`, for one or more source trees side by side (issue 41: P3 regressed
from ~1.2× to 3.8× `subprocess.run` once the sandbox was on).

    .venv/bin/python benchmarks/local_action_cost.py [-n 200] [--src DIR ...] [--rounds 2]

Each tree's backend is started with `oh start -d` from that tree (PYTHONPATH), in a scratch OH_HOME and
workspace, and driven by `oh.client.SyncClient` from this process. The backend's CPU time comes from
/proc/PID/stat (utime + stime) around N actions after a warm-up: unlike wall-clock time it hardly moves with
the load of a busy 2-core machine, though it grows with what the backend does per action (the defect it found
read every process's /proc/*/stat, so it also grows with the number of processes on the machine, printed).
Rounds alternate the trees so they meet the same minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(src: str, n: int) -> dict:
    tmp = tempfile.mkdtemp(prefix="oh-bench-")
    ws = os.path.join(tmp, "ws")
    os.mkdir(ws)
    env = dict(os.environ, OH_HOME=os.path.join(tmp, "h"), PYTHONPATH=src, OH_USER_SHELL="0")
    started = subprocess.run(
        [sys.executable, "-m", "oh", "start", "-d", "--json", "--no-open", "-C", ws],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(started.stdout)
    with open(os.path.join(tmp, "h", "sessions", info["instance_id"] + ".json")) as f:
        token = json.load(f)["token"]
    sys.path.insert(0, src)
    from oh.client import SyncClient

    try:
        with SyncClient.connect(info["url"], token) as client:
            for _ in range(10):
                client.run("true")
            before, times = _cpu(info["pid"]), []
            for _ in range(n):
                t0 = time.perf_counter()
                client.run("true")
                times.append(time.perf_counter() - t0)
            after = _cpu(info["pid"])
    finally:
        subprocess.run([sys.executable, "-m", "oh", "stop", "--all"], env=env, capture_output=True)
        sys.path.remove(src)
    times.sort()
    return {"cpu_ms": 1000 * (after - before) / n, "p50_ms": 1000 * times[n // 2]}


def subprocess_p50(n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(["true"])
        times.append(time.perf_counter() - t0)
    times.sort()
    return 1000 * times[n // 2]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=200)
    p.add_argument("--src", action="append", help="a tree's src directory (repeat: side by side)")
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    srcs = args.src or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")]
    print("| tree | round | backend CPU ms/action | run true p50 ms | × subprocess.run p50 | processes |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in range(1, args.rounds + 1):
        for src in srcs:
            base = subprocess_p50(args.n)
            m = measure(os.path.abspath(src), args.n)
            procs = sum(1 for e in os.listdir("/proc") if e.isdigit())
            print(
                f"| {src} | {r} | {m['cpu_ms']:.2f} | {m['p50_ms']:.2f} | {m['p50_ms'] / base:.1f} | {procs} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
