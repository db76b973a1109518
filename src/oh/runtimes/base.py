"""The Runtime interface: what executes an action and returns its observation.

The backend routes every validated action to one Runtime. ``local`` executes in this process (a
persistent shell per agent, a file editor); ``vscode`` forwards to a registered editor. A runtime
always returns exactly one observation dict (protocol builders in ``oh.protocol.events``, ``cause`` =
the action's id, no ``id`` — the backend numbers observations); it never raises for a tool failure.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Hashable

from ..protocol.events import Action


@dataclass(frozen=True, slots=True)
class AgentContext:
    """Who sent an action: the backend's agent id, its name, working directory and shell key.

    ``shell`` None = a private shell (keyed by ``id``, killed when the agent leaves); a string = the
    shared shell of that ``X-OH-Shell`` key (kept until the backend stops).
    """

    id: str
    name: str = "agent"
    workdir: str | None = None  # None: the workspace
    shell: str | None = None

    @property
    def shell_key(self) -> str:
        return self.shell or self.id

    @property
    def shared(self) -> bool:
        return self.shell is not None


def report(action: Action, event: str, **fields: Any) -> None:
    """Tell the agent of the running ``action`` (protocol/progress.py; a no-op when it did not ask): through
    ``action.on_progress``, which only the backend sets, so nothing an agent sends reaches another's action."""
    sink = action.on_progress
    if sink is not None:
        sink(event, **fields)


def output_sink(action: Action) -> Callable[[str], None] | None:
    """``action``'s ``output`` reporter (a command's output callbacks run outside its task, so they keep this
    one), or None when the agent did not ask for output frames."""
    sink = action.on_progress
    if sink is None or "output" not in getattr(sink, "events", ("output",)):
        return None
    return lambda text: sink("output", text=text)


def as_context(agent: Hashable) -> AgentContext:
    """Runtimes accept an AgentContext or (older callers, tests) any hashable key = a private shell."""
    if isinstance(agent, AgentContext):
        return agent
    return AgentContext(id=str(agent))


# A job's start or end for monitors: ("job_started" | "job_finished", its record).
JobEvent = Callable[[str, dict[str, Any]], None]

# Branch mode's switch (docs/protocol.md §3.12): (frame args, agent, id to use on the editor leg)
# -> a `branch` observation or an error observation.
Switch = Callable[[dict[str, Any], AgentContext, int], Awaitable[dict[str, Any]]]


class Runtime(ABC):
    """What the backend asks of a runtime. The backend never asks which runtime it has: what differs
    between runtimes is a method here (with the common answer as its default)."""

    name: str = "?"
    # Set by the backend: called with ("job_started" | "job_finished", job record) (docs/protocol.md §5).
    on_job_event: JobEvent | None = None
    # Set by the backend: called with an agent shell's note when it is first said (the clean-shell fallback,
    # a fix oh made to the rc's settings); monitors get it as `shell_note` (docs/protocol.md §5).
    on_shell_note: Callable[[str], None] | None = None
    # Review mode's queue of proposals when this process holds them (the local runtime's
    # ProposalQueue, docs/protocol.md §3.11; `oh review` decides them), else None. Typed Any: this interface
    # imports no runtime of its own (runtimes/local is below it), and only the backend's review verbs use it.
    proposals: Any = None

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Called once before the first action."""

    @abstractmethod
    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        """Run ``action`` for ``agent`` (a connection key) and return its observation."""

    async def agent_closed(self, agent: Hashable) -> None:  # noqa: B027
        """The agent went away: cancel its work and clean up its processes."""

    async def close(self) -> None:  # noqa: B027
        """Backend shutdown: stop everything."""

    def deadline_allowance(self, action: Action) -> float:
        """Seconds this runtime may spend on ``action`` before its work starts (added to its deadline)."""
        return 0.0

    def review_elsewhere(self) -> str | None:
        """Where proposals are reviewed when not with `oh review` (the refusal `oh review` gets), or None."""
        return None

    def watched_shell(self, action: Action, agent: Hashable) -> str | None:
        """The key of the sandbox ``action`` runs in when everything it can change is changed from there, so
        history may credit it only with what that sandbox did (issue 36 item 5); None: not known (the default)."""
        return None

    def sandbox_roots(self) -> dict[str, list[int]]:
        """Per sandbox key, the pids of the bubblewrap processes running its shells (history's ``Activity``).
        Called from history's thread: reads, never changes, the runtime's state."""
        return {}

    def sandbox_view(self) -> Any:
        """The agent shell's sandbox as this runtime applies it (docs/architecture.md "Runtime.sandbox_view"): an
        object with ``spec`` (protocol.sandbox.Spec, resolved) and ``status()`` (level, network, confined,
        summary for `oh status` and the live view), or None when this runtime runs no shell of its own kind."""
        return None

    def branch_switch(self) -> Switch:
        """Branch mode's switch for this runtime (docs/protocol.md §3.12)."""
        raise NotImplementedError(f"the {self.name} runtime cannot switch git branches")


class Wrapper(Runtime):
    """A runtime around another one (branch mode, consent, workspace bootstrap; composed by
    ``runtimes/stack.build``): every member of ``Runtime`` a wrapper does not change reaches ``inner``
    unchanged, one by one. Nothing else is forwarded: what is particular to one layer is read from that
    layer (``stack.Stack`` names each), never through another."""

    def __init__(self, inner: Runtime) -> None:
        self.inner = inner

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    @property
    def on_job_event(self) -> JobEvent | None:
        return self.inner.on_job_event

    @on_job_event.setter
    def on_job_event(self, callback: JobEvent | None) -> None:
        self.inner.on_job_event = callback

    @property
    def on_shell_note(self) -> Callable[[str], None] | None:
        return self.inner.on_shell_note

    @on_shell_note.setter
    def on_shell_note(self, callback: Callable[[str], None] | None) -> None:
        self.inner.on_shell_note = callback

    @property
    def proposals(self) -> Any:
        return self.inner.proposals

    def deadline_allowance(self, action: Action) -> float:
        return self.inner.deadline_allowance(action)

    def review_elsewhere(self) -> str | None:
        return self.inner.review_elsewhere()

    def watched_shell(self, action: Action, agent: Hashable) -> str | None:
        return self.inner.watched_shell(action, agent)

    def sandbox_roots(self) -> dict[str, list[int]]:
        return self.inner.sandbox_roots()

    def branch_switch(self) -> Switch:
        return self.inner.branch_switch()

    def sandbox_view(self) -> Any:
        return self.inner.sandbox_view()

    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        return await self.inner.execute(action, agent)

    async def start(self) -> None:
        await self.inner.start()

    async def agent_closed(self, agent: Hashable) -> None:
        await self.inner.agent_closed(agent)

    async def close(self) -> None:
        await self.inner.close()
