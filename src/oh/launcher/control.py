"""Talking to a running backend as its launcher: ``GET /v1/status`` and the ``/v1/control`` leg.

``http_get`` is the fast path's HTTP/1.1 GET on ``_socket`` (``oh.fastpath.ws``): ``oh status`` and
``oh doctor`` must stay fast; ``http.client`` alone costs ~30 ms of imports (it pulls in ssl), and even
``socket`` (enum, selectors) plus the IDNA codec its name lookup loads are a tenth of the interpreter's start.
Loopback only, as every backend listens. Control frames use websockets' sync client, imported only when
needed.
"""

from __future__ import annotations

from ..errors import ClientError
from ..fastpath.fastjson import loads  # `json` would load `re` (startup of `oh status`, `oh doctor`)
from ..sessions import Session

TYPE_CHECKING = False  # typing costs ~20 ms to import; these names serve annotations (and mypy) only
if TYPE_CHECKING:
    from typing import Any


class BackendUnreachable(ClientError):
    pass


def http_get(session: Session, path: str, *, token: str | None = None, timeout: float = 2.0) -> tuple[int, bytes]:
    """``GET path`` on the session's backend: (status, body). Raises BackendUnreachable."""
    from ..fastpath import ws

    try:
        return ws.http_get(
            session.host, session.port, path, token, timeout=timeout, unix=ws.unix_of({"url": session.url})
        )
    except ws.WsError as exc:
        raise BackendUnreachable(str(exc)) from None


def status(session: Session, *, timeout: float = 2.0) -> dict[str, Any]:
    """``GET /v1/status`` with the session's token. Raises BackendUnreachable."""
    code, body = http_get(session, "/v1/status", token=session.token, timeout=timeout)
    if code == 401:
        raise BackendUnreachable(
            "the backend refused the token in its own session file (401); it may be mid-rotation, retry"
        )
    if code != 200:
        raise BackendUnreachable(f"GET /v1/status answered HTTP {code}")
    try:
        return loads(body)
    except ValueError:
        raise BackendUnreachable("GET /v1/status did not return JSON") from None


def control(
    session: Session, frame: dict[str, Any], *, token: str | None = None, timeout: float = 5.0
) -> dict[str, Any]:
    """Send one control frame, return the answer. ``token`` defaults to the session file's."""
    import json

    from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
    from websockets.sync.client import connect

    headers = {"Authorization": f"Bearer {token or session.token}"}
    try:
        with connect(
            session.url + "/v1/control",
            additional_headers=headers,
            open_timeout=timeout,
            close_timeout=2,
            compression=None,
        ) as ws:
            ws.send(json.dumps(frame))
            return json.loads(ws.recv(timeout=timeout))
    except InvalidStatus as exc:
        raise BackendUnreachable(
            f"the backend refused the control connection (HTTP {exc.response.status_code})"
        ) from None
    except (InvalidHandshake, OSError, TimeoutError, ConnectionClosed, ValueError) as exc:
        raise BackendUnreachable(f"control request to {session.url} failed: {type(exc).__name__}: {exc}") from None
