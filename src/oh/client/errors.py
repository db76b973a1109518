"""Client exceptions: each says what happened and what to do next."""

from __future__ import annotations


class OhClientError(Exception):
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
