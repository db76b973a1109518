"""``ensure_environment``: an SDK tool for oh's workspace bootstrap (docs/protocol.md §3.14).

Agents re-run ``pip install -r requirements.txt`` / ``npm install`` again and again, or run tests on a
half-finished install. This tool asks the backend once: it makes ``.venv`` / ``node_modules`` ready
(installs run as jobs, shared with every agent asking at the same time), answers at once when nothing
changed, and says which interpreter and tools to use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from openhands.sdk.tool import Action, Observation, ToolDefinition, ToolExecutor
from pydantic import Field

from ...client import jobs as job_actions
from .common import mask
from .executor import LinkedExecutor, own_tool

if TYPE_CHECKING:
    from openhands.sdk.conversation import LocalConversation
    from openhands.sdk.conversation.state import ConversationState

NAME = "ensure_environment"
WAIT_DEFAULT = 600.0
_SLACK = 30.0

DESCRIPTION = """Make the project's environments ready before running its code or tests, and learn which interpreter \
to use: Python (a `.venv` from uv.lock, poetry.lock, requirements*.txt or pyproject.toml; with uv when installed, else \
venv + pip) and Node (`node_modules` with the lockfile's own installer: npm ci, yarn, pnpm, bun).

Call it at the start instead of running pip/npm install yourself. A second call with nothing changed answers at once \
(a stamp in the environment records what was installed); a changed lockfile or requirement re-runs only that install; \
an interrupted install is redone. Then use what it names: e.g. `.venv/bin/python -m pytest`, `node_modules/.bin/tsc`.
The installs run as background jobs shared with every agent asking at the same time. If one takes longer than \
`timeout` seconds (default 600), the answer says it is still installing and names the job (follow it with \
background_jobs, or call this tool again). The answer is an error when a target failed (with the installer's last \
output) or was refused (e.g. yarn.lock without yarn); other ecosystems found (go.mod, Cargo.toml, ...) are named, not \
installed."""


class EnsureEnvironmentAction(Action):
    """Bring the project's environments to ready."""

    targets: list[Literal["python", "node"]] | None = Field(
        default=None, description="Only these: python, node (default: every one detected)."
    )
    path: str | None = Field(default=None, description="The project directory (default: the working directory).")
    force: bool = Field(default=False, description="Redo the environments even when they are up to date.")
    timeout: float | None = Field(
        default=None, ge=1, description="Seconds to wait for the installs at most (default 600); they go on after it."
    )


class EnsureEnvironmentObservation(Observation):
    """The backend's answer: ``state`` ready | running | failed | nothing, and one record per target."""

    state: str | None = Field(default=None, description="ready | running | failed | nothing (no project found)")
    targets: list[dict[str, Any]] = Field(
        default_factory=list, description="Per target: state, ready (interpreter, bin), command, job_id, duration_s."
    )
    path: str | None = Field(default=None)


class EnsureEnvironmentExecutor(LinkedExecutor, ToolExecutor[EnsureEnvironmentAction, EnsureEnvironmentObservation]):
    def __call__(
        self, action: EnsureEnvironmentAction, conversation: "LocalConversation | None" = None
    ) -> EnsureEnvironmentObservation:
        wait = action.timeout or WAIT_DEFAULT
        frame = job_actions.ensure(
            targets=list(action.targets) if action.targets else None, path=action.path, force=action.force, timeout=wait
        )
        obs = self.send(frame, timeout=wait + _SLACK)
        extras = obs.get("extras") or {}
        text = mask(obs.get("content") or "", conversation)
        if obs.get("observation") != "ensure":
            return EnsureEnvironmentObservation.from_text(
                text=f"{extras.get('error_id') or 'ERROR'}: {text}", is_error=True
            )
        state = extras.get("state")
        return EnsureEnvironmentObservation.from_text(
            text=text,
            state=state,
            targets=list(extras.get("targets") or []),
            path=extras.get("path"),
            is_error=state == "failed",
        )


class EnsureEnvironmentTool(ToolDefinition[EnsureEnvironmentAction, EnsureEnvironmentObservation]):
    """oh's workspace bootstrap as an SDK tool (``Tool(name="ensure_environment")`` after ``install()``)."""

    name = NAME

    @classmethod
    def create(cls, conv_state: "ConversationState") -> Sequence["EnsureEnvironmentTool"]:  # type: ignore[override]
        return own_tool(
            cls,
            NAME,
            DESCRIPTION,
            EnsureEnvironmentAction,
            EnsureEnvironmentObservation,
            EnsureEnvironmentExecutor(conv_state),
            destructive=False,
            idempotent=True,
            open_world=True,
        )
