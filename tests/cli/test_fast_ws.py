"""oh.fastpath.ws, the CLI's minimal WebSocket client, against the websockets library's server:
long and fragmented messages, pings, close reasons, refused handshakes, servers that are not oh."""

from __future__ import annotations

import socket
import threading

import pytest
from websockets.sync.server import serve

from oh.fastpath import ws


@pytest.fixture
def server():
    """Start a websockets server running ``handler``; yields a function returning its port."""
    started = []

    def start(handler, **kw):
        srv = serve(handler, "127.0.0.1", 0, compression=None, max_size=None, **kw)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        started.append(srv)
        return srv.socket.getsockname()[1]

    yield start
    for srv in started:
        srv.shutdown()


def test_round_trip_of_large_and_fragmented_messages_with_pings(server):
    seen = {}

    def handler(conn):
        seen["headers"] = conn.request.headers  # case-insensitive
        data = conn.recv()
        waiter = conn.ping(b"are you there")
        conn.send(data)  # echo, one frame of > 64 KiB (64-bit length)
        seen["pong"] = waiter.wait(10)  # the client answered the ping while reading
        conn.send(["part one ", "part two"])  # fragmented: continuation frames
        conn.close(4001, "token rotated")

    port = server(handler)
    c = ws.Connection.open("127.0.0.1", port, "/v1/agent", {"Authorization": "Bearer t", "X-OH-Shell": "cli"})
    payload = ("é" * 70_000).encode()
    c.send_text(payload)
    assert c.recv_text() == payload
    assert c.recv_text() == b"part one part two"
    with pytest.raises(ws.WsError) as info:
        c.recv_text()
    assert info.value.kind == "lost" and "token rotated" in str(info.value)
    assert seen["pong"] is True
    assert seen["headers"]["Authorization"] == "Bearer t" and "Origin" not in seen["headers"]


def test_refused_handshakes_are_classified(server):
    from websockets.datastructures import Headers
    from websockets.http11 import Response

    def reject(status):
        def process_request(conn, request):
            return Response(status, "no", Headers({"Content-Length": "21"}), b"Origin header refused")

        return process_request

    port = server(lambda conn: None, process_request=reject(401))
    with pytest.raises(ws.WsError) as info:
        ws.Connection.open("127.0.0.1", port, "/v1/agent", {})
    assert info.value.kind == "auth" and info.value.status == 401
    port = server(lambda conn: None, process_request=reject(403))
    with pytest.raises(ws.WsError) as info:
        ws.Connection.open("127.0.0.1", port, "/v1/agent", {})
    assert info.value.kind == "refused" and "Origin header refused" in str(info.value)


def _raw_server(answer: bytes) -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)

    def run():
        conn, _ = sock.accept()
        conn.recv(65536)
        conn.sendall(answer)
        conn.close()
        sock.close()

    threading.Thread(target=run, daemon=True).start()
    return sock.getsockname()[1]


@pytest.mark.parametrize(
    "answer,needle",
    [
        (b"HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: wrong\r\n\r\n", "not an oh backend"),
        (b"garbage\r\n\r\n", "malformed"),
        (b"", "closed the connection during the handshake"),
    ],
)
def test_servers_that_are_not_oh_give_clear_errors(answer, needle):
    port = _raw_server(answer)
    with pytest.raises(ws.WsError) as info:
        ws.Connection.open("127.0.0.1", port, "/v1/agent", {})
    assert needle in str(info.value)


def test_connection_dropped_mid_message_and_nothing_listening():
    accept = b"HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: "
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)

    def run():
        conn, _ = sock.accept()
        head = conn.recv(65536).decode()
        key = [h.split(": ", 1)[1] for h in head.split("\r\n") if h.lower().startswith("sec-websocket-key")][0]
        conn.sendall(
            accept + ws._accept_key(key.encode()) + b"\r\n\r\n" + b"\x81\x7e\x01\x00" + b"x" * 10
        )  # 256 announced, 10 sent
        conn.close()

    threading.Thread(target=run, daemon=True).start()
    c = ws.Connection.open("127.0.0.1", sock.getsockname()[1], "/v1/agent", {})
    with pytest.raises(ws.WsError) as info:
        c.recv_text()
    assert "without a closing handshake" in str(info.value)
    sock.close()
    with pytest.raises(ws.WsError) as info:
        ws.Connection.open("127.0.0.1", 1, "/v1/agent", {})  # port 1: nothing listens
    assert info.value.kind == "unreachable"


def test_only_loopback_is_dialled():
    assert (
        ws.is_loopback("127.0.0.1")
        and ws.is_loopback("::1")
        and ws.is_loopback("[::1]")
        and ws.is_loopback("localhost")
    )
    assert ws.is_loopback("127.1.2.3")
    for host in ("192.0.2.1", "0.0.0.0", "example.com", "127.0.0.1.evil.com", "1127.0.0.1", "::ffff:10.0.0.1"):
        assert not ws.is_loopback(host)
        with pytest.raises(ws.WsError) as info:
            ws.Connection.open(host, 80, "/v1/agent", {})
        assert info.value.kind == "refused"
