"""Leaving the agent's sandbox, one command at a time (README "Sandbox", docs/protocol.md §3.18).

A ``run`` with ``args.sandbox`` "off" (and ``args.reason``) asks to run outside the sandbox. The consent gate
decides it (``protocol.consent.decide_unsandboxed``: asked at every level, or allowed by an ``unsandboxed:``
rule) and, only when it allowed this very action, passes it on with ``Action.unsandboxed`` set. The local
runtime runs an escalated command only with that field: no field of a frame sets it (``parse_action`` never
does), and a runtime without the gate refuses the request instead of running it.
"""

from __future__ import annotations

from ..protocol import sandbox as sandbox_rules
from ..protocol.events import Action


def requested(action: Action) -> bool:
    """Whether this action asks to leave the sandbox."""
    return action.kind == "run" and sandbox_rules.wants_escalation(action.args)


def network_only(action: Action) -> bool:
    """Whether this escalation asks for the network alone (still sandboxed otherwise)."""
    return sandbox_rules.network_only(action.args)
