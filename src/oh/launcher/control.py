"""Talking to a running backend as its launcher: ``GET /v1/status`` and the ``/v1/control`` leg.

``http_get`` is a tiny HTTP/1.1 client on a plain socket: ``oh status`` must stay fast, and
``http.client`` alone costs ~30 ms of imports (it pulls in ssl). Control frames use websockets'
sync client, imported only when needed.
"""

from __future__ import annotations

import json
import socket

from ..sessions import Session
from ..errors import ClientError

TYPE_CHECKING = False  # typing costs ~20 ms to import; these names serve annotations (and mypy) only
if TYPE_CHECKING:
    from typing import Any


class BackendUnreachable(ClientError):
    pass


def http_get(session: Session, path: str, *, token: str | None = None, timeout: float = 2.0) -> tuple[int, bytes]:
    host = session.host
    hostport = f"[{host}]:{session.port}" if ":" in host else f"{host}:{session.port}"
    lines = [f"GET {path} HTTP/1.1", f"Host: {hostport}", "Connection: close", "User-Agent: oh-cli"]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")
    try:
        with socket.create_connection((host, session.port), timeout=timeout) as sock:
            sock.sendall(request)
            chunks = []
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                data = b"".join(chunks)
                head, sep, body = data.partition(b"\r\n\r\n")
                if sep:
                    length = _content_length(head)
                    if length is not None and len(body) >= length:
                        break
    except OSError as exc:
        raise BackendUnreachable(f"cannot reach the backend at {hostport}: {exc.strerror or exc}") from None
    data = b"".join(chunks)
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        raise BackendUnreachable(f"the backend at {hostport} sent a malformed HTTP answer") from None
    return status, body


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None


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
        return json.loads(body)
    except ValueError:
        raise BackendUnreachable("GET /v1/status did not return JSON") from None


def control(
    session: Session, frame: dict[str, Any], *, token: str | None = None, timeout: float = 5.0
) -> dict[str, Any]:
    """Send one control frame, return the answer. ``token`` defaults to the session file's."""
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
