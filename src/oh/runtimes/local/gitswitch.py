"""Branch mode's switch on this machine (docs/protocol.md §3.12): git in a thread. The local runtime and
the headless editor use it; the branch guard (``runtimes/branch.py``) only calls a runtime's switch, so
the runtime never imports the wrapper around it."""

from __future__ import annotations

import asyncio
from typing import Any

from ...errors import OhBaseError
from ...protocol.branch import decide, note
from ...protocol.errors import ErrorId
from ...protocol.events import branch_observation, error_observation
from ..base import AgentContext, Switch


class _Refused(OhBaseError):
    """decide() refused: its message is the BRANCH_FAILED text."""


def local_switch(workspace: str) -> Switch:
    """The switch of the local runtime: git in a thread. Nobody can be asked here, so a question
    (dirty tree, no repository) becomes BRANCH_FAILED naming the flag to pass to `oh start`."""
    from ... import gitrepo  # only with the local runtime (and `oh attach`): the vscode one never runs git

    def blocking(args: dict[str, Any]) -> dict[str, Any]:
        state = gitrepo.inspect(workspace)
        decision = decide(state, args)
        if decision.ask is not None:
            decision = decide(state, {**args, "on_dirty": "abort", "on_not_git": "abort"})
        if decision.off:
            return {"off": True}
        if decision.refuse is not None:
            raise _Refused(decision.refuse)
        return gitrepo.apply(workspace, state, decision)

    async def switch(args: dict[str, Any], ctx: AgentContext, leg_id: int) -> dict[str, Any]:
        try:
            extras = await asyncio.to_thread(blocking, args)
        except (_Refused, gitrepo.GitError) as exc:
            return error_observation(
                leg_id,
                ErrorId.BRANCH_FAILED,
                f"{exc}"
                if isinstance(exc, _Refused)
                else f"Branch mode could not switch branches: {exc} The action was not executed.",
            )
        return branch_observation(leg_id, note(extras) or "Branch mode is off for this session.", extras)

    return switch
