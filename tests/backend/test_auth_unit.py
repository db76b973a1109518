"""Verdicts of the handshake's pure checks (backend/auth.py), table by table, without sockets.

The socket-level tests (test_handshake.py) prove the server calls them before the upgrade; these pin
each verdict, including the odd spellings a socket test would not enumerate.
"""

from __future__ import annotations

from http import HTTPStatus

import pytest
from websockets.datastructures import Headers

from oh.backend import auth

PORT = 8123
TOKEN = "t0k3n-Secret_value"


def headers(*pairs: tuple[str, str]) -> Headers:
    h = Headers()
    for k, v in pairs:
        h[k] = v  # Headers keeps repeated names: a second Host is a second value
    return h


@pytest.mark.parametrize(
    ("bound", "name"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "[::1]"),
        ("[::1]", "[::1]"),
        ("0:0:0:0:0:0:0:1", "[::1]"),
        ("127.000.0.1", "127.000.0.1"),  # not an IP literal for ipaddress: kept as written, lower-cased
        ("LocalHost", "localhost"),
        ("127.0.0.2", "127.0.0.2"),
    ],
)
def test_host_header_name(bound, name):
    assert auth.host_header_name(bound) == name


def test_allowed_hosts_default_and_bound_loopback():
    assert auth.allowed_hosts(PORT) == {f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}"}
    assert f"127.0.0.2:{PORT}" in auth.allowed_hosts(PORT, "127.0.0.2")
    # A non-loopback bind never widens the list: a rebindable name must not become acceptable.
    assert auth.allowed_hosts(PORT, "example.com") == auth.allowed_hosts(PORT)
    assert auth.allowed_hosts(PORT, "10.0.0.1") == auth.allowed_hosts(PORT)


@pytest.mark.parametrize(
    ("hosts", "bound", "ok"),
    [
        ([f"127.0.0.1:{PORT}"], None, True),
        ([f"LOCALHOST:{PORT}"], None, True),
        ([f"[::1]:{PORT}"], None, True),
        ([f"127.0.0.2:{PORT}"], "127.0.0.2", True),
        ([f"127.0.0.2:{PORT}"], None, False),
        ([], None, False),
        (["127.0.0.1"], None, False),  # no port
        ([f"127.0.0.1:{PORT + 1}"], None, False),
        ([f"evil.example:{PORT}"], None, False),  # DNS rebinding
        ([f"localhost.:{PORT}"], None, False),
        ([f"::1:{PORT}"], None, False),  # unbracketed IPv6
        ([f" 127.0.0.1:{PORT}"], None, False),
        ([f"127.0.0.1:{PORT}", f"127.0.0.1:{PORT}"], None, False),  # two Host headers
        ([f"127.0.0.1:{PORT}", f"evil.example:{PORT}"], None, False),
    ],
)
def test_check_host(hosts, bound, ok):
    verdict = auth.check_host(headers(*(("Host", h) for h in hosts)), PORT, bound)
    if ok:
        assert verdict is None
    else:
        status, text = verdict
        assert status == HTTPStatus.FORBIDDEN
        assert f"127.0.0.1:{PORT}" in text and text.endswith("\n")


@pytest.mark.parametrize("origins", [["http://evil.example"], ["null"], [""], ["vscode-webview://x", "http://a"]])
def test_any_origin_is_refused(origins):
    status, text = auth.check_origin(headers(*(("Origin", o) for o in origins)))
    assert status == HTTPStatus.FORBIDDEN
    assert "Origin" in text


def test_no_origin_passes():
    assert auth.check_origin(headers(("Host", f"127.0.0.1:{PORT}"))) is None


@pytest.mark.parametrize(
    ("values", "token"),
    [
        ([f"Bearer {TOKEN}"], TOKEN),
        ([f"bearer {TOKEN}"], TOKEN),
        ([f"BEARER   {TOKEN}  "], TOKEN),
        ([], None),
        ([TOKEN], None),
        ([f"Basic {TOKEN}"], None),
        (["Bearer"], None),
        (["Bearer    "], None),
        ([f"Bearer{TOKEN}"], None),
        ([f"Bearer {TOKEN}", f"Bearer {TOKEN}"], None),  # two Authorization headers: ambiguous, refused
    ],
)
def test_bearer_token(values, token):
    assert auth.bearer_token(headers(*(("Authorization", v) for v in values))) == token


@pytest.mark.parametrize(
    ("presented", "ok"),
    [
        (TOKEN, True),
        (None, False),
        ("", False),
        (TOKEN[:-1], False),
        (TOKEN + "x", False),
        (TOKEN.upper(), False),
        ("\udcff" + TOKEN[1:], False),  # undecodable bytes arrive as surrogates: compared, never a crash
        ("é" * len(TOKEN), False),
    ],
)
def test_token_matches(presented, ok):
    assert auth.token_matches(presented, TOKEN) is ok


def test_check_auth_verdicts_and_message():
    assert auth.check_auth(headers(("Authorization", f"Bearer {TOKEN}")), TOKEN) is None
    for h in (headers(), headers(("Authorization", "Bearer presented-XYZ"))):
        status, text = auth.check_auth(h, TOKEN)
        assert status == HTTPStatus.UNAUTHORIZED
        assert "oh token show" in text  # says what to do next
        assert TOKEN not in text and "presented-XYZ" not in text  # never echoes a token
