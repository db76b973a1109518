"""Git-branch mode around any runtime (docs/protocol.md §3.12): before the first action that may change
files, make sure the workspace sits on the feature branch; then let every action through.

The switch itself belongs to whoever owns the workspace's git: the local runtime runs git
(``runtimes/local/gitswitch.local_switch``), the vscode runtime asks the editor (a ``branch`` frame,
``VscodeRuntime.branch``), which uses VS Code's Git extension. Both answer with a ``branch`` observation
or a ``BRANCH_FAILED`` error; on an error the agent's action is NOT executed (it would land on the wrong branch).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any, Callable, Hashable

from ..protocol.branch import Plan, is_change, note
from ..protocol.errors import ErrorId
from ..protocol.events import Action, error_observation
from ..protocol.observation import prepend_note
from .base import AgentContext, Runtime, Switch, Wrapper, as_context


class BranchGuard(Wrapper):
    def __init__(self, inner: Runtime, plan: Plan, switch: Switch, clock: Callable[[], datetime] | None = None) -> None:
        self.inner = inner
        self.plan = plan
        self._switch = switch
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._lock = asyncio.Lock()
        self.state = "pending"  # -> "on" (on the branch) | "off" (the user chose no branch)
        self.result: dict[str, Any] = {}
        self.created: str | None = None  # the branch this session created (reused, never re-created)
        self.last_error: str | None = None
        self.on_branch_event: Callable[[dict[str, Any]], None] | None = None  # set by the backend (monitors)

    def branch_switch(self) -> Switch:
        return self._switch

    def describe(self) -> dict[str, Any]:
        """For `oh status` and the live view: the mode's state and the branch once known."""
        out: dict[str, Any] = {
            "state": self.state,
            "name": self.result.get("branch") if self.state == "on" else self.plan.name,
        }
        if self.state == "on":
            out.update(created=bool(self.result.get("created")), previous=self.result.get("previous"))
        if self.state == "pending" and self.last_error:
            out["error"] = self.last_error
        return out

    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        line = ""
        if self.state == "pending" and is_change(action.kind, action.args):
            async with self._lock:  # one switch, however many agents change files at once
                if self.state == "pending":
                    answer = await self._ensure(action, as_context(agent))
                    if answer.get("observation") == "error":
                        return answer
                    line = note(answer.get("extras") or {})
        obs = await self.inner.execute(action, agent)
        if line:
            prepend_note(obs, line)
        return obs

    async def _ensure(self, action: Action, ctx: AgentContext) -> dict[str, Any]:
        args = self.plan.args(ctx.name, self._clock(), reuse=self.created)
        try:
            answer = await self._switch(args, ctx, action.id)
        except Exception as exc:  # noqa: BLE001 - a failed switch is the agent's typed error, not a crash
            answer = error_observation(
                action.id,
                ErrorId.BRANCH_FAILED,
                f"Branch mode could not switch branches ({exc}); the action was not executed.",
            )
        if answer.get("observation") == "error":
            extras = answer.get("extras") or {}
            if extras.get("error_id") not in (ErrorId.BRANCH_FAILED, "BRANCH_FAILED"):
                # NO_EDITOR, EDITOR_DISCONNECTED, TIMEOUT...: keep the id, say the action did not run.
                answer["content"] = (
                    "Branch mode: the branch could not be prepared, so the action was not executed. "
                    f"{answer.get('content', '')}"
                )
            self.last_error = str(answer.get("content", ""))[:300]
            answer["cause"] = action.id
            return answer
        extras = answer.get("extras") or {}
        self.last_error = None
        if extras.get("off"):
            self.state = "off"
        else:
            self.state = "on"
            self.result = extras
            if extras.get("created"):
                self.created = extras.get("branch")
        if self.on_branch_event is not None:
            self.on_branch_event(self.describe())
        return answer
