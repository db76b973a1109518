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
