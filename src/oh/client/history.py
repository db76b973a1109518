"""History for agents (issue 29, docs/protocol.md §3.15): list the timeline and undo your own entries.

One request on the backend's control leg with the agent token (the same ``url`` and ``token`` as
``SyncClient.connect``). An undo names the agent (the name the agent connected with): the backend
undoes only that agent's entries, none with an ambiguous change and no file anyone changed since.

    from oh.client import history
    rows = history.entries(url, token, agent="alice")
    history.undo(url, token, rows[-1]["id"], agent="alice")
"""

from __future__ import annotations

from typing import Any

from websockets.sync.client import connect

from ..protocol.events import decode, encode
from .errors import OhClientError


class HistoryRefused(OhClientError):
    """The backend refused a history request: ``error_id`` (FORBIDDEN, CONFLICT, NO_ENTRY, HISTORY_OFF...)."""

    def __init__(self, error_id: str, message: str) -> None:
        super().__init__(f"{error_id}: {message}")
        self.error_id = error_id


def request(url: str, token: str, frame: dict[str, Any], *, timeout: float = 120.0) -> dict[str, Any]:
    """One ``history`` control request; its answer. A refusal raises ``HistoryRefused``."""
    with connect(
        url.rstrip("/") + "/v1/control",
        additional_headers={"Authorization": f"Bearer {token}"},
        open_timeout=timeout,
        close_timeout=2,
        compression=None,
        max_size=None,
    ) as ws:
        ws.send(encode({"type": "history", **frame}).decode())
        answer = decode(ws.recv(timeout=timeout))
    if answer.get("type") == "error" or answer.get("ok") is False:
        code = str(answer.get("error_id") or answer.get("error") or "")
        raise HistoryRefused(code, str(answer.get("message", "refused")))
    return answer


def entries(url: str, token: str, *, agent: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
    """The timeline's entries (oldest first), or only ``agent``'s."""
    frame: dict[str, Any] = {"op": "list", "limit": limit, **({"agent": agent} if agent else {})}
    return request(url, token, frame)["entries"]


def show(url: str, token: str, entry: int) -> dict[str, Any]:
    """One entry with its changes and its unified diff."""
    return request(url, token, {"op": "show", "entry": entry})["entry"]


def undo(url: str, token: str, entry: int, *, agent: str, to: bool = False) -> dict[str, Any]:
    """Undo ``agent``'s own entry (``to``: and its later ones); the undo's own entry number is in ``entry``."""
    return request(url, token, {"op": "undo", "entry": entry, "agent": agent, "to": to})
