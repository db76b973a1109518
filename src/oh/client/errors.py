"""Client exceptions: each says what happened and what to do next."""

from __future__ import annotations

from websockets.exceptions import InvalidStatus

from ..errors import ClientError


class OhClientError(ClientError):
    """Base class of everything the client raises."""


class AuthError(OhClientError):
    """The backend refused the token (HTTP 401)."""


class RefusedError(OhClientError):
    """The backend refused the handshake for another reason (403 Origin/Host, 404 path, ...)."""


class ConnectionLost(OhClientError):
    """The connection closed before an observation arrived (backend stopped, token rotated, ...)."""

    def __init__(self, message: str, code: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


def handshake_error(exc: Exception, url: str) -> OhClientError:
    """The client error for a failed WebSocket handshake with ``url`` (shared by every oh client:
    ``Client``, ``SyncClient``, the headless editor, the MCP server)."""
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        body = exc.response.body.decode("utf-8", "replace").strip() if exc.response.body else ""
        if status == 401:
            return AuthError(
                f"The backend at {url} refused the token (401). Use the token from the session file or `oh "
                "token show --reveal`."
            )
        return RefusedError(f"The backend at {url} refused the connection ({status}): {body}")
    return OhClientError(f"Cannot connect to {url}: {exc}")
