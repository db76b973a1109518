"""What the suites that test the sandbox share, wherever they sit (tests/sandbox, tests/backend): the skip for a
machine where bubblewrap cannot run, a loopback server that records what reaches it, and the probe command that
tells "the network is on" and "a write outside the workspace worked" apart.

Importable as ``sandboxed`` from every suite (tests/ is on sys.path through the rootdir conftest, as ``waiting``).
One copy, so that a fix to the accept loop's bounds or to the probe reaches every test that relies on them.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from oh.runtimes.local.sandbox import check

_BWRAP = check()

#: The module mark of every test that runs a real bubblewrap: skipped, with the reason, where it cannot run.
needs_bwrap = pytest.mark.skipif(not _BWRAP.ok, reason="bubblewrap cannot run here: " + _BWRAP.problem)


class Listener:
    """A loopback TCP server on an ephemeral port, keeping what each connection sent (``got``).

    The accept loop is bounded (0.2 s per accept, 5 s per connection, ``close`` joins within 5 s), so a test whose
    sandbox lets nothing through still ends. A subclass changes what is done with each connection in ``handle``.
    """

    def __init__(self, sock: socket.socket | None = None) -> None:
        """``sock``: a bound, listening socket of another kind (a Unix socket); default a loopback TCP one."""
        self.sock = sock if sock is not None else socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1] if self.sock.family != socket.AF_UNIX else 0
        self.got: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                self.handle(conn)

    def handle(self, conn: socket.socket) -> None:
        """Keep the first bytes the client sent (``b""`` when it sent none in time)."""
        try:
            self.got.append(conn.recv(100))
        except OSError:
            self.got.append(b"")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


def reach_and_write(port: int, marker: Path | str) -> str:
    """A shell command that says REACHED once it sent ``hi`` to the listener on ``port``, then WROTE once it
    created ``marker`` (a path outside the workspace): each only where the sandbox lets it."""
    return (
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5).sendall(b'hi')\" "
        f"&& echo REACHED; touch {marker} && echo WROTE"
    )
