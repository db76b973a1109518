"""Handshake checks, run before the WebSocket upgrade completes (docs/protocol.md §2).

Pure functions over the request's path and headers so they are unit-testable without sockets.
"""

from __future__ import annotations

import hmac
import ipaddress
from http import HTTPStatus

from ..protocol.addresses import is_loopback_host

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def host_header_name(bound_host: str) -> str:
    """How a client writes ``bound_host`` in a Host header (IPv6 literals in brackets, compressed)."""
    try:
        ip = ipaddress.ip_address(bound_host.strip("[]"))
    except ValueError:
        return bound_host.lower()
    return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed


def allowed_hosts(port: int, bound_host: str | None = None) -> frozenset[str]:
    # The loopback literal the backend is bound to (e.g. 127.0.0.2, if the user chose it) is as safe
    # as 127.0.0.1: an IP literal cannot be DNS-rebound. Without it every client of such a backend
    # was refused (403), even `oh stop`.
    hosts = set(LOOPBACK_HOSTS)
    if bound_host and is_loopback_host(bound_host):
        hosts.add(host_header_name(bound_host))
    return frozenset(f"{h}:{port}" for h in hosts)


def check_origin(headers) -> tuple[HTTPStatus, str] | None:
    # Any Origin, even "null": browsers always send one, our clients never do. A web page must
    # never reach this server (CVE-2025-52882 was exactly that).
    if headers.get_all("Origin"):
        return HTTPStatus.FORBIDDEN, "Requests with an Origin header are refused (browsers may not connect).\n"
    return None


def check_host(headers, port: int, bound_host: str | None = None) -> tuple[HTTPStatus, str] | None:
    hosts = headers.get_all("Host")
    if len(hosts) != 1 or hosts[0].lower() not in allowed_hosts(port, bound_host):
        return HTTPStatus.FORBIDDEN, f"Host must be 127.0.0.1:{port}, localhost:{port} or [::1]:{port}.\n"
    return None


def check_unix_host(headers, expected: str) -> tuple[HTTPStatus, str] | None:
    """Over the Unix socket there is no port: clients send ``Host: localhost`` (websockets' unix_connect sends
    the URI's host). Anything else is refused as on TCP: a browser never sends it."""
    hosts = headers.get_all("Host")
    if len(hosts) != 1 or hosts[0].lower() != expected:
        return HTTPStatus.FORBIDDEN, f"Host must be {expected} on the Unix socket.\n"
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
        return (
            HTTPStatus.UNAUTHORIZED,
            "Missing or wrong token: send 'Authorization: Bearer <token>' (see `oh token show`).\n",
        )
    return None


def check_editor_auth(headers, editor_token: str) -> tuple[HTTPStatus, str] | None:
    # Only the editor token opens /v1/editor: the agent token alone must not let a connection
    # register as the editor (it would receive later actions, e.g. file contents, and could answer
    # them falsely). Editors read it from the session file (docs/security.md §2).
    if not token_matches(bearer_token(headers), editor_token):
        return (
            HTTPStatus.UNAUTHORIZED,
            (
                "Missing or wrong editor token: /v1/editor takes 'Authorization: Bearer <editor_token>' from the "
                "backend's session file.\n"
            ),
        )
    return None
