"""The envelope every observation shares (OpenHands' shape), built in one place: ``events`` builds the
observations of OpenHands' kinds with it, ``knowledge`` those of the editor-knowledge kinds. Both import
this module and not each other."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def now_iso() -> str:
    return datetime.now().isoformat()


def observation(kind: str, cause: int | None, content: str, message: str, extras: dict[str, Any]) -> dict[str, Any]:
    """Without "id": the sender of each leg numbers its own observations."""
    obs: dict[str, Any] = {
        "timestamp": now_iso(),
        "source": "environment",
        "message": message,
        "observation": kind,
        "content": content,
        "extras": extras,
    }
    if cause is not None:
        obs["cause"] = cause
    return obs


def prepend_note(obs: dict[str, Any], line: str, *, in_message: bool = True) -> None:
    """Put a wrapper's note (branch, consent, setup) where the agent reads it: a run's prefix, else the content
    (and, with ``in_message``, an error's message)."""
    extras = obs.get("extras")
    if obs.get("observation") == "run" and isinstance(extras, dict) and isinstance(extras.get("metadata"), dict):
        md = extras["metadata"]
        md["prefix"] = line + "\n" + (md.get("prefix") or "")
        return
    obs["content"] = line + "\n" + str(obs.get("content") or "")
    if in_message and obs.get("observation") == "error" and isinstance(obs.get("message"), str):
        obs["message"] = line + "\n" + obs["message"]
