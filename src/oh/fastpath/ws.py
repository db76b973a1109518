"""A minimal blocking WebSocket client (RFC 6455) on a plain socket, for the CLI's agent verbs.

Why not ``websockets.sync``: importing it costs ~100 ms (asyncio, ssl, http11 machinery), four
times the whole budget of an ``oh run`` (docs/benchmarks.md, "CLI as an agent's shell"). The
backend is always on loopback and speaks plain ``ws://``, so the client side needs little: an
HTTP/1.1 upgrade, masked text frames out, unmasked frames in, ping/pong and the closing handshake.

Security is the same as the full client: the token travels only in the ``Authorization`` header,
no ``Origin`` header is ever sent, and only loopback hosts are dialled (``is_loopback``).
"""

from __future__ import annotations

# The C module under `socket`: `import socket` adds ~6 ms (enum, selectors) we do not use.
import _socket as socket
import os

from ..errors import ClientError

# The close codes' one definition (plain ints, nothing imported)
from ..protocol.codes import Close
from ..protocol.headers import encode_value

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_HEAD = 64 * 1024  # an HTTP answer head larger than this is not our backend
MAX_FRAME = 1 << 32  # 4 GiB: far above any observation (output is capped at 16 MiB), below a bogus length

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA

# Close codes a person can act on (docs/protocol.md); others are shown by number.
CLOSE_REASONS = {
    Close.GOING_AWAY: "the backend is shutting down",
    1006: "the connection dropped without a closing handshake (the backend stopped or crashed)",  # local, never sent
    Close.INTERNAL_ERROR: "the backend hit an internal error (see `oh logs`)",
    Close.TOKEN_ROTATED: "the token was rotated (`oh token rotate`); retry to use the new one",
}


class WsError(ClientError):
    """Cannot connect, or the connection broke. ``kind``: unreachable | auth | refused | lost."""

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


def is_loopback(host: str) -> bool:
    """The same rule as ``oh.protocol.addresses.is_loopback_host``, without importing ipaddress."""
    host = host.strip("[]")
    if host in ("localhost", "::1", "0:0:0:0:0:0:0:1"):
        return True
    parts = host.split(".")
    return len(parts) == 4 and parts[0] == "127" and all(p.isdigit() and int(p) < 256 for p in parts)


def host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _connect(host: str, port: int, timeout: float):
    """The one way this module opens a socket: loopback only (refused otherwise), typed errors."""
    if not is_loopback(host):
        raise WsError("refused", f"refusing to connect to {host}: oh backends listen on loopback only")
    try:
        return _dial(host, port, timeout)
    except OSError as exc:
        raise WsError(
            "unreachable", f"cannot reach the backend at {host_port(host, port)}: {exc.strerror or exc}"
        ) from None


def unix_of(session: dict) -> str | None:
    """The socket path when the session's address is ``unix:PATH`` (issue 28: an agent elsewhere), else None."""
    url = session.get("url") or ""
    if not url.startswith("unix:"):
        return None
    rest = url[5:]
    return "/" + rest.lstrip("/") if rest.startswith("//") else rest


def _connect_unix(path: str, timeout: float):
    """A Unix-socket connection (issue 28: ``OH_URL=unix:PATH``), typed errors that say what to check."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        return sock
    except OSError as exc:
        sock.close()
        why = exc.strerror or str(exc)
        raise WsError(
            "unreachable",
            f"cannot reach the backend at unix:{path}: {why} (is the share still up? `oh share list` on the host)",
        ) from None


def _open(host: str, port: int, unix: str | None, timeout: float):
    """(socket, where, Host header value): the socket file when ``unix`` is given, else loopback TCP."""
    if unix:
        return _connect_unix(unix, timeout), f"unix:{unix}", "localhost"
    where = host_port(host, port)
    return _connect(host, port, timeout), where, where


def _dial(host: str, port: int, timeout: float):
    """TCP to a loopback literal (``localhost``: 127.0.0.1, then ::1). No DNS is ever asked."""
    host = host.strip("[]")
    candidates = ["127.0.0.1", "::1"] if host == "localhost" else [host]
    error: OSError | None = None
    for addr in candidates:
        sock = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect((addr, port))
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error  # type: ignore[misc]


def _accept_key(key: bytes) -> bytes:
    try:
        from _sha1 import sha1  # the builtin module: hashlib would load OpenSSL (~3 ms)
    except ImportError:  # pragma: no cover - some builds only have hashlib
        from hashlib import sha1
    from binascii import b2a_base64

    return b2a_base64(sha1(key + GUID).digest(), newline=False)


def _mask(payload: bytes, key: bytes) -> bytes:
    n = len(payload)
    if not n:
        return payload
    # XOR as one big integer: linear and in C, unlike a Python loop over the bytes.
    repeated = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(n, "big")


def _frame(opcode: int, payload: bytes) -> bytes:
    n = len(payload)
    head = bytearray([0x80 | opcode])
    if n < 126:
        head.append(0x80 | n)
    elif n < 1 << 16:
        head.append(0x80 | 126)
        head += n.to_bytes(2, "big")
    else:
        head.append(0x80 | 127)
        head += n.to_bytes(8, "big")
    key = os.urandom(4)  # clients must mask every frame (RFC 6455 §5.3)
    return bytes(head) + key + _mask(payload, key)


class Connection:
    """One WebSocket connection. ``send_text`` / ``recv_text`` / ``close``."""

    def __init__(self, sock, leftover: bytes, where: str) -> None:
        self._sock = sock
        self._buf = bytearray(leftover)
        self.where = where
        self.closed = False

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls, host: str, port: int, path: str, headers: dict[str, str], *, timeout: float = 10.0, unix: str | None = None
    ) -> "Connection":
        sock, where, host_header = _open(host, port, unix, timeout)
        try:
            if not unix:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            from binascii import b2a_base64

            key = b2a_base64(os.urandom(16), newline=False)
            lines = [
                f"GET {path} HTTP/1.1",
                f"Host: {host_header}",
                "Upgrade: websocket",
                "Connection: Upgrade",
                f"Sec-WebSocket-Key: {key.decode()}",
                "Sec-WebSocket-Version: 13",
            ]
            lines += [f"{k}: {encode_value(v)}" for k, v in headers.items()]  # any Unicode: protocol/headers.py
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("utf-8"))
            status, head, rest = _read_head(sock, where)
            if status != 101:
                body = _read_body(sock, head, rest)
                text = body.decode("utf-8", "replace").strip().splitlines()
                reason = text[0][:300] if text else ""
                if status == 401:
                    raise WsError("auth", f"the backend at {where} refused the token (HTTP 401)", status)
                raise WsError(
                    "refused",
                    f"the backend at {where} refused the connection (HTTP {status})"
                    + (f": {reason}" if reason else ""),
                    status,
                )
            if _header(head, b"sec-websocket-accept") != _accept_key(key):
                raise WsError("refused", f"the server at {where} answered the upgrade wrongly (not an oh backend?)")
            sock.settimeout(None)
        except WsError:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            raise WsError(
                "unreachable", f"the backend at {where} did not complete the handshake: {exc.strerror or exc}"
            ) from None
        return cls(sock, rest, where)

    # ------------------------------------------------------------------ frames
    def send_text(self, data: bytes) -> None:
        try:
            self._sock.sendall(_frame(OP_TEXT, data))
        except OSError as exc:
            raise WsError(
                "lost", f"the connection to {self.where} broke while sending: {exc.strerror or exc}"
            ) from None

    def recv_text(self, timeout: float | None = None) -> bytes:
        """The next text or binary message (fragments joined). Answers pings on the way."""
        self._sock.settimeout(timeout)
        parts: list[bytes] = []
        while True:
            fin, opcode, payload = self._read_frame()
            if opcode == OP_PING:
                self._send_raw(OP_PONG, payload)
            elif opcode == OP_PONG:
                continue
            elif opcode == OP_CLOSE:
                code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
                reason = payload[2:].decode("utf-8", "replace")
                self._send_raw(OP_CLOSE, payload[:2])
                self._shutdown()
                raise WsError("lost", self._closed_text(code, reason), code)
            else:
                parts.append(payload)
                if fin:
                    return b"".join(parts)

    def close(self) -> None:
        """Closing handshake (bounded): send 1000, wait briefly for the echo, close the socket."""
        if self.closed:
            return
        try:
            self._send_raw(OP_CLOSE, (1000).to_bytes(2, "big"))
            self._sock.settimeout(1.0)
            while True:
                _, opcode, _ = self._read_frame()
                if opcode == OP_CLOSE:
                    break
        except (OSError, WsError):
            pass
        self._shutdown()

    def _closed_text(self, code: int, reason: str) -> str:
        why = reason or CLOSE_REASONS.get(code) or f"close code {code}"
        return f"the backend closed the connection before answering: {why}"

    def _send_raw(self, opcode: int, payload: bytes) -> None:
        try:
            self._sock.sendall(_frame(opcode, payload))
        except OSError:
            pass

    def _shutdown(self) -> None:
        self.closed = True
        try:
            self._sock.close()
        except OSError:
            pass

    def _read_exact(self, n: int) -> bytes:
        buf = self._buf
        while len(buf) < n:
            try:
                chunk = self._sock.recv(max(65536, n - len(buf)))
            except TimeoutError:
                raise WsError("lost", f"the backend at {self.where} sent nothing in time") from None
            except OSError as exc:
                self._shutdown()
                raise WsError("lost", f"the connection to {self.where} broke: {exc.strerror or exc}") from None
            if not chunk:
                self._shutdown()
                raise WsError("lost", self._closed_text(1006, ""), 1006)
            buf += chunk
        out = bytes(buf[:n])
        del buf[:n]
        return out

    def _read_frame(self) -> tuple[bool, int, bytes]:
        b0, b1 = self._read_exact(2)
        n = b1 & 0x7F
        if n == 126:
            n = int.from_bytes(self._read_exact(2), "big")
        elif n == 127:
            n = int.from_bytes(self._read_exact(8), "big")
            if n > MAX_FRAME:
                self._shutdown()
                raise WsError("lost", f"the backend at {self.where} announced a {n}-byte frame (corrupt stream)")
        key = self._read_exact(4) if b1 & 0x80 else None
        payload = self._read_exact(n) if n else b""
        if key is not None:  # servers do not mask; tolerate it anyway
            payload = _mask(payload, key)
        return bool(b0 & 0x80), b0 & 0x0F, payload


def _read_head(sock, where: str) -> tuple[int, bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise WsError("unreachable", f"the backend at {where} closed the connection during the handshake")
        data += chunk
        if len(data) > MAX_HEAD:
            raise WsError("refused", f"the server at {where} sent an oversized answer (not an oh backend?)")
    head, _, rest = data.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        raise WsError("refused", f"the server at {where} sent a malformed HTTP answer (not an oh backend?)") from None
    return status, head, rest


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def _read_body(sock, head: bytes, rest: bytes, limit: int = MAX_HEAD) -> bytes:
    """The body by Content-Length (without one: until the server closes), at most ``limit`` bytes."""
    raw = _header(head, b"content-length")
    try:
        length = min(int(raw), limit) if raw is not None else limit
    except ValueError:
        length = 0
    sock.settimeout(2.0)
    try:
        while len(rest) < length:
            chunk = sock.recv(min(65536, length - len(rest)))
            if not chunk:
                break
            rest += chunk
    except OSError:
        pass
    return rest[:length]


def http_get(
    host: str, port: int, path: str, token: str | None, *, timeout: float = 2.0, unix: str | None = None
) -> tuple[int, bytes]:
    """``GET path``, with the Bearer token when one is given (``/v1/status``; ``/v1/health`` needs none).
    Raises WsError("unreachable") (or "refused": a host that is not loopback, an answer that is not HTTP)."""
    sock, where, host_header = _open(host, port, unix, timeout)
    try:
        auth = f"Authorization: Bearer {token}\r\n" if token is not None else ""
        request = f"GET {path} HTTP/1.1\r\nHost: {host_header}\r\nConnection: close\r\nUser-Agent: oh-cli\r\n{auth}\r\n"
        sock.sendall(request.encode("utf-8"))
        status, head, rest = _read_head(sock, where)
        return status, _read_body(sock, head, rest, 16 * 1024 * 1024)
    except OSError as exc:
        raise WsError("unreachable", f"the backend at {where} did not answer: {exc.strerror or exc}") from None
    finally:
        sock.close()
