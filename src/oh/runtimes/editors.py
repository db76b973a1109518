"""Connected editors, and waiting for one that serves a workspace: the state of the ``vscode``
runtime (the backend adds and removes editors as their connections come and go)."""

from __future__ import annotations

import asyncio
import itertools
import os
from dataclasses import dataclass, field
from typing import Any

from ..protocol.frames import Registration, RegistrationError
from ..protocol.paths import within


@dataclass(eq=False)
class Editor:
    editor_id: str
    registration: Registration
    connection: Any  # the websockets connection; the registry never touches it
    connected_at: float
    pending: dict[int, asyncio.Future] = field(default_factory=dict)
    real_folders: list[str] = field(default_factory=list)
    _serves: dict[str, bool] = field(default_factory=dict, repr=False)  # memo: asked once per action

    def serves(self, workspace: str) -> bool:
        # One of its folders must contain the whole workspace: a window opened on a subfolder could
        # not reach the rest of the workspace's files (and the extension would not connect for it).
        # Memoised: real_folders is set once, at registration (EditorRegistry.add).
        answer = self._serves.get(workspace)
        if answer is None:
            if len(self._serves) >= 64:
                self._serves.clear()
            answer = self._serves[workspace] = any(within(workspace, f) for f in self.real_folders)
        return answer

    def describe(self) -> dict[str, Any]:
        return {"editor_id": self.editor_id, **self.registration.describe(), "pending": len(self.pending)}


class EditorRegistry:
    def __init__(self) -> None:
        self._editors: dict[str, Editor] = {}
        self._ids = itertools.count(1)
        self._changed = asyncio.Event()

    def __len__(self) -> int:
        return len(self._editors)

    def new_id(self) -> str:
        return f"e{next(self._ids)}"

    @staticmethod
    def check_folders(folders: list[str]) -> None:
        """Refuse a registration whose folders are not absolute: a relative one (".") would be
        resolved against the BACKEND's cwd, not the editor's window, and match by accident."""
        for f in folders:
            if not os.path.isabs(f):
                raise RegistrationError(
                    "BAD_REQUEST", f"register.workspace_folders must be absolute paths; got {f[:200]!r}."
                )

    def add(self, editor: Editor) -> None:
        editor.real_folders = [os.path.realpath(f) for f in editor.registration.workspace_folders]
        editor._serves.clear()
        self._editors[editor.editor_id] = editor
        self._changed.set()
        self._changed = asyncio.Event()

    def remove(self, editor: Editor) -> None:
        self._editors.pop(editor.editor_id, None)

    def all(self) -> list[Editor]:
        return list(self._editors.values())

    def pick(self, workspace: str) -> Editor | None:
        """The most recently registered editor serving ``workspace``."""
        for editor in reversed(list(self._editors.values())):
            if editor.serves(workspace):
                return editor
        return None

    async def wait_for(self, workspace: str, timeout: float) -> Editor | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            editor = self.pick(workspace)
            if editor is not None:
                return editor
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except asyncio.TimeoutError:
                return None
