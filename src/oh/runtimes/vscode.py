"""The ``vscode`` runtime: forward each action to the editor registered for the workspace.

It knows nothing of sockets beyond ``editor.connection.send``: the backend owns connections and
resolves ``editor.pending`` futures when observations (or the editor's disconnect) arrive.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable, Hashable

from ..backend.registry import EditorRegistry
from ..backend.transport import send_bounded
from ..protocol import frames
from ..protocol.errors import ErrorId
from ..protocol.events import Action, encode, error_observation
from .base import Runtime


class VscodeRuntime(Runtime):
    name = "vscode"

    def __init__(
        self,
        registry: EditorRegistry,
        workspace: str,
        editor_timeout: float = 30.0,
        on_waiting: Callable[[], None] | None = None,
        *,
        send_timeout: float = 40.0,
    ) -> None:
        self.registry = registry
        self.workspace = os.path.realpath(workspace)
        self.editor_timeout = editor_timeout
        self.send_timeout = send_timeout  # an editor that does not read for this long is dropped
        self.on_waiting = on_waiting  # e.g. the launcher's "open VS Code" signal

    def _absolute(self, action: Action) -> dict[str, Any] | None:
        """Rewrite a relative path against the backend's workspace; refuse an escaping one.

        The editor checks its own workspace folders too; this is the backend's own line of defence
        and makes relative paths mean the same thing whatever folder the editor has open.
        """
        frame = action.raw
        if action.kind == "run":
            return frame
        raw_path = action.path
        joined = raw_path if os.path.isabs(raw_path) else os.path.join(self.workspace, raw_path)
        real = os.path.realpath(joined)
        if not (real == self.workspace or real.startswith(self.workspace.rstrip(os.sep) + os.sep)):
            return None
        if joined != raw_path:
            frame = dict(frame)
            frame["args"] = {**action.args, "path": joined}
        return frame

    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        frame = self._absolute(action)
        if frame is None:
            return error_observation(
                action.id,
                ErrorId.PATH_DENIED,
                f"Path {action.path} is outside the workspace {self.workspace}; nothing was touched.",
            )
        editor = self.registry.pick(self.workspace)
        if editor is None:
            if self.on_waiting is not None:
                self.on_waiting()
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
