"""Id renumbering and correlation between the agent leg and the executor leg (pure).

Ids are per leg: each agent picks its own action ids (they may collide between agents), the backend
gives every forwarded action a fresh backend-wide id, and maps the executor's ``cause`` back to
(agent, original id). Nothing here waits; the I/O shell attaches futures to the entries.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Generic, Hashable, TypeVar

T = TypeVar("T")


@dataclass(slots=True)
class Pending(Generic[T]):
    leg_id: int  # the id the executor sees
    agent: Hashable  # who asked
    agent_action_id: int  # the id the agent used (its observation's cause)
    kind: str
    started: float
    payload: T | None = None  # I/O shell's handle (e.g. a future), opaque here
    meta: dict[str, Any] = field(default_factory=dict)


class Correlator(Generic[T]):
    """Tracks in-flight actions. Duplicate in-flight ids from one agent are refused."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._by_leg: dict[int, Pending[T]] = {}
        self._by_agent: dict[tuple[Hashable, int], int] = {}

    def __len__(self) -> int:
        return len(self._by_leg)

    def in_flight(self, agent: Hashable, agent_action_id: int) -> bool:
        return (agent, agent_action_id) in self._by_agent

    def start(
        self, agent: Hashable, agent_action_id: int, kind: str, started: float, payload: T | None = None
    ) -> Pending[T]:
        key = (agent, agent_action_id)
        if key in self._by_agent:
            raise KeyError(f"action id {agent_action_id} is already in flight on this connection")
        leg_id = next(self._ids)
        entry = Pending(leg_id, agent, agent_action_id, kind, started, payload)
        self._by_leg[leg_id] = entry
        self._by_agent[key] = leg_id
        return entry

    def get(self, leg_id: int) -> Pending[T] | None:
        return self._by_leg.get(leg_id)

    def finish(self, leg_id: int) -> Pending[T] | None:
        """Remove and return the entry; None when unknown (late or duplicate answer)."""
        entry = self._by_leg.pop(leg_id, None)
        if entry is not None:
            self._by_agent.pop((entry.agent, entry.agent_action_id), None)
        return entry

    def of_agent(self, agent: Hashable) -> list[Pending[T]]:
        return [e for e in self._by_leg.values() if e.agent == agent]

    def all(self) -> list[Pending[T]]:
        return list(self._by_leg.values())
