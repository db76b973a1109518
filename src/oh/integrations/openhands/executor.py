"""What oh's own SDK tools (``background_jobs``, ``editor_knowledge``, ``ensure_environment``) share: the
conversation's link, found when the tool is created or, when no backend served the directory then, at each later
call; and the one tool instance their ``create`` returns (``own_tool``).

Unlike ``terminal`` and ``file_editor`` these tools have no SDK implementation to fall back to, so
without a backend each call answers with an error saying how to start one (the model can go on
with the terminal) instead of the tool vanishing from the agent.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from openhands.sdk.tool import ToolAnnotations

from . import link as links
from .common import conversation_key, settings

if TYPE_CHECKING:
    from openhands.sdk.conversation.state import ConversationState


class LinkedExecutor:
    """Holds (and releases once) the shared link of one conversation; mixed into the tools' executors."""

    def __init__(self, conv_state: "ConversationState") -> None:
        self._workdir = conv_state.workspace.working_dir
        self._key = conversation_key(conv_state)
        self._lock = threading.Lock()
        self._closed = False
        self.link: links.Link | None = links.link_for(self._key, self._workdir, settings.instance, settings.name)

    def send(self, action: dict[str, Any], timeout: float) -> dict[str, Any]:
        """The observation, or an error observation when no backend serves the directory (yet)."""
        with self._lock:
            if self.link is None and not self._closed:
                self.link = links.link_for(self._key, self._workdir, settings.instance, settings.name)
            link = self.link
        if link is None:
            return {
                "observation": "error",
                "extras": {"error_id": "NO_BACKEND"},
                "content": (
                    f"No oh backend serves {self._workdir}: this tool acts through one. Start it with `oh start` in "
                    "that directory (or `oh start --runtime vscode` to use VS Code), then call the tool again."
                ),
            }
        return link.send(action, timeout=timeout)

    def close(self) -> None:
        with self._lock:
            link, self.link, self._closed = self.link, None, True
        if link is not None:
            links.release(self._key, link)


def own_tool(
    cls: Any,
    name: str,
    description: str,
    action_type: Any,
    observation_type: Any,
    executor: Any,
    *,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
) -> list[Any]:
    """What an oh tool's ``create`` returns: its one instance. Never read-only (each call goes to the backend)."""
    hints = {"readOnlyHint": False, "destructiveHint": destructive, "idempotentHint": idempotent}
    annotations = ToolAnnotations(title=name, openWorldHint=open_world, **hints)
    types = {"action_type": action_type, "observation_type": observation_type}
    return [cls(description=description, annotations=annotations, executor=executor, **types)]
