"""`oh mcp` costs, measured through the `mcp` SDK's own stdio client against a real local backend.

Prints: server start to initialized, first tool call (lazy connect), and per-call wall time of
`run echo hi` / `read` through MCP next to the same actions through oh's Python client directly.
Usage: .venv/bin/python benchmarks/mcp_roundtrip.py [N]  (isolated OH_HOME in a temp dir; stops its backend)
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


async def main(n: int) -> None:
    import mcp_types as types

    from mcp import ClientSession, StdioServerParameters, stdio_client
    from oh.client import Client

    tmp = tempfile.mkdtemp(prefix="oh-mcp-bench-")
    ws = os.path.join(tmp, "ws")
    os.mkdir(ws)
    with open(os.path.join(ws, "f.txt"), "w") as f:
        f.write("hello\n" * 100)
    env = dict(os.environ, OH_HOME=os.path.join(tmp, "home"), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    oh = [sys.executable, "-m", "oh"]
    info = json.loads(
        subprocess.run(
            [*oh, "start", "--detach", "--json", "--runtime", "local", "--workspace", ws],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    try:
        prof = os.environ.get("OH_MCP_PROFILE")  # a path: run the server under cProfile, stats written there
        pre = ["-m", "cProfile", "-o", prof] if prof else []
        params = StdioServerParameters(command=sys.executable, args=[*pre, "-m", "oh", "mcp"], env=env, cwd=ws)
        t0 = time.perf_counter()
        async with stdio_client(params, errlog=open(os.devnull, "w")) as (r, w):
            async with ClientSession(r, w, client_info=types.Implementation(name="bench", version="1")) as s:
                await s.initialize()
                t_init = time.perf_counter() - t0
                t1 = time.perf_counter()
                await s.call_tool("run", {"command": "true"})
                t_first = time.perf_counter() - t1
                mcp_run, mcp_read = [], []
                for _ in range(n):
                    a = time.perf_counter()
                    await s.call_tool("run", {"command": "echo hi"})
                    b = time.perf_counter()
                    await s.call_tool("read", {"path": "f.txt"})
                    mcp_read.append(time.perf_counter() - b)
                    mcp_run.append(b - a)
        os.environ.update(OH_HOME=env["OH_HOME"])
        from oh import sessions

        session = sessions.find(info["instance_id"])[0]
        direct_run, direct_read = [], []
        async with await Client.connect(session.url, session.token, name="bench-direct") as c:
            for _ in range(n):
                a = time.perf_counter()
                await c.run("echo hi")
                b = time.perf_counter()
                await c.read(os.path.join(ws, "f.txt"))
                direct_read.append(time.perf_counter() - b)
                direct_run.append(b - a)
    finally:
        subprocess.run([*oh, "stop", info["instance_id"]], env=env, capture_output=True)

    def ms(xs):
        return f"p50 {statistics.median(xs) * 1000:.2f} ms, p90 {sorted(xs)[int(len(xs) * 0.9)] * 1000:.2f} ms"

    print(f"oh mcp: start -> initialized {t_init * 1000:.0f} ms; first call (connects) {t_first * 1000:.1f} ms; N={n}")
    print(
        f"run echo hi  via MCP {ms(mcp_run)}   direct client {ms(direct_run)}   ratio "
        f"{statistics.median(mcp_run) / statistics.median(direct_run):.2f}x"
    )
    print(
        f"read f.txt   via MCP {ms(mcp_read)}   direct client {ms(direct_read)}   ratio "
        f"{statistics.median(mcp_read) / statistics.median(direct_read):.2f}x"
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
