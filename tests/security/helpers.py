"""Helpers for the security/reliability suites: real backend and editor processes, raw HTTP, waits.

Everything is bounded: every wait has a deadline, every socket a timeout, every process is killed
at teardown by its pid (never by name).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import psutil

from waiting import poll_until


def wait_until(
    predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02, what: str = "condition"
) -> Any:
    return poll_until(predicate, timeout, what, interval)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone: it runs nothing)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def kill_pid(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every descendant found (for teardown of processes we started)."""
    try:
        proc = psutil.Process(pid)
        procs = proc.children(recursive=True) + [proc]
    except psutil.NoSuchProcess:
        return
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "min": round(min(values), 4),
        "median": round(statistics.median(values), 4),
        "max": round(max(values), 4),
    }


# ----------------------------------------------------------------------------- raw HTTP / WebSocket
def ws_text_frame(text: str) -> bytes:
    """One masked client text frame (what a WebSocket client would send right after its upgrade)."""
    payload = text.encode()
    mask = os.urandom(4)
    head = bytearray([0x81])
    n = len(payload)
    if n < 126:
        head.append(0x80 | n)
    elif n < 65536:
        head.append(0x80 | 126)
        head += n.to_bytes(2, "big")
    else:
        head.append(0x80 | 127)
        head += n.to_bytes(8, "big")
    return bytes(head) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def upgrade_request(
    path: str, headers: list[tuple[str, str]], *, method: str = "GET", version: str = "HTTP/1.1"
) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        f"{method} {path} {version}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    lines += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def raw_exchange(port: int, data: bytes, *, timeout: float = 5.0) -> tuple[int | None, bytes, bool]:
    """Send ``data`` on a fresh loopback connection; return (HTTP status or None, raw answer, closed by
    the server). Reads until the server closes or ``timeout`` passes."""
    chunks: list[bytes] = []
    closed = False
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except OSError:
            pass  # the server may refuse mid-send (huge headers) and close: read its answer anyway
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            chunks.append(chunk)
            if b"101 Switching Protocols" in b"".join(chunks)[:64]:
                break  # upgraded: the connection stays open on purpose
    raw = b"".join(chunks)
    status = None
    if raw.startswith(b"HTTP/"):
        try:
            status = int(raw.split(b" ", 2)[1])
        except (IndexError, ValueError):
            status = None
    return status, raw, closed


def http_get(port: int, path: str, headers: list[tuple[str, str]], timeout: float = 5.0) -> tuple[int | None, bytes]:
    lines = [f"GET {path} HTTP/1.1", "Connection: close"] + [f"{k}: {v}" for k, v in headers]
    status, raw, _ = raw_exchange(port, ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"), timeout=timeout)
    return status, raw.partition(b"\r\n\r\n")[2]


# ----------------------------------------------------------------------------- processes
def oh_env(home: Path, user_home: Path | None = None) -> dict[str, str]:
    """An isolated environment for `oh` processes (as tests/cli does): OH_HOME, no keyring."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("OH_") and not k.startswith("XDG_") and k != "PYTHON_KEYRING_BACKEND"
    }
    env.update(OH_HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", PYTHONDONTWRITEBYTECODE="1")
    if user_home is not None:
        env["HOME"] = str(user_home)
    return env


def start_backend_process(
    workspace: Path,
    env: dict[str, str],
    token: str,
    *,
    runtime: str = "vscode",
    extra: list[str] | None = None,
    timeout: float = 20.0,
):
    """`python -m oh.backend` as the launcher runs it: token on stdin, one ready line on a pipe fd."""
    r, w = os.pipe()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "oh.backend",
            "--workspace",
            str(workspace),
            "--runtime",
            runtime,
            "--token-stdin",
            "--ready-fd",
            str(w),
            *(extra or []),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(w,),
        env=env,
        start_new_session=True,
    )
    os.close(w)
    try:
        proc.stdin.write((token + "\n").encode())
        proc.stdin.close()
    except OSError:
        pass
    line = b""
    deadline = time.monotonic() + timeout
    import select

    with os.fdopen(r, "rb", buffering=0) as f:
        while not line.endswith(b"\n") and time.monotonic() < deadline:
            ready, _, _ = select.select([f], [], [], 0.2)
            if ready:
                chunk = f.read(4096)
                if not chunk:
                    break
                line += chunk
    ready = json.loads(line) if line.strip() else {"ready": False, "error": "no ready line"}
    return proc, ready


class EditorProcess:
    """The headless reference editor (`oh attach`) as a separate process."""

    def __init__(self, workspace: Path, env: dict[str, str], *extra: str) -> None:
        argv = [sys.executable, "-m", "oh", "attach", "--workspace", str(workspace), *extra]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True
        )
        self.pid = self.proc.pid

    def stderr_text(self, timeout: float = 10.0) -> str:
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=5)
        return err or ""

    def kill(self) -> None:
        kill_tree(self.pid)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def backend_status(session) -> dict[str, Any]:
    from oh.launcher.control import status

    return status(session, timeout=5)


def wait_editor(session, count: int = 1, timeout: float = 15.0) -> dict[str, Any]:
    def ok():
        st = backend_status(session)
        return st if len(st["editors"]) >= count else None

    return wait_until(ok, timeout, 0.05, "the headless editor to register")


def children_named(pid: int, name: str) -> list[psutil.Process]:
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for k in kids:
        try:
            if k.name() == name:
                out.append(k)
        except psutil.Error:
            pass
    return out


def listening_addresses(pid: int) -> list[tuple[str, int]]:
    conns = psutil.Process(pid).net_connections(kind="inet")
    return [(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN]
