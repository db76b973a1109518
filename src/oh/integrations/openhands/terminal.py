"""The SDK's ``terminal`` tool, executed by the oh backend (one persistent shell per conversation)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openhands.sdk.tool import ToolExecutor
from openhands.tools.terminal.definition import (
    _LITERAL_ARG_HINT_TEMPLATE,
    TerminalAction,
    TerminalObservation,
    TerminalTool,
    looks_like_python_literal_argument,
)
from openhands.tools.terminal.metadata import CmdOutputMetadata

from ...client import actions
from . import link as links
from .common import conversation_link, mask, secrets_for, security_risk_of

if TYPE_CHECKING:
    from openhands.sdk.conversation import LocalConversation
    from openhands.sdk.conversation.state import ConversationState

# How long past the action's own timeout the client waits before giving up on the backend (the
# backend itself always answers within timeout + 5 s, or 240 s for the no-new-output rule).
_WAIT_SLACK = 60.0
_DEFAULT_WAIT = 300.0

_METADATA_KEYS = ("exit_code", "pid", "username", "hostname", "working_dir", "py_interpreter_path", "prefix", "suffix")


def _metadata(md: dict[str, Any]) -> CmdOutputMetadata:
    clean = {k: md[k] for k in _METADATA_KEYS if md.get(k) is not None}
    return CmdOutputMetadata(**clean)


class OhTerminalExecutor(links.LinkedExecutor, ToolExecutor[TerminalAction, TerminalObservation]):
    """Runs TerminalActions in the oh backend's shell for this conversation's working directory."""

    def __init__(
        self,
        link: links.Link,
        conv_key: str,
        full_output_save_dir: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        super().__init__(link, conv_key)
        # TerminalTool.create(env=...): the client's session variables. Sent with every command (oh keeps
        # args.env out of traces and logs) so they survive a reset, as the SDK re-applies them to a new session.
        self._env = {str(k): str(v) for k, v in (env or {}).items()}
        self.full_output_save_dir = full_output_save_dir

    @property
    def working_dir(self) -> str:
        return self.link.workdir

    def __call__(self, action: TerminalAction, conversation: "LocalConversation | None" = None) -> TerminalObservation:
        if action.reset and action.is_input:
            raise ValueError("Cannot use reset=True with is_input=True")  # the SDK's own check and text
        if not action.is_input:
            kind = looks_like_python_literal_argument(action.command)
            if kind is not None:
                head = action.command.lstrip()[:60]
                return TerminalObservation.from_text(
                    _LITERAL_ARG_HINT_TEMPLATE.format(literal_kind=kind, head=head),
                    is_error=True,
                    command=action.command,
                    exit_code=None,
                )
        env = (
            {**self._env, **secrets_for(action.command, conversation)}
            if action.command.strip() and not action.is_input
            else {}
        )
        frame = actions.run(
            action.command,
            timeout=action.timeout,
            is_input=action.is_input,
            reset=action.reset,
            env=env,
            max_output=0,  # the SDK truncates itself and saves the full output to a file
            exclusive=True,  # one terminal, as the SDK's: a new command while one runs is an error
            security_risk=security_risk_of(action, conversation),
        )
        wait = (action.timeout or _DEFAULT_WAIT) + _WAIT_SLACK
        obs = self.link.send(frame, timeout=wait)
        return self._observation(action, obs, conversation)

    def _observation(
        self, action: TerminalAction, obs: dict[str, Any], conversation: "LocalConversation | None"
    ) -> TerminalObservation:
        label = action.command
        if action.reset:
            label = f"[RESET] {action.command}" if action.command.strip() else "[RESET]"
        text = mask(obs.get("content") or "", conversation)
        if obs.get("observation") != "run":
            # BUSY ("NOT executed"), NO_COMMAND ("no previous running command"), PATH_DENIED, ...: the
            # SDK reports these as errors the model should react to, not as a finished command.
            return TerminalObservation.from_text(
                text=text, is_error=True, command=label, exit_code=None, full_output_save_dir=self.full_output_save_dir
            )
        extras = obs.get("extras") or {}
        md = _metadata(extras.get("metadata") or {})
        md.prefix, md.suffix = mask(md.prefix, conversation), mask(md.suffix, conversation)
        return TerminalObservation.from_text(
            text=text,
            command=label,
            exit_code=md.exit_code,
            metadata=md,
            timeout=md.exit_code == -1 and bool(action.command.strip() or action.is_input),
            full_output_save_dir=self.full_output_save_dir,
        )

    def reset(self) -> TerminalObservation:
        obs = self.link.send(actions.run("", reset=True), timeout=_DEFAULT_WAIT)
        return TerminalObservation.from_text(
            text=obs.get("content") or "",
            command="[RESET]",
            exit_code=0 if obs.get("observation") == "run" else None,
            is_error=obs.get("observation") != "run",
        )

    def interrupt(self) -> None:
        # Called from another thread while a worker waits on a command: Ctrl-C on the same connection
        # (the thread-safe client lets both wait); the waiting call then gets its observation.
        try:
            self.link.client().send(actions.run("C-c", is_input=True), timeout=10)
        except Exception:  # noqa: BLE001
            pass


class OhTerminalTool(TerminalTool):
    """The SDK's ``terminal`` tool (same name, schema and description) backed by oh.

    Falls back to the SDK's own terminal (with one warning) when no oh backend serves the
    conversation's working directory."""

    name = TerminalTool.name

    @classmethod
    def create(cls, conv_state: "ConversationState", executor: ToolExecutor | None = None, **params: Any):  # type: ignore[override]
        if executor is None:
            key, link = conversation_link(conv_state)
            if link is None:
                return TerminalTool.create(conv_state, **params)
            executor = OhTerminalExecutor(link, key, conv_state.env_observation_persistence_dir, env=params.get("env"))
        return super().create(conv_state, executor=executor, **params)
