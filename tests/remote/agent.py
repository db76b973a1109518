"""What an agent elsewhere runs, as subprocesses under a given argv prefix (a sandbox, `env`): `oh mcp` spoken to
with raw MCP JSON-RPC over stdio (no SDK needed on the agent's side), and the Python client as a script."""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from typing import Any

CLIENT_SCRIPT = """
import json, os, sys
from oh.client.sync import SyncClient
from oh.integrations.discovery import find_session
s = find_session(os.getcwd())  # what the OpenHands integrations call: OH_URL / the connect file
here = os.getcwd()
inside = here == s.workspace or here.startswith(s.workspace.rstrip("/") + "/")
with SyncClient.connect(s.url, s.token, workdir=here if inside else None) as c:
    obs = c.send({"action": "read", "args": {"path": sys.argv[1]}})
    print(json.dumps({"url": s.url, "content": obs.content, "extras": obs.extras}))
"""


def _read_reply(proc: subprocess.Popen, want: int, timeout: float) -> dict[str, Any]:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sel.select(max(0.0, deadline - time.monotonic())):
                break
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise AssertionError(f"oh mcp ended: {proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]
            msg = json.loads(line)
            if msg.get("id") == want:
                return msg
    finally:
        sel.close()
    raise AssertionError(f"no MCP reply {want} within {timeout} s")


def mcp_run(
    prefix: list[str], command: str, *, cwd: str | None = None, env: dict | None = None, timeout: float = 60
) -> str:
    """`oh mcp` under ``prefix``: initialize, then the ``run`` tool with ``command``; the tool's text."""
    proc = subprocess.Popen(
        [*prefix, "oh", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
    )
    try:

        def send(obj: dict) -> None:
            proc.stdin.write(json.dumps(obj) + "\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]

        info = {"name": "remote-test", "version": "1"}
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info},
            }
        )
        _read_reply(proc, 1, timeout)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "run", "arguments": {"command": command}},
            }
        )
        reply = _read_reply(proc, 2, timeout)
        return "\n".join(c.get("text", "") for c in reply["result"]["content"])
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def client_read(prefix: list[str], path: str, *, cwd: str | None = None, env: dict | None = None) -> dict[str, Any]:
    out = subprocess.run(
        [*prefix, sys.executable, "-c", CLIENT_SCRIPT, path],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)
