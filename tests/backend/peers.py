"""Small real-socket peers for backend tests: an echo editor whose behaviour tests control, the real headless
editor, an agent, and the control leg a decider answers approval requests on (the in-process counterpart of `oh
approvals` / `oh approve`; one copy for the consent and escalation tests)."""

from __future__ import annotations

import asyncio
import json

from websockets.asyncio.client import connect

from oh.editor.peer import HeadlessEditor
from oh.protocol.events import read_observation

from .conftest import TOKEN


async def agent(b):
    """An agent connection to backend ``b`` (the test token)."""
    url = f"ws://127.0.0.1:{b.port}/v1/agent"
    return await connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"})


async def control(b, token: str, frame: dict) -> dict:
    """One control request on its own connection authenticated with ``token``: its answer (bounded: 10 s)."""
    url = f"ws://127.0.0.1:{b.port}/v1/control"
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ctl:
        await ctl.send(json.dumps(frame))
        return json.loads(await asyncio.wait_for(ctl.recv(), 10))


async def pending(b, n: int = 1) -> list[dict]:
    """The approval requests waiting, once there are at least ``n`` (bounded: 1000 polls, 20 s of sleep)."""
    for _ in range(1000):
        rows = (await control(b, TOKEN, {"type": "approvals", "op": "list"}))["approvals"]
        if len(rows) >= n:
            return rows
        await asyncio.sleep(0.02)
    raise AssertionError("no pending approval")


async def answer(b, op: str) -> None:
    """Wait for the approval question, then answer the first one ``op`` ("allow" / "reject") as the decider."""
    [row, *_] = await pending(b)
    said = await control(b, b.decider_token, {"type": "approvals", "op": op, "id": row["id"], "via": "cli"})
    assert said["results"][0]["outcome"] in ("allowed", "rejected"), said


async def serve_headless(b, workspace, **options) -> tuple[HeadlessEditor, asyncio.Task]:
    """The real headless editor (`oh attach`'s) registered with backend ``b``: (editor, its serve task).
    Cancel the task to disconnect it."""
    editor = HeadlessEditor(
        f"ws://127.0.0.1:{b.port}", b.editor_token, str(workspace), session=b.instance_id, **options
    )
    ready = asyncio.Event()
    task = asyncio.create_task(editor.serve(ready))
    await asyncio.wait_for(ready.wait(), 10)
    return editor, task


class EchoEditor:
    """Registers, then answers each action with a `read` observation whose content names the
    action's path (so a test can check it got ITS answer). ``hold`` makes it sit on actions."""

    def __init__(self, port: int, token: str, folders: list[str], *, hold: bool = False, session=None) -> None:
        self.port, self.token, self.folders, self.hold, self.session = port, token, folders, hold, session
        self.received: list[dict] = []
        self.cancelled: list[int] = []
        self.gone: list[str] = []  # shells of agents that left (agent_gone)
        self.registered = asyncio.Event()
        self.answer: dict | None = None

    async def __aenter__(self):
        self.conn = await connect(
            f"ws://127.0.0.1:{self.port}/v1/editor", additional_headers={"Authorization": f"Bearer {self.token}"}
        )
        await self.conn.send(
            json.dumps(
                {
                    "type": "register",
                    "protocol": 1,
                    "session": self.session,
                    "workspace_folders": self.folders,
                    "editor": {"name": "echo", "version": "0", "pid": 1},
                    "extension_version": "0",
                    "capabilities": ["run", "read", "write", "edit"],
                }
            )
        )
        self.answer = json.loads(await self.conn.recv())
        self.task = asyncio.create_task(self._loop())
        return self

    async def _loop(self):
        async for msg in self.conn:
            frame = json.loads(msg)
            if frame.get("type") == "cancel":
                self.cancelled.append(frame["id"])
                continue
            if frame.get("type") == "agent_gone":
                self.gone.append(frame["shell"])
                continue
            self.received.append(frame)
            if not self.hold:
                obs = read_observation(
                    frame["id"],
                    frame["args"].get("path", ""),
                    "echo:" + frame["args"].get("path", frame["args"].get("command", "")),
                )
                obs["id"] = len(self.received)
                await self.conn.send(json.dumps(obs))

    async def __aexit__(self, *exc):
        self.task.cancel()
        await self.conn.close()
