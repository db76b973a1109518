"""The ``vscode`` runtime: forward each action to the editor registered for the workspace.

It knows nothing of sockets beyond ``editor.connection.send``: the backend owns connections and
resolves ``editor.pending`` futures when observations (or the editor's disconnect) arrive.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Hashable

from ..protocol import frames
from ..protocol.errors import ErrorId
from ..protocol.events import Action, encode, error_observation
from ..protocol.paths import within
from ..transport import send_bounded
from .base import AgentContext, Runtime, as_context
from .editors import EditorRegistry


class VscodeRuntime(Runtime):
    name = "vscode"

    def __init__(
        self,
        registry: EditorRegistry,
        workspace: str,
        editor_timeout: float = 30.0,
        *,
        send_timeout: float = 40.0,
        allowed_roots: list[str] | None = None,
    ) -> None:
        self.registry = registry
        self.workspace = os.path.realpath(workspace)
        # The BACKEND's roots (workspace + `oh start --allow`), not the editor window's folders.
        self.roots = [os.path.realpath(r) for r in (allowed_roots or [self.workspace])]
        self.editor_timeout = editor_timeout
        self.send_timeout = send_timeout  # an editor that does not read for this long is dropped

    def _workdir(self, ctx: AgentContext) -> str:
        if ctx.workdir:
            real = os.path.realpath(ctx.workdir)
            if any(within(real, r) for r in self.roots):
                return real
        return self.workspace

    def _absolute(self, action: Action, ctx: AgentContext) -> dict[str, Any] | str:  # or an error observation
        """The frame for the editor: relative ``path``/``cwd`` made absolute against the agent's
        working directory, the ``agent`` field attached; or the refused path (PATH_DENIED).

        The editor checks too; this is the backend's own line of defence, and it makes relative
        paths mean the same thing whatever folder the editor window has open (issue 9 #14).
        """
        workdir = self._workdir(ctx)
        args = action.args
        key = "cwd" if action.kind == "run" else "path"
        raw_path = args.get(key) if action.kind == "run" else action.path
        if raw_path:
            if any(len(os.fsencode(part)) > 255 for part in raw_path.split("/")):
                return error_observation(action.id, ErrorId.TOOL_ERROR, f"File name too long: a component of {raw_path[:120]}... is over 255 bytes.")
            expanded = os.path.expanduser(raw_path)
            joined = os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(workdir, expanded))
            if not any(within(os.path.realpath(joined), r) for r in self.roots):
                return raw_path
            if joined != raw_path:
                args = {**args, key: joined}
        agent = frames.agent_field(ctx.id, ctx.name, workdir, ctx.shell_key)
        frame = action.with_id(action.id, agent=agent)
        frame["args"] = args
        return frame

    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        ctx = as_context(agent)
        frame = self._absolute(action, ctx)
        if isinstance(frame, dict) and frame.get("observation") == "error":
            return frame
        if isinstance(frame, str):
            what = "The working directory" if action.kind == "run" else "Path"
            return error_observation(
                action.id,
                ErrorId.PATH_DENIED,
                f"{what} {frame} is outside the allowed roots ({', '.join(self.roots)}); nothing was done.",
            )
        editor = self.registry.pick(self.workspace)
        if editor is None:
            editor = await self.registry.wait_for(self.workspace, self.editor_timeout)
        if editor is None:
            return error_observation(
                action.id,
                ErrorId.NO_EDITOR,
                f"No editor is connected for {self.workspace} (waited {self.editor_timeout:g} s). "
                "Open the folder in VS Code with the oh extension installed, or run `oh attach`.",
            )
        if action.kind not in editor.registration.capabilities:
            return error_observation(
                action.id, ErrorId.TOOL_UNSUPPORTED, f"The editor {editor.registration.editor_name} cannot execute '{action.kind}'."
            )
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        editor.pending[action.id] = future
        try:
            if not await send_bounded(editor.connection, encode(frame), self.send_timeout):
                return error_observation(
                    action.id, ErrorId.EDITOR_DISCONNECTED, "The editor disconnected (or stopped reading) before the action could be delivered."
                )
            return await future
        except asyncio.CancelledError:
            # Agent gone, deadline passed or shutdown: tell the editor to stop the work.
            if editor.pending.pop(action.id, None) is not None:
                try:
                    await asyncio.wait_for(editor.connection.send(encode(frames.cancel(action.id)), text=True), 1.0)
                except Exception:  # noqa: BLE001 - the editor may be gone already
                    pass
            raise
        except Exception:  # noqa: BLE001 - the send failed: the editor dropped
            return error_observation(
                action.id, ErrorId.EDITOR_DISCONNECTED, "The editor disconnected before the action could be delivered."
            )
        finally:
            editor.pending.pop(action.id, None)

    async def agent_closed(self, agent: Hashable) -> None:
        """An agent with a private shell left: tell the editors to kill what runs there and dispose
        of its terminal (shared X-OH-Shell terminals stay until the backend stops)."""
        ctx = as_context(agent)
        if ctx.shared:
            return
        frame = encode(frames.agent_gone(ctx.shell_key))
        for editor in self.registry.all():
            if editor.serves(self.workspace):
                try:
                    await asyncio.wait_for(editor.connection.send(frame, text=True), 1.0)
                except Exception:  # noqa: BLE001 - an editor that is gone has no terminal to dispose
                    pass
