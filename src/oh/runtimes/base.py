"""The Runtime interface: what executes an action and returns its observation.

The backend routes every validated action to one Runtime. ``local`` executes in this process (a
persistent shell per agent, a file editor); ``vscode`` forwards to a registered editor. A runtime
always returns exactly one observation dict (protocol builders in ``oh.protocol.events``, ``cause`` =
the action's id, no ``id`` — the backend numbers observations); it never raises for a tool failure.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Hashable

from ..protocol.events import Action


class Runtime(ABC):
    name: str = "?"

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Called once before the first action."""

    @abstractmethod
    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        """Run ``action`` for ``agent`` (a connection key) and return its observation."""

    async def agent_closed(self, agent: Hashable) -> None:  # noqa: B027
        """The agent went away: cancel its work and clean up its processes."""

    async def close(self) -> None:  # noqa: B027
        """Backend shutdown: stop everything."""
