"""The runtime stack a backend runs: the inner runtime (``local`` or ``vscode``) and the wrappers around it,
composed in one place, inside out (docs/architecture.md "The runtime stack"):

1. the inner runtime (``choose.make_runtime``), which knows none of its wrappers, and the recorder right around
   it when history is on (``StackHooks.wrap_inner``: it records what really ran, after every gate);
1b. ``Arbiter`` (issue 37, §3.18): a write/edit based on a stale read is refused, claims are enforced;
2. ``BranchGuard`` (git-branch mode, §3.12): the branch is in place before the first change;
3. ``ConsentGuard`` (§3.13): around branch mode, so its switch waits for nothing the user refused;
4. the next wrappers go here, each around ``runtime`` (sandbox escalation, history/undo recording, shares);
5. ``EnsureService`` (§3.14), outermost: its installs and setup script are ordinary runs through every gate.

``Stack`` names each layer, so the backend reads a layer's own state (branch mode's ``describe``, the setup
script's state, the approvals) from the layer, never through another one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..protocol.branch import Plan
from ..protocol.consent import Policy
from .arbiter import Arbiter
from .base import Runtime
from .branch import BranchGuard
from .choose import RuntimeSettings, make_runtime
from .consent import Approvals, ConsentGuard
from .editor_link import EditorLink
from .ensure import EnsureService


@dataclass(frozen=True)
class StackSettings:
    """What the stack is built from (the backend's settings; runtimes read no configuration)."""

    runtime: str  # a name of choose.RUNTIMES
    inner: RuntimeSettings
    branch: Plan | None = None  # git-branch mode: None = off
    consent: Policy | None = None  # None = no gate (level never without rules)
    approval_timeout: float = 600.0
    action_timeout: float = 300.0  # the ensure service's runs without their own timeout
    setup_script: bool = True


@dataclass(frozen=True)
class StackHooks:
    """What the stack calls back in the backend: ids of the ensure service's own actions (backend-wide leg
    ids, so they never collide with agents'), and branch mode's events (monitors)."""

    new_id: Callable[[], int]
    release_id: Callable[[int], object] = lambda _leg: None  # what it returns is not used
    on_branch_event: Callable[[dict[str, Any]], None] | None = None
    # A recorder right around the inner runtime (history, issue 29: it sees what really ran, after every gate)
    wrap_inner: Callable[[Runtime], Runtime] | None = None


@dataclass(frozen=True)
class Stack:
    inner: Runtime  # local or vscode
    branch: BranchGuard | None
    consent: ConsentGuard | None
    ensure: EnsureService
    arbiter: Arbiter | None = None  # several agents (issue 37): stale writes refused, claims

    @property
    def outer(self) -> Runtime:
        """What the backend's roles send actions to."""
        return self.ensure


def build(settings: StackSettings, link: EditorLink, hooks: StackHooks) -> Stack:
    """The stack, inside out; ``link`` is the backend's editor connection (the vscode runtime sends through it)."""
    inner = make_runtime(settings.runtime, settings.inner, link)
    runtime: Runtime = inner if hooks.wrap_inner is None else hooks.wrap_inner(inner)
    # Several agents (issue 37, §3.18): around what really runs, inside the gates, so a file's check and change
    # are one step for every other agent's action (its per-file lock is never held while the user is asked).
    runtime = arbiter = Arbiter(runtime, settings.inner.workspace, settings.inner.allowed_roots)
    branch = consent = None
    if settings.branch is not None:
        runtime = branch = BranchGuard(runtime, settings.branch, inner.branch_switch())
        branch.on_branch_event = hooks.on_branch_event
    if settings.consent is not None:
        approvals = Approvals(settings.approval_timeout)
        runtime = consent = ConsentGuard(runtime, settings.consent, approvals, review=settings.inner.review)
    # Next wrappers here: `runtime = Wrapper(runtime, ...)`, and a field of Stack for what the backend reads.
    ensure = EnsureService(
        runtime,
        settings.inner.workspace,
        settings.inner.allowed_roots,
        new_id=hooks.new_id,
        release_id=hooks.release_id,
        default_timeout=settings.action_timeout,
        setup=settings.setup_script,
    )
    return Stack(inner, branch, consent, ensure, arbiter)
