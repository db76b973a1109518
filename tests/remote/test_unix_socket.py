"""The backend's Unix-socket endpoint (issue 28, docs/protocol.md §2.1): the same handshake, auth and limits as on
loopback TCP, through a 0600 socket in a 0700 directory; every client speaks `unix:`; what is found at the path
is never removed unless it is a dead backend's socket."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from oh.client.aio import Client
from oh.client.sync import SyncClient
from waiting import poll_until


def raw_request(path: str, request: bytes) -> bytes:
    """One HTTP request through the socket; the answer's head and start of body."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data


def upgrade(host: str, token: str, path: str = "/v1/agent", extra: str = "") -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        f"Authorization: Bearer {token}\r\n{extra}\r\n"
    ).encode()


def test_socket_is_private_and_in_the_session_file(roh, backend):
    sock = backend["session"]["socket"]
    assert sock and sock.startswith(str(roh.sock_dir))
    st = os.lstat(sock)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o700
    status = roh.json("status", "--json")
    rows = status if isinstance(status, list) else status.get("backends", [status])
    assert any(json.dumps(r).count(sock) for r in rows), status
    roh("stop", check=0)
    assert not os.path.lexists(sock)  # removed on a clean stop


def test_handshake_checks_hold_on_the_socket(mroh):
    s = mroh.session_data
    sock, token = s["socket"], s["token"]
    assert raw_request(sock, upgrade("localhost", token)).startswith(b"HTTP/1.1 101")
    battery = [
        (upgrade("localhost", "wrong-token"), b"401"),
        (upgrade("evil.example", token), b"403"),  # DNS-rebinding shape: refused as on TCP
        (upgrade(f"127.0.0.1:{s['port']}", token), b"403"),  # no port on a socket: Host is localhost
        (upgrade("localhost", token, extra="Origin: http://localhost\r\n"), b"403"),
        (upgrade("localhost", token, path="/v1/editor"), b"401"),  # the agent token is not the editor's
    ]
    for request, code in battery:
        head = raw_request(sock, request)
        assert head.split(b" ")[1] == code, (request, head[:200])


def test_every_client_speaks_unix(mroh, tmp_path):
    s = mroh.session_data
    url = "unix:" + s["socket"]
    with SyncClient.connect(url, s["token"]) as c:
        obs = c.run("echo sync-$((40+2))")
        assert "sync-42" in obs.content

    async def aio() -> str:
        async with await Client.connect(url, s["token"]) as c:
            return (await c.run("echo aio-$((40+2))")).content

    assert "aio-42" in asyncio.run(aio())
    # The fast path (`oh run` without typer) and the full CLI, found through OH_URL + OH_TOKEN_FILE only.
    token_file = tmp_path / "tok"
    token_file.write_text(s["token"] + "\n")
    token_file.chmod(0o600)
    env = {
        "OH_URL": url,
        "OH_TOKEN_FILE": str(token_file),
        "OH_WORKSPACE": str(mroh.workspace),
        "OH_HOME": str(tmp_path / "nohome"),
    }
    for fast in ("", "1"):
        proc = mroh("run", f"echo fast-$((1+1)) > marker{fast}; cat marker{fast}", env={**env, "OH_NO_FASTPATH": fast})
        assert proc.returncode == 0 and "fast-2" in proc.stdout, proc.stderr
        assert (mroh.workspace / f"marker{fast}").read_text() == "fast-2\n"


def test_unix_url_to_nothing_is_a_clear_error(roh, tmp_path):
    token_file = tmp_path / "tok"
    token_file.write_text("x" * 43)
    token_file.chmod(0o600)
    env = {"OH_URL": f"unix:{tmp_path}/none.sock", "OH_TOKEN_FILE": str(token_file), "OH_HOME": str(tmp_path / "h")}
    for fast in ("", "1"):
        proc = roh("run", "true", env={**env, "OH_NO_FASTPATH": fast})
        assert proc.returncode == 5, (proc.returncode, proc.stderr)
        assert "none.sock" in proc.stderr and "Traceback" not in proc.stderr
    # A token file others may write (a planted credential) is refused, by name.
    token_file.chmod(0o622)
    proc = roh("run", "true", env={**env, "OH_NO_FASTPATH": "1"})
    assert proc.returncode == 3 and "chmod 600" in proc.stderr, proc.stderr


def _start_expecting_socket_error(roh, workspace: Path, sock_dir: Path) -> str:
    info = roh.start("local", workspace)
    assert roh("run", "echo tcp-serves").stdout.strip() == "tcp-serves"
    status = roh.json("status", "--json")
    text = json.dumps(status) + roh("status").stdout
    assert roh.session(info["instance_id"])["socket"] == ""
    roh("stop", info["instance_id"], check=0)
    return text


def _occupy(kind: str, path: Path, tmp: Path) -> object:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if kind == "file":
        path.write_text("precious")
    elif kind == "symlink":
        (tmp / "target").write_text("precious")
        path.symlink_to(tmp / "target")
    elif kind == "dir":
        path.mkdir()
        (path / "inside").write_text("precious")
    elif kind == "live":
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(1)
        return listener
    return None


@pytest.mark.parametrize("kind", ["file", "symlink", "dir", "live"])
def test_what_is_at_the_path_is_left_alone(tmp_path, kind):
    """What the backend does at start (listen.prepare), against the real file system and a real listener."""
    from oh.backend import listen

    path = tmp_path / "sk" / "oh.sock"
    keep = _occupy(kind, path, tmp_path)
    with pytest.raises(listen.SocketRefused) as refused:
        listen.prepare(path)
    text = str(refused.value)
    assert str(path) in text
    if kind == "live":
        assert "another process listens" in text and os.path.lexists(path)
        keep.close()
    else:
        assert {"file": "a regular file", "symlink": "a symlink", "dir": "a directory"}[kind] in text
        precious = tmp_path / "target" if kind == "symlink" else path / "inside" if kind == "dir" else path
        assert precious.read_text() == "precious"


def test_a_refused_path_is_reported_and_tcp_still_serves(roh, tmp_path):
    from oh.backend import listen

    os.environ["OH_SOCKET_DIR"] = str(roh.sock_dir)
    try:
        path = listen.socket_path(str(roh.workspace))
    finally:
        del os.environ["OH_SOCKET_DIR"]
    _occupy("file", path, tmp_path)
    text = _start_expecting_socket_error(roh, roh.workspace, roh.sock_dir)
    assert f"socket     none: {path} exists and is a regular file" in text, text
    assert path.read_text() == "precious"


def test_stale_socket_of_a_dead_backend_is_reclaimed(roh, backend):
    sock = backend["session"]["socket"]
    os.kill(backend["pid"], 9)
    poll_until(
        lambda: subprocess.run(["kill", "-0", str(backend["pid"])], capture_output=True).returncode != 0,
        10,
        "the backend to die",
    )
    assert os.path.lexists(sock)  # SIGKILL leaves it behind
    info = roh.start()
    s = roh.session(info["instance_id"])
    assert s["socket"] == sock
    with SyncClient.connect("unix:" + sock, s["token"]) as c:
        assert "again" in c.run("echo again").content


def test_path_over_the_limit_is_a_clear_answer(roh, tmp_path):
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    roh.env["OH_SOCKET_DIR"] = str(deep)
    text = _start_expecting_socket_error(roh, roh.workspace, deep)
    assert "over the system's limit" in text and "OH_SOCKET_DIR" in text


def test_a_hostile_peer_at_the_frame_limit_is_closed_and_others_go_on(mroh):
    """A frame over the limit (128 MiB) announced through the socket: that connection is closed with 1009, the
    backend and another agent are unaffected."""
    s = mroh.session_data
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.settimeout(10)
        raw.connect(s["socket"])
        raw.sendall(upgrade("localhost", s["token"]))
        head = b""
        while b"\r\n\r\n" not in head:
            head += raw.recv(4096)
        assert head.startswith(b"HTTP/1.1 101")
        raw.sendall(bytes([0x81, 0xFF]) + (1 << 40).to_bytes(8, "big") + b"\x00\x00\x00\x00")
        reply = raw.recv(64)
        assert reply[:1] == b"\x88" and int.from_bytes(reply[2:4], "big") == 1009
    with SyncClient.connect("unix:" + s["socket"], s["token"]) as c:
        assert "fine" in c.run("echo fine").content
