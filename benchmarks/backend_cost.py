"""The backend's work per delegated action, counted in instructions (load-independent), for comparing designs.

    .venv/bin/python benchmarks/backend_cost.py [--actions 2000] [--inflight 64] [--src DIR]

Starts ``python -m oh.backend --runtime vscode`` under ``valgrind --tool=callgrind`` (instrumentation
off until the warm-up is done), the headless editor (``oh attach``, not instrumented) and one agent
(``oh.client.Client``, in this process) that reads a 1 KiB file. After a warm-up the backend's
counters are zeroed (``callgrind_control --zero``), N reads are sent with K in flight, and the
counters are dumped: instructions (Ir) per action is the backend's CPU work per action, independent
of how loaded the machine is (wall-clock and CPU-time figures on the shared 2-core VM move ±30 %).
``--src`` runs the backend from another tree's ``src`` (an A/B against e.g. a ``git worktree`` of the
previous commit). ``--no-valgrind`` reports CPU time per action from psutil instead.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import glob
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]


def _wait_ready(fd: int, proc: subprocess.Popen, timeout: float) -> dict:
    import json
    import select

    buf, end = b"", time.monotonic() + timeout
    while b"\n" not in buf and time.monotonic() < end and proc.poll() is None:
        if select.select([fd], [], [], 0.5)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
    if b"\n" not in buf:
        raise RuntimeError("the backend did not become ready")
    return json.loads(buf.split(b"\n", 1)[0])


async def drive(port: int, token: str, path: str, n: int, inflight: int, binary: bool = False) -> None:
    from oh.client import Client, actions

    client = await Client.connect(f"ws://127.0.0.1:{port}", token, name="cost")
    action = actions.read(path, encoding="binary" if binary else None)
    todo = iter(range(n))

    async def worker() -> None:
        for _ in todo:
            obs = await client.send(dict(action))
            if obs.get("observation") != "read":
                raise RuntimeError(f"unexpected observation: {dict(obs)}")

    await asyncio.gather(*(worker() for _ in range(min(inflight, n))))
    await client.close()


def callgrind_ir(out_glob: str) -> int:
    """Total Ir of the newest dump (the one written by --dump)."""
    files = sorted(glob.glob(out_glob), key=os.path.getmtime)
    text = Path(files[-1]).read_text(errors="replace")
    m = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
    if not m:
        raise RuntimeError(f"no totals in {files[-1]}")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--actions", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--inflight", type=int, default=64)
    ap.add_argument("--src", help="run the backend from this src directory (A/B)")
    ap.add_argument("--no-valgrind", action="store_true")
    ap.add_argument(
        "--file-mib", type=int, default=0, help="read a file of this many MiB with encoding binary instead (P5's path)"
    )
    ap.add_argument("--cprofile", help="with --no-valgrind: run the backend under cProfile, write the stats here")
    ap.add_argument("--cprofile-editor", help="run the headless editor under cProfile, write the stats here")
    a = ap.parse_args()
    if not a.no_valgrind and not (shutil.which("valgrind") and shutil.which("callgrind_control")):
        sys.exit("valgrind (callgrind) is not installed: use --no-valgrind")
    tmp = Path(tempfile.mkdtemp(prefix="oh-cost-"))
    ws = tmp / "ws"
    ws.mkdir()
    f = ws / "one_kib.txt"
    f.write_text(("x" * 63 + "\n") * 16 * (1024 * max(a.file_mib, 0) or 1))
    token = secrets.token_urlsafe(32)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(OH_HOME=str(tmp / "home"), OH_TOKEN=token, OH_LOG_LEVEL="INFO")
    benv = dict(env)
    if a.src:
        benv["PYTHONPATH"] = a.src
    r, w = os.pipe()
    argv = [
        sys.executable,
        "-m",
        "oh.backend",
        "--workspace",
        str(ws),
        "--runtime",
        "vscode",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--instance-id",
        secrets.token_hex(6),
        "--token-stdin",
        "--ready-fd",
        str(w),
    ]
    out = str(tmp / "callgrind.out")
    if a.cprofile:
        argv[1:1] = ["-m", "cProfile", "-o", os.path.abspath(a.cprofile)]
    if not a.no_valgrind:
        argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.%p", *argv]
    procs: list[subprocess.Popen] = []
    try:
        backend = subprocess.Popen(
            argv,
            env=benv,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=open(tmp / "backend.log", "wb"),
            pass_fds=(w,),
            start_new_session=True,
            cwd=ws,
        )
        procs.append(backend)
        os.close(w)
        backend.stdin.write((token + "\n").encode())
        backend.stdin.close()
        ready = _wait_ready(r, backend, 300)
        prof = ["-m", "cProfile", "-o", os.path.abspath(a.cprofile_editor)] if a.cprofile_editor else []
        editor = subprocess.Popen(
            [sys.executable, *prof, "-m", "oh", "attach", "--workspace", str(ws), "--once"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        procs.append(editor)
        asyncio.run(asyncio.sleep(3 if a.no_valgrind else 20))  # registration (slow under valgrind)
        asyncio.run(drive(ready["port"], token, str(f), a.warmup, a.inflight, a.file_mib > 0))
        pid = ready["pid"]
        if a.no_valgrind:
            p, ed = psutil.Process(pid), psutil.Process(editor.pid)
            c0, e0 = p.cpu_times(), ed.cpu_times()
        else:
            subprocess.run(["callgrind_control", "--instr=on", str(pid)], check=True, capture_output=True)
            subprocess.run(["callgrind_control", "--zero", str(pid)], check=True, capture_output=True)
        me0 = psutil.Process().cpu_times()
        t0 = time.perf_counter()
        asyncio.run(drive(ready["port"], token, str(f), a.actions, a.inflight, a.file_mib > 0))
        me1 = psutil.Process().cpu_times()
        wall = time.perf_counter() - t0
        if a.no_valgrind:
            c1, e1 = p.cpu_times(), ed.cpu_times()
            cpu = (c1.user + c1.system) - (c0.user + c0.system)
            ecpu = (e1.user + e1.system) - (e0.user + e0.system)
            mine = (me1.user + me1.system) - (me0.user + me0.system)
            print(
                f"CPU per action: backend {cpu / a.actions * 1e6:.1f} µs, editor {ecpu / a.actions * 1e6:.1f} µs, "
                f"client {mine / a.actions * 1e6:.1f} µs ({a.actions} actions, {a.inflight} in flight, {wall:.1f} s)"
            )
        else:
            subprocess.run(["callgrind_control", "--dump=measured", str(pid)], check=True, capture_output=True)
            time.sleep(1)
            ir = callgrind_ir(f"{out}.{pid}*")
            print(
                f"backend instructions per action: {ir / a.actions:,.0f} Ir ({a.actions} actions, "
                f"{a.inflight} in flight, {wall:.1f} s under callgrind)"
            )
            print(f"callgrind output: {out}.{pid}* (callgrind_annotate for the C-level breakdown)")
        return 0
    finally:
        # The backend first: the editor (--once) then exits on its own, which lets a profiled editor
        # write its stats; whatever is still running 10 s later is stopped.
        for i, p in enumerate(procs):
            if i and p.poll() is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(10)
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
        if os.environ.get("OH_COST_KEEP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept {tmp}")


if __name__ == "__main__":
    sys.exit(main())
