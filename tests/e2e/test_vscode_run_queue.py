"""Runs beyond `max_shells` in a real VS Code (issue 18 item 3; docs/protocol.md §3.8, §4.1): with the
default `max_shells` (8), 20 `run`s sent at once on one agent connection all execute — the ones that
find every terminal busy wait in line for one (their `metadata.prefix` says how long) instead of `BUSY`."""

from __future__ import annotations

import asyncio
import json

import pytest

from .conftest import VsCode, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
    proc = vscode.oh(
        "start",
        "--runtime",
        "vscode",
        "--workspace",
        str(vscode.workspace),
        "--detach",
        "--no-open",
        "--json",
        timeout=60,
    )
    assert proc.returncode == 0, f"oh start failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    info = json.loads(proc.stdout)

    def registered():
        return any(s.get("instance_id") == info["instance_id"] and s.get("editors") for s in vscode.sessions())

    wait_until(registered, 60, "the extension to register with the backend")
    info["session_file"] = json.loads((vscode.oh_home / "sessions" / f"{info['instance_id']}.json").read_text())
    yield info
    vscode.oh("stop", info["instance_id"], timeout=60)


def test_twenty_runs_with_the_default_max_shells_all_execute(vscode: VsCode, backend: dict):
    async def burst():
        from oh.client import Client

        s = backend["session_file"]
        async with await Client.connect(s["url"], s["token"], name="queue") as c:
            await c.run("true", timeout=60)  # the agent's terminal exists first
            return await asyncio.gather(*(c.run(f"sleep 1; echo q-{i}", timeout=120) for i in range(20)))

    obs = asyncio.run(burst())
    for i, o in enumerate(obs):
        assert o["observation"] == "run", (i, o)
        assert o["content"] == f"q-{i}\n" and o["extras"]["metadata"]["exit_code"] == 0, (i, o)
    waited = [o for o in obs if "waited" in (o["extras"]["metadata"].get("prefix") or "")]
    assert waited, "8 terminals cannot have run 20 one-second commands at once"
