"""The handshake (docs/security.md §2): the backend's credentials and which one each path needs, checked
before the WebSocket upgrade. Three credentials, one role each: the agent token (agents, monitors, control),
the editor token (``/v1/editor`` only) and the decider token (approvals and review decisions); a share
credential (issue 28, ``remote.py``) opens the agent role only. A rotation replaces all three and bumps the
generation, so the server can close every connection let in before it.
"""

from __future__ import annotations

import json
import logging
import secrets
from http import HTTPStatus
from typing import Any, Callable
from urllib.parse import urlsplit

from websockets.asyncio.server import ServerConnection

from .. import PROTOCOL_VERSION, __version__
from . import agentinfo, auth, guard
from .remote import Remote

log = logging.getLogger("oh.backend")

ROLES = {"/v1/agent": "agent", "/v1/editor": "editor", "/v1/monitor": "monitor", "/v1/control": "control"}
# What may appear in the log as a request's path: anything else is logged as "<other path>", since
# a client may put a secret there (e.g. the token as a path segment).
LOGGABLE_PATHS = frozenset(ROLES) | {"/v1/status", "/v1/health"}


def json_response(connection: ServerConnection, body: dict[str, Any]) -> Any:
    response = connection.respond(HTTPStatus.OK, json.dumps(body) + "\n")
    del response.headers["Content-Type"]
    response.headers["Content-Type"] = "application/json"
    return response


class Credentials:
    """The three credentials and their generation (bumped by every rotation)."""

    def __init__(self, token: str, editor_token: str | None = None, decider_token: str | None = None) -> None:
        self.token = token
        # The editor leg's own credential, written only to the session file (docs/security.md §2):
        # holding the agent token must not be enough to register as the editor.
        self.editor = editor_token or secrets.token_urlsafe(32)
        # The decider's credential (issue 19): approvals and review decisions need it; agents never get it.
        self.decider = decider_token or secrets.token_urlsafe(32)
        self.generation = 0

    def rotate(self, new_token: str) -> None:
        self.token = new_token
        self.editor = secrets.token_urlsafe(32)  # rotated together (the old one may have leaked with it)
        self.decider = secrets.token_urlsafe(32)
        self.generation += 1


class Handshake:
    """``process_request`` of both endpoints (TCP and the Unix socket): Origin, Host, the path's credential,
    an agent's headers; a refusal is answered over HTTP (throttled in the log), never upgraded."""

    def __init__(
        self,
        credentials: Credentials,
        remote: Remote,
        workspace: str,
        roots: list[str],
        status: Callable[[], dict[str, Any]],
    ) -> None:
        self.credentials = credentials
        self.remote = remote
        self.workspace, self.roots = workspace, roots
        self.status = status
        self.refusals = guard.Throttle(log)
        self.isolate = "off"  # worktrees per agent (issue 37): off | worktree | on-request

    def process_request(self, connection: ServerConnection, request: Any) -> Any:
        path = urlsplit(request.path).path
        headers = request.headers
        refusal = auth.check_origin(headers) or self.remote.check_host(connection, headers)
        if refusal is None and path == "/v1/health":
            return json_response(connection, {"status": "ok", "version": __version__, "protocol": PROTOCOL_VERSION})
        if refusal is None:
            refusal = self._credential(connection, path, headers)
        if refusal is not None:
            status, text = refusal
            route = path if path in LOGGABLE_PATHS else "<other path>"
            self.refusals.log(
                ("refused", int(status), route), logging.INFO, "refused %s %s: %s", route, int(status), text.strip()
            )
            return connection.respond(status, text)
        if path == "/v1/status":
            return json_response(connection, self.status())
        if path not in ROLES:
            return connection.respond(
                HTTPStatus.NOT_FOUND, "Unknown path: use /v1/agent, /v1/editor, /v1/monitor or /v1/control.\n"
            )
        if path == "/v1/agent":
            parsed = agentinfo.parse(
                headers, self.workspace, self.roots, getattr(connection, "oh_share", None), self.isolate
            )
            if isinstance(parsed, tuple):
                log.info("refused agent handshake: %s", parsed[1].strip()[:200])
                return connection.respond(*parsed)
            connection.oh_agent = parsed  # type: ignore[attr-defined]
        # Remember which token generation let this connection in, so a rotation can close it.
        connection.oh_token_gen = self.credentials.generation  # type: ignore[attr-defined]
        return None

    def _credential(self, connection: ServerConnection, path: str, headers: Any) -> tuple[HTTPStatus, str] | None:
        """Each role has one credential: editors the editor token, everyone else the token (the decider's
        marks a control connection that may decide; a share credential opens the agent role only)."""
        creds = self.credentials
        if path == "/v1/editor":
            return auth.check_editor_auth(headers, creds.editor)
        if path == "/v1/control" and auth.token_matches(auth.bearer_token(headers), creds.decider):
            connection.oh_decider = True  # type: ignore[attr-defined]  # may decide (approvals, review)
            return None
        refusal = auth.check_auth(headers, creds.token)
        if refusal is not None:  # a share credential (issue 28) opens the agent role only
            refusal = self.remote.admit(connection, path, headers, refusal)
        return refusal
