"""Small helpers the oh-backed SDK tools share: settings, secrets, masking, security risk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .link import CLIENT_NAME, Link, link_for

if TYPE_CHECKING:
    from openhands.sdk.conversation import LocalConversation
    from openhands.sdk.conversation.state import ConversationState


@dataclass
class Settings:
    name: str = CLIENT_NAME  # X-OH-Client: how the live view and the trace name this agent
    instance: str | None = None  # an instance id prefix, to pick one backend when several serve the dir


settings = Settings()


def conversation_key(conv_state: "ConversationState") -> str:
    # One link per conversation: its terminal keeps its own shell even when two conversations share a dir.
    return f"{getattr(conv_state, 'id', '')}:{conv_state.workspace.working_dir}"


def conversation_link(conv_state: "ConversationState") -> tuple[str, Link | None]:
    """The conversation's key and its link to the backend serving its working directory; None when no
    backend serves it (the tool then falls back to the SDK's own, with one warning)."""
    key = conversation_key(conv_state)
    return key, link_for(key, conv_state.workspace.working_dir, settings.instance, settings.name)


def secrets_for(command: str, conversation: "LocalConversation | None") -> dict[str, str]:
    """The conversation's secrets the command names, as env vars (exported in oh's shell, as the SDK does)."""
    if conversation is None:
        return {}
    try:
        return dict(conversation.state.secret_registry.get_secrets_as_env_vars(command))
    except Exception:  # noqa: BLE001 - a broken secret source must not break the command (the SDK does the same)
        return {}


def mask(text: str, conversation: "LocalConversation | None") -> str:
    """Secret values replaced by the SDK's own marker; oh never masks (only the client knows the values)."""
    if not text or conversation is None:
        return text
    try:
        return conversation.state.secret_registry.mask_secrets_in_output(text) or text
    except Exception:  # noqa: BLE001
        return text


def security_risk_of(action: Any, conversation: "LocalConversation | None") -> str | None:
    """The LLM's security_risk label of this action (it lives on the ActionEvent, not the Action)."""
    if conversation is None:
        return None
    try:
        events = conversation.state.events
        n = len(events)
        for i in range(1, min(n, 64) + 1):
            ev = events[n - i]
            act = getattr(ev, "action", None)
            if act is action or (act is not None and act == action):
                risk = getattr(ev, "security_risk", None)
                return getattr(risk, "value", None) or (str(risk) if risk is not None else None)
    except Exception:  # noqa: BLE001 - the label is informational: never fail a tool call over it
        return None
    return None
