"""Handshake checks, run before the WebSocket upgrade completes (docs/protocol.md §2).

Pure functions over the request's path and headers so they are unit-testable without sockets.
"""

from __future__ import annotations

import hmac
from http import HTTPStatus

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def allowed_hosts(port: int) -> frozenset[str]:
    return frozenset(f"{h}:{port}" for h in LOOPBACK_HOSTS)


def check_origin(headers) -> tuple[HTTPStatus, str] | None:
    # Any Origin, even "null": browsers always send one, our clients never do. A web page must
    # never reach this server (CVE-2025-52882 was exactly that).
    if headers.get_all("Origin"):
        return HTTPStatus.FORBIDDEN, "Requests with an Origin header are refused (browsers may not connect).\n"
    return None


def check_host(headers, port: int) -> tuple[HTTPStatus, str] | None:
    hosts = headers.get_all("Host")
    if len(hosts) != 1 or hosts[0].lower() not in allowed_hosts(port):
        return HTTPStatus.FORBIDDEN, f"Host must be 127.0.0.1:{port}, localhost:{port} or [::1]:{port}.\n"
    return None


def bearer_token(headers) -> str | None:
    values = headers.get_all("Authorization")
    if len(values) != 1:
        return None
    scheme, _, value = values[0].partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def token_matches(presented: str | None, expected: str) -> bool:
    if presented is None:
        return False
    # compare_digest on bytes: constant time for equal lengths, and never short-circuits on content.
    return hmac.compare_digest(presented.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))


def check_auth(headers, token: str) -> tuple[HTTPStatus, str] | None:
    if not token_matches(bearer_token(headers), token):
        return HTTPStatus.UNAUTHORIZED, "Missing or wrong token: send 'Authorization: Bearer <token>' (see `oh token show`).\n"
    return None
