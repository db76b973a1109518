"""Headless editor peer (docs/protocol.md §4): the reference editor behind `oh attach`.

It executes with the local runtime: one shell per ``agent.shell`` of the actions it receives (started
in ``agent.workdir``), killed on ``agent_gone``; paths confined to the backend's allowed roots from
the ``registered`` answer."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import os
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from .. import PROTOCOL_VERSION, __version__, sessions
from ..client.errors import ConnectionLost, handshake_error
from ..protocol import binary, frames, kinds
from ..protocol.codes import Close
from ..protocol.errors import ErrorId, ProtocolError
from ..protocol.events import decode, decode_frame, encode, error_from, error_observation, parse_action
from ..runtimes.base import AgentContext
from ..runtimes.local import LocalRuntime

DEFAULT_SHELL = "default"  # actions without an ``agent`` field (an older backend) share this one

log = logging.getLogger("oh.editor")


class HeadlessEditor:
    """One registered editor connection. ``serve()`` returns when the backend closes it."""

    def __init__(
        self,
        url: str,
        token: str,
        workspace: str,
        *,
        session: str | None = None,
        name: str = "oh headless editor",
        max_shells: int = 8,
        job_retention: float = 3600.0,
    ) -> None:
        self.url = url.rstrip("/")
        # The user's settings arrive as arguments (`oh attach` reads them): the editor reads no config.
        self.max_shells = max_shells
        self.job_retention = job_retention
        self.token = token
        self.workspace = os.path.realpath(workspace)
        self.session = session
        self.name = name
        self._conn: ClientConnection | None = None
        self.runtime = self._make_runtime(None)
        self.registration: dict[str, Any] | None = None
        self.close_code: int | None = None
        self.close_reason = ""
        self._obs_ids = itertools.count(1)
        self._tasks: dict[Any, asyncio.Task] = {}  # by the frame's id (cancel frames name it)

    def _track(self, key: Any, task: asyncio.Task) -> None:
        """``task`` answers the frame ``key`` until it ends (a cancel frame finds it here)."""
        self._tasks[key] = task
        task.add_done_callback(lambda _t: self._tasks.pop(key, None))

    def _link(self) -> ClientConnection:
        if self._conn is None:
            raise ConnectionLost("the editor is not connected")
        return self._conn

    def _make_runtime(self, roots: list[str] | None):
        """The local runtime that executes, with the user's max_shells / job_retention settings; its
        job events go to the backend as ``job_event`` frames (docs/protocol.md §4)."""
        rt = LocalRuntime(self.workspace, roots, max_shells=self.max_shells, job_retention=self.job_retention)
        rt.on_job_event = self._job_event
        rt.backend_names_jobs = True
        return rt

    def _job_event(self, name: str, job: dict[str, Any]) -> None:
        if self._conn is None:
            return
        record = {k: v for k, v in job.items() if k not in ("shell", "agent_id")}
        asyncio.ensure_future(self._send_frame(frames.job_event(name, record)))

    async def _send_frame(self, frame: dict[str, Any]) -> None:
        with contextlib.suppress(ConnectionClosed, Exception):
            await self._link().send(encode(frame), text=True)

    def register_frame(self) -> dict[str, Any]:
        return {
            "type": "register",
            "protocol": PROTOCOL_VERSION,
            "protocol_range": list(frames.PROTOCOL_RANGE),  # the versions it speaks (protocol/versions.py)
            "session": self.session,
            "workspace_folders": [self.workspace],
            "editor": {"name": self.name, "version": __version__, "pid": os.getpid()},
            "extension_version": __version__,
            # The kinds the local runtime executes (its knowledge answers are not a language server's: not
            # advertised), and the features: binary = read encoding "binary" frames.
            "capabilities": [
                *(k for k in LocalRuntime.HANDLERS if not kinds.TABLE[k].knowledge),
                "binary",
                "write_modes",
                "branch",
                frames.ESCALATE_CAPABILITY,  # its local runtime runs an allowed escalation in a one-shot shell
            ],
        }

    async def serve(self, ready: asyncio.Event | None = None) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            conn = await connect(
                self.url + "/v1/editor", additional_headers=headers, max_size=None, compression=None, open_timeout=10
            )
        except (InvalidHandshake, OSError, asyncio.TimeoutError) as exc:
            raise handshake_error(exc, self.url) from None
        self._conn = conn
        try:
            await conn.send(encode(self.register_frame()), text=True)
            answer = decode(await asyncio.wait_for(conn.recv(), 10))
            if answer.get("type") != "registered":
                raise RuntimeError(f"registration refused: {answer.get('error_id')}: {answer.get('message')}")
            self.registration = answer
            roots = answer.get("allowed_roots")
            if isinstance(roots, list) and roots and all(isinstance(r, str) and r.startswith("/") for r in roots):
                await self.runtime.close()
                self.runtime = self._make_runtime(roots)
            if ready is not None:
                ready.set()
            async for message in conn:
                self._dispatch(message)
        except ConnectionClosed:
            pass
        finally:
            self.close_code, self.close_reason = conn.close_code, conn.close_reason or ""
            for task in self._tasks.values():
                task.cancel()
            await self.runtime.close()

    def _dispatch(self, message: str | bytes) -> None:
        try:
            obj = decode_frame(message)
            if obj.get("type") == "cancel":
                task = self._tasks.get(obj.get("id"))
                if task is not None:
                    task.cancel()
                return
            if obj.get("type") == "agent_gone":
                shell = obj.get("shell")
                if isinstance(shell, str):
                    asyncio.ensure_future(self.runtime.close_shell(shell))
                return
            if obj.get("type") is not None:
                return  # unknown control frames are ignored (docs/protocol.md §4)
            if obj.get("action") == "branch":  # branch mode (§3.12): sent by the backend, not an agent
                self._branch(obj)
                return
            action = parse_action(obj)
            if frames.parse_escalation(obj) is not None:
                # The backend's consent gate allowed this run to leave the sandbox (docs/protocol.md §3.17): the
                # backend sets `escalation` only then, so the local runtime may run it in a one-shot shell.
                action = dataclasses.replace(action, unsandboxed=True)
        except ProtocolError as exc:
            asyncio.ensure_future(self._answer(error_from(exc)))
            return
        agent = frames.parse_agent_field(obj)
        if agent is None:
            ctx = AgentContext(DEFAULT_SHELL, "agent", None, DEFAULT_SHELL)
        else:
            ctx = AgentContext(agent["id"], agent["name"], agent["workdir"], agent["shell"])
        task = asyncio.create_task(self._execute(action, ctx))
        self._track(action.id, task)

    def _branch(self, obj: dict[str, Any]) -> None:
        """Git-branch mode's switch with git, as the local runtime does it (nobody to ask here: a
        dirty tree or a non-git folder without the user's choice is BRANCH_FAILED naming the flag)."""
        from ..runtimes.local.gitswitch import local_switch

        leg_id, args = obj.get("id"), obj.get("args")
        if not isinstance(leg_id, int) or not isinstance(args, dict) or not isinstance(args.get("name"), str):
            asyncio.ensure_future(
                self._answer(
                    error_observation(
                        leg_id if isinstance(leg_id, int) else None,
                        ErrorId.BAD_REQUEST,
                        "branch: args.name must be a string.",
                    )
                )
            )
            return
        switch = local_switch(self.workspace)

        async def answer() -> None:
            await self._answer(await switch(args, AgentContext(DEFAULT_SHELL), leg_id))

        task = asyncio.create_task(answer())
        self._track(leg_id, task)

    async def _execute(self, action, ctx: AgentContext) -> None:
        try:
            obs = await self.runtime.execute(action, ctx)
        except asyncio.CancelledError:
            # The backend cancelled (the agent went away, or the deadline passed); it no longer waits
            # for an answer. Stop the work, not just the wait: a cancelled `run` would otherwise
            # leave its command running in this editor's shell for ever (e.g. `sleep 1000` of an
            # agent that was killed). Like the local runtime when an agent leaves: the shell and
            # its process group are killed; the next `run` gets a fresh shell.
            # (A shared X-OH-Shell terminal keeps its state: the runtime interrupted the command.)
            if action.kind == "run" and ctx.shell == ctx.id:
                await self.runtime.close_shell(ctx.shell_key)
            return
        except Exception as exc:  # noqa: BLE001
            log.exception("action %s failed", action.id)
            obs = error_observation(action.id, ErrorId.SERVER_ERROR, f"Headless editor error: {type(exc).__name__}")
        obs["cause"] = action.id
        await self._answer(obs)

    async def _answer(self, obs: dict[str, Any]) -> None:
        obs["id"] = next(self._obs_ids)
        with contextlib.suppress(ConnectionClosed):
            if binary.is_binary(obs):  # read encoding "binary" (oh.protocol.binary)
                await self._link().send(binary.pack(obs), text=False)
                return
            await self._link().send(encode(obs), text=True)


async def run_editor(
    workspace: str,
    *,
    instance: str | None = None,
    reconnect: bool = True,
    on_event=None,
    max_shells: int = 8,
    job_retention: float = 3600.0,
) -> int:
    """Attach to the backend serving ``workspace`` (re-reading its session file after a token
    rotation) until its session ends. Returns a process exit code."""
    backoff = 0.25
    while True:
        found = sessions.find(instance) if instance else [s for s in [sessions.for_workspace(workspace)] if s]
        if not found:
            if on_event:
                on_event("no_session", None)
            return 3
        s = found[0]
        # The editor leg's own credential (docs/security.md §2); a backend older than it has none
        # and still takes the token.
        editor = HeadlessEditor(
            s.url,
            s.editor_token or s.token,
            s.workspace,
            session=s.instance_id,
            max_shells=max_shells,
            job_retention=job_retention,
        )
        try:
            ready = asyncio.Event()
            task = asyncio.create_task(editor.serve(ready))
            waiter = asyncio.create_task(ready.wait())
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if ready.is_set() and on_event:
                on_event("registered", editor.registration)
            await task
            backoff = 0.25
        except Exception as exc:  # noqa: BLE001
            if on_event:
                on_event("error", str(exc))
        if on_event:
            on_event("disconnected", {"code": editor.close_code, "reason": editor.close_reason})
        if not reconnect or editor.close_code == Close.GOING_AWAY:
            return 0
        await asyncio.sleep(0 if editor.close_code == Close.TOKEN_ROTATED else backoff)
        backoff = min(backoff * 2, 5)
