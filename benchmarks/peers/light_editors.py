"""P6 helper: N light editors, each a plain websockets client registered on /v1/editor.

    BENCH_EDITOR_TOKEN=E python benchmarks/peers/light_editors.py --port P --count 10 --folder DIR

Each sends the protocol's register frame, waits for ``registered``, then just stays connected
(answering pings) until the driver closes our stdin. Prints one ready line once all are registered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402


async def one(port: int, token: str, folder: str, i: int):
    conn = await connect(
        f"ws://127.0.0.1:{port}/v1/editor",
        additional_headers={"Authorization": f"Bearer {token}"},
        compression=None,
        open_timeout=20,
    )
    await conn.send(
        json.dumps(
            {
                "type": "register",
                "protocol": 1,
                "session": None,
                "workspace_folders": [folder],
                "editor": {"name": f"bench light editor {i}", "version": "0", "pid": os.getpid()},
                "extension_version": "0",
                "capabilities": ["run", "read", "write", "edit"],
            }
        )
    )
    answer = json.loads(await asyncio.wait_for(conn.recv(), 20))
    if answer.get("type") != "registered":
        raise RuntimeError(f"editor {i} refused: {answer}")
    return conn, answer["editor_id"]


async def main(port: int, count: int, folder: str) -> None:
    # /v1/editor takes only the session's editor_token (the driver passes it); BENCH_TOKEN for older backends.
    token = os.environ.get("BENCH_EDITOR_TOKEN") or os.environ["BENCH_TOKEN"]
    registered = await asyncio.gather(*(one(port, token, folder, i) for i in range(count)))
    common.ready(editors=[eid for _, eid in registered])
    await asyncio.gather(*(conn.wait_closed() for conn, _ in registered))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--folder", required=True)
    a = p.parse_args()
    sys.exit(common.run(lambda: main(a.port, a.count, a.folder)))
