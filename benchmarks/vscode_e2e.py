"""Issue 13 items 5 and 6 in a real VS Code: the SDK task through oh's extension, and the extension
host's memory over 10,000 actions.

    OH_E2E_DIR=/work/main/.e2e OH_E2E_SKIP_SETUP=1 .venv/bin/python benchmarks/vscode_e2e.py \
        [--actions 10000] [--sdk-rounds 2] [--json out.json]

Starts the end-to-end harness (extension/e2e/run.sh start: code-server 1.99 in headless Chromium, the
extension built from this tree), then ``oh start --runtime vscode`` on a fresh workspace, and waits
for the extension to register. Then:

1. memory: the extension host process of code-server (the node process started with
   ``--type=extensionHost``) is sampled (RSS, median of 5) before any action, and every 1,000 of
   N ``read`` actions of a 1 KiB file sent through the backend by ``oh.client`` (one at a time),
   and 10 s after the last one. If the node inspector can be opened on that process (SIGUSR1,
   loopback only), the V8 heap is also sampled after a forced garbage collection, which is the
   figure that shows a leak without the GC's slack. Growth = last sample - the sample after the
   warm-up (the first 1,000); flat means no leak.
2. the SDK task (benchmarks/sdk_task.py, mode oh, in the SDK's 3.12 venv) with the backend's
   OH_HOME: the same tool calls, now executed by VS Code's terminal and file system.

Everything started here is stopped at the end (run.sh stop; oh stop --all).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
RUN_SH = REPO / "extension" / "e2e" / "run.sh"
MB = 1_000_000


def wait_until(cond, timeout: float, what: str, interval: float = 0.25):
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def extension_host(code_server_pid: int) -> psutil.Process:
    def find():
        for p in psutil.Process(code_server_pid).children(recursive=True):
            try:
                if any("extensionHost" in a for a in p.cmdline()):
                    return p
            except psutil.Error:
                continue
        return None

    return wait_until(find, 60, "the extension host process")


def rss(p: psutil.Process, n: int = 5) -> int:
    xs = []
    for i in range(n):
        if i:
            time.sleep(0.2)
        xs.append(p.memory_info().rss)
    return int(statistics.median(xs))


class Inspector:
    """V8 heap of a node process through its inspector (opened with SIGUSR1; loopback only)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.url: str | None = None

    def open(self) -> bool:
        try:
            os.kill(self.pid, signal.SIGUSR1)
            ports = set()

            def listening():
                for c in psutil.Process(self.pid).net_connections("tcp"):
                    if c.status == psutil.CONN_LISTEN and c.laddr.ip in ("127.0.0.1", "::1"):
                        ports.add(c.laddr.port)
                return ports

            wait_until(listening, 10, "the inspector to listen")
            for port in sorted(ports):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
                        targets = json.loads(r.read())
                    if targets:
                        self.url = targets[0]["webSocketDebuggerUrl"]
                        return True
                except Exception:  # noqa: BLE001 - not the inspector port
                    continue
        except Exception:  # noqa: BLE001 - the heap figure is optional
            return False
        return False

    async def heap_after_gc(self) -> int | None:
        if not self.url:
            return None
        from websockets.asyncio.client import connect

        async with connect(self.url, max_size=None, open_timeout=10) as ws:

            async def call(i: int, method: str) -> dict[str, Any]:
                await ws.send(json.dumps({"id": i, "method": method}))
                while True:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    if msg.get("id") == i:
                        return msg.get("result", {})

            await call(1, "HeapProfiler.collectGarbage")
            return int((await call(2, "Runtime.getHeapUsage"))["usedSize"])


async def drive_reads(port: int, token: str, path: str, n: int, sample, every: int = 1000) -> dict[str, Any]:
    from oh.client import Client, actions

    lat: list[float] = []
    async with await Client.connect(f"ws://127.0.0.1:{port}", token, name="memory-bench") as client:
        action = actions.read(path)
        for i in range(1, n + 1):
            t0 = time.perf_counter()
            obs = await client.send(action, timeout=60)
            lat.append(time.perf_counter() - t0)
            if obs.get("observation") != "read":
                raise RuntimeError(f"read {i}: {dict(obs)}")
            if i % every == 0:
                await sample(i)
    lat.sort()
    return {
        "read_p50_ms": round(lat[len(lat) // 2] * 1000, 2),
        "read_p90_ms": round(lat[int(len(lat) * 0.9)] * 1000, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--actions", type=int, default=10000)
    ap.add_argument("--sdk-rounds", type=int, default=2, help="0 = skip the SDK task")
    ap.add_argument("--sdk-python", help="the SDK venv's python (default: scripts/integration-venvs openhands-sdk)")
    ap.add_argument("--json", dest="json_out")
    a = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="oh-vscode-bench-"))
    ws, home, state = base / "ws", base / "ohhome", base / "state"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "XDG_")) and k != "PYTHON_KEYRING_BACKEND"}
    env.update(
        OH_HOME=str(home),
        XDG_DATA_HOME=str(base / "xdg-data"),
        XDG_CONFIG_HOME=str(base / "xdg-config"),
        XDG_STATE_HOME=str(base / "xdg-state"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )
    for key in ("OH_E2E_DIR", "OH_E2E_SKIP_SETUP", "OH_E2E_TIMEOUT"):
        if key in os.environ:
            env[key] = os.environ[key]
    oh = [sys.executable, "-m", "oh"]
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        t0 = time.monotonic()
        proc = subprocess.run(
            ["bash", str(RUN_SH), "start", str(state), str(ws)], capture_output=True, text=True, env=env, timeout=900
        )
        if proc.returncode != 0:
            raise RuntimeError(f"run.sh start failed:\n{proc.stderr[-3000:]}")
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        result["workbench_up_s"] = round(time.monotonic() - t0, 1)
        started = subprocess.run(
            [*oh, "start", "--runtime", "vscode", "--workspace", str(ws), "--detach", "--no-open", "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        if started.returncode != 0:
            raise RuntimeError(f"oh start failed: {started.stderr[-2000:]}")
        backend = json.loads(started.stdout)

        def registered():
            out = subprocess.run([*oh, "status", "--json"], capture_output=True, text=True, env=env, timeout=60).stdout
            return any(s.get("editors") for s in json.loads(out or "{}").get("sessions", []))

        wait_until(registered, 90, "the extension to register")
        token = json.loads((home / "sessions" / f"{backend['instance_id']}.json").read_text())["token"]
        host = extension_host(info["code_server_pid"])
        result["extension_host_pid"] = host.pid
        inspector = Inspector(host.pid)
        heap_ok = inspector.open()
        f = ws / "one_kib.txt"
        f.write_text(("y" * 63 + "\n") * 16)
        samples: list[dict[str, Any]] = []

        async def sample(i: int) -> None:
            heap = await inspector.heap_after_gc() if heap_ok else None
            samples.append(
                {
                    "actions": i,
                    "rss_mb": round(rss(host) / MB, 1),
                    "heap_mb": round(heap / MB, 2) if heap is not None else None,
                }
            )
            print(f"  after {i} actions: {samples[-1]}", file=sys.stderr)

        asyncio.run(sample(0))
        t1 = time.monotonic()
        reads = asyncio.run(drive_reads(backend["port"], token, str(f), a.actions, sample))
        result["reads_s"] = round(time.monotonic() - t1, 1)
        time.sleep(10)
        asyncio.run(sample(a.actions))
        samples[-1]["after_10s_idle"] = True
        warm = next((s for s in samples if s["actions"] >= 1000), samples[0])
        last = samples[-1]
        result["memory"] = {
            "actions": a.actions,
            "samples": samples,
            **reads,
            "heap_sampled": heap_ok,
            "rss_growth_after_warmup_mb": round(last["rss_mb"] - warm["rss_mb"], 1),
            "heap_growth_after_warmup_mb": round(last["heap_mb"] - warm["heap_mb"], 2)
            if heap_ok and last["heap_mb"] is not None
            else None,
        }
        if a.sdk_rounds > 0:
            py = (
                a.sdk_python
                or subprocess.run(
                    [str(REPO / "scripts" / "integration-venvs"), "openhands-sdk"],
                    capture_output=True,
                    text=True,
                    timeout=1800,
                    cwd=REPO,
                )
                .stdout.strip()
                .splitlines()[-1]
                + "/bin/python"
            )
            out = base / "sdk.json"
            sdk = subprocess.run(
                [
                    py,
                    str(REPO / "benchmarks" / "sdk_task.py"),
                    "--oh-home",
                    str(home),
                    "--workspace",
                    str(ws),
                    "--modes",
                    "oh",
                    "--label",
                    "oh-vscode",
                    "--rounds",
                    str(a.sdk_rounds),
                    "--json",
                    str(out),
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=1800,
            )
            if sdk.returncode != 0:
                raise RuntimeError(f"sdk_task.py failed:\n{sdk.stderr[-3000:]}")
            result["sdk_task"] = json.loads(out.read_text())
        result["load_after"] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps(result, indent=2))
        if a.json_out:
            Path(a.json_out).write_text(json.dumps(result, indent=2))
        return 0
    finally:
        subprocess.run([*oh, "stop", "--all"], capture_output=True, env=env, timeout=60)
        subprocess.run(["bash", str(RUN_SH), "stop", str(state)], capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
