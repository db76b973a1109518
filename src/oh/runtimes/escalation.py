"""Leaving the agent's sandbox, one command at a time (README "Sandbox", docs/protocol.md §3.17).

A ``run`` with ``args.sandbox`` "off" (and ``args.reason``) asks to run outside the sandbox. The consent gate
decides it (``protocol.consent.decide_unsandboxed``: asked at every level, or allowed by an ``unsandboxed:``
rule) and, only when it allowed this very action, sets ``UNSANDBOXED`` while passing it on. The local runtime
runs an escalated command only under that flag: no field an agent sends can set it, and a runtime without
the gate refuses the request instead of running it.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

from ..protocol import sandbox as sandbox_rules
from ..protocol.events import Action

UNSANDBOXED: contextvars.ContextVar[bool] = contextvars.ContextVar("oh_unsandboxed_allowed", default=False)
# The same, for ``args.sandbox`` "network": the one-shot shell runs in the sandbox with the network on.
NETWORK: contextvars.ContextVar[bool] = contextvars.ContextVar("oh_network_allowed", default=False)
# Set by oh's own callers (``ensure``'s installs), never by an agent's field: a request to leave that nobody
# asked for by hand is refused at once when nobody can answer (docs/security.md §10), instead of waiting.
UNATTENDED_REFUSES: contextvars.ContextVar[bool] = contextvars.ContextVar("oh_unattended_refuses", default=False)


def requested(action: Action) -> bool:
    """Whether this action asks to leave the sandbox."""
    return action.kind == "run" and sandbox_rules.wants_escalation(action.args)


def network_only(action: Action) -> bool:
    """Whether this escalation asks for the network alone (still sandboxed otherwise)."""
    return sandbox_rules.network_only(action.args)


@contextlib.contextmanager
def allowing(on: bool, action: Action | None = None) -> Iterator[None]:
    """While the gate passes on an escalation it allowed (``on``), the runtime may run it as asked:
    unsandboxed, or (``args.sandbox`` "network") sandboxed with the network on."""
    if not on:
        yield
        return
    var = NETWORK if action is not None and network_only(action) else UNSANDBOXED
    token = var.set(True)
    try:
        yield
    finally:
        var.reset(token)


@contextlib.contextmanager
def ours() -> Iterator[None]:
    """oh's own escalation (an ``ensure`` install): refused at once when nobody can answer it."""
    token = UNATTENDED_REFUSES.set(True)
    try:
        yield
    finally:
        UNATTENDED_REFUSES.reset(token)
