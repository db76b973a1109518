#!/usr/bin/env python3
"""The approvals page (issue 40): how long from an agent's question to the notifier's call and to a paired
page showing it, on loopback; and the page's weight.

    .venv/bin/python benchmarks/approvals_page.py            # 40 questions
    .venv/bin/python benchmarks/approvals_page.py --quick    # 10

One in-process backend under consent ``commands`` in a temporary workspace. This process is the agent (a raw
WebSocket sending ``run`` actions one at a time) and the page (a paired device's ``/live`` socket, as the
browser opens it). The notifier is ``python -c`` appending ``time.time()`` per call. Each question is
rejected once both have seen it. Goal (issue 40): both <= 100 ms at p50.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

from websockets.asyncio.client import connect  # noqa: E402

from oh.backend.server import Backend, BackendConfig  # noqa: E402
from oh.protocol import approvalpage  # noqa: E402
from oh.protocol.consent import Policy  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"
NOTIFIER = "import sys, time\nwith open(sys.argv[1], 'a') as f:\n    f.write(f'{time.time()}\\n')\n"


async def _pair(b: Backend) -> str:
    code = b.web.pairing.new_code(time.time())
    got = b.web.pairing.redeem(code, "bench", time.time())
    assert not isinstance(got, str), got
    return got[1]


async def main(n: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="oh-bench-approvals-"))
    ws_dir, calls = tmp / "ws", tmp / "calls.txt"
    ws_dir.mkdir()
    os.environ["OH_HOME"] = str(tmp / "home")
    pol = Policy("commands", (), str(ws_dir), "/nonexistent-home", ())
    cfg = BackendConfig(
        workspace=str(ws_dir),
        runtime="local",
        trace_path=None,
        consent=pol,
        approval_notify=(sys.executable, "-c", NOTIFIER, str(calls)),
    )
    b = Backend(cfg, TOKEN)
    await b.start()
    page = await connect(
        f"ws://127.0.0.1:{b.web.port}/live",
        origin=f"http://127.0.0.1:{b.web.port}",  # type: ignore[arg-type]
        additional_headers={"Cookie": f"oh_device={await _pair(b)}"},
    )
    await page.recv()
    agent = await connect(f"ws://127.0.0.1:{b.port}/v1/agent", additional_headers={"Authorization": f"Bearer {TOKEN}"})
    to_page, to_notifier = [], []
    for i in range(n):
        t0 = time.time()
        await agent.send(json.dumps({"id": i + 1, "action": "run", "args": {"command": f"echo {i}"}}))
        while True:
            state = json.loads(await page.recv())
            if state.get("type") == "state" and state["pending"]:
                to_page.append(time.time() - t0)
                break
        for _ in range(2000):
            lines = calls.read_text().splitlines() if calls.exists() else []
            if len(lines) > i:
                to_notifier.append(float(lines[i]) - t0)
                break
            await asyncio.sleep(0.002)
        await page.send(json.dumps({"op": "reject", "id": state["pending"][0]["id"]}))
        await agent.recv()
    await agent.close()
    await page.close()
    await b.stop("bench done")

    def ms(xs: list[float], q: float) -> str:
        return f"{statistics.quantiles(xs, n=100)[int(q) - 1] * 1000:.1f} ms" if len(xs) > 2 else "n/a"

    print(f"questions: {n}")
    print(f"question -> page shows it:      p50 {ms(to_page, 50)}, p90 {ms(to_page, 90)}")
    print(f"question -> notifier is called: p50 {ms(to_notifier, 50)}, p90 {ms(to_notifier, 90)}")
    print(f"page weight: {len(approvalpage.PAGE)} bytes (one request: HTML, style and script inline)")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    asyncio.run(main(10 if args.quick else 40))
