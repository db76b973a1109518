"""Small real-socket peers for backend tests (an echo editor whose behaviour tests control)."""

from __future__ import annotations

import asyncio
import json

from websockets.asyncio.client import connect

from oh.editor.peer import HeadlessEditor
from oh.protocol.events import read_observation


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
