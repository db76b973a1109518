"""Bounds on what unauthenticated peers can cost the backend (docs/security.md §3, "pre-auth limits").

Anyone on the machine can open TCP connections to the loopback port. Without bounds, a few thousand
idle ones use up the process's file descriptors and every real client fails until the attacker lets
go. Three things here:

- ``PreAuthGate``: connections that have not yet sent a complete HTTP request are "pending". When
  a new one arrives with more than ``soft`` pending, pending connections idle for over ``min_age``
  seconds are closed, oldest first; past ``hard`` (a quarter of the fd limit) -- or ``per_peer``
  from one address -- the oldest IDLE one goes whatever its age: one whose request bytes already
  wait unread in the kernel (FIONREAD > 0) is a client the event loop has not reached yet during a
  burst of accepts, so it is skipped while an idle one exists. The new connection is never the one
  refused: a real client sends its request at once, so it completes before it could be evicted,
  while an attacker's idle sockets are the oldest and go first. (Refusing the newest instead would
  let a few idle sockets lock everyone out until the handshake timeout.) A legitimate burst (100
  agents connecting at once) stays under ``soft`` or is younger than ``min_age``, so it is untouched.
- ``raise_fd_limit``: the soft RLIMIT_NOFILE is raised to the hard limit (often 1024 -> 524288).
- ``Throttle``: repeated log lines of one kind (refusals, "socket.accept() out of system resource")
  are written once per window, followed by a count of what was suppressed, so a flood cannot grow
  the log by megabytes.

Per-peer caps are weak on loopback (every local peer is 127.0.0.1 unless it picks another 127/8
source address), so the total cap with oldest-first eviction is what protects; the per-peer cap
only keeps one address from evicting everyone else's pending connections.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from websockets.asyncio.server import ServerConnection

from ..protocol.backendconfig import OPEN_TIMEOUT as OPEN_TIMEOUT  # spelled once, with the settings

SOFT_PENDING = 128  # above this many pending connections, the idle ones are closed
HARD_PENDING_MAX = 4096
MIN_IDLE_AGE = 1.0  # seconds a pending connection must have been idle before the soft cap closes it


def raise_fd_limit() -> tuple[int, int] | None:
    """Raise the soft open-files limit to the hard one. Returns (soft, hard) after, None if unknown."""
    try:
        import resource
    except ImportError:  # Windows: no rlimits; the CRT limit is not the bottleneck there
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass  # e.g. macOS refuses above OPEN_MAX; keep the old limit
    return soft, hard


def _unread_bytes(conn: Any) -> int:
    """Bytes waiting in the kernel for this connection (0 when unknown: Windows, closed)."""
    try:
        import array
        import fcntl
        import termios

        fd = conn.transport.get_extra_info("socket").fileno()
        buf = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, buf, True)
        return buf[0]
    except Exception:  # noqa: BLE001 - no ioctl here, or the socket is gone: treat as idle
        return 0


def pending_caps(fd_soft_limit: int | None) -> tuple[int, int, int]:
    """(soft, hard, per peer) caps on pending connections. Hard: a quarter of the descriptors, so
    the runtime's shells and files and the authenticated clients always keep the rest."""
    hard = HARD_PENDING_MAX
    if fd_soft_limit:
        hard = max(8, min(hard, fd_soft_limit // 4))
    return min(SOFT_PENDING, hard), hard, max(4, hard * 3 // 4)


class PreAuthGate:
    def __init__(
        self,
        soft: int,
        hard: int,
        per_peer: int,
        *,
        min_age: float = MIN_IDLE_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.soft, self.hard, self.per_peer, self.min_age, self.clock = soft, hard, per_peer, min_age, clock
        # connection -> (peer address, accepted at); dict order = oldest first
        self._pending: dict[Any, tuple[str, float]] = {}
        self._per_peer: dict[str, int] = {}
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._pending)

    def admit(self, conn: Any, peer: str) -> None:
        now = self.clock()
        if self._per_peer.get(peer, 0) >= self.per_peer:
            self._evict(self._victim([c for c, (p, _) in self._pending.items() if p == peer]))
        while len(self._pending) >= self.hard:
            self._evict(self._victim(self._pending))
        while len(self._pending) >= self.soft:
            oldest = next(iter(self._pending))
            if now - self._pending[oldest][1] < self.min_age:
                break
            self._evict(oldest)
        self._pending[conn] = (peer, now)
        self._per_peer[peer] = self._per_peer.get(peer, 0) + 1

    @staticmethod
    def _victim(candidates) -> Any:
        """The oldest candidate with nothing unread; the oldest of all if every one has data waiting."""
        first = None
        for conn in candidates:
            if first is None:
                first = conn
            if _unread_bytes(conn) == 0:
                return conn
        return first

    def done(self, conn: Any) -> None:
        entry = self._pending.pop(conn, None)
        if entry is None:
            return
        peer = entry[0]
        left = self._per_peer[peer] - 1
        if left:
            self._per_peer[peer] = left
        else:
            del self._per_peer[peer]

    def _evict(self, conn: Any) -> None:
        self.done(conn)
        self.evicted += 1
        transport = getattr(conn, "transport", None)
        if transport is not None:
            transport.abort()  # no close handshake owed: it never sent a request


def gated_connection_class(gate: PreAuthGate) -> type[ServerConnection]:
    """A ServerConnection that is "pending" in ``gate`` from accept until its request arrives."""

    class GatedConnection(ServerConnection):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            peer = transport.get_extra_info("peername")
            gate.admit(self, str(peer[0]) if peer else "?")

        def process_event(self, event) -> None:
            if self.request is None:
                gate.done(self)  # the request is complete: the handshake checks take over
            super().process_event(event)

        def connection_lost(self, exc) -> None:
            gate.done(self)
            super().connection_lost(exc)

    return GatedConnection


class Throttle:
    """Log each kind of line at most once per ``window`` seconds, then say how many were suppressed."""

    def __init__(
        self, logger: logging.Logger, window: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.logger, self.window, self.clock = logger, window, clock
        self._kinds: dict[Any, list] = {}  # key -> [window start, suppressed count, level, last message]

    def log(self, key: Any, level: int, msg: str, *args: Any) -> None:
        now = self.clock()
        entry = self._kinds.get(key)
        if entry is not None and now - entry[0] < self.window:
            entry[1] += 1
            entry[3] = (msg, args)
            return
        if entry is not None and entry[1]:
            self._summary(key, entry)
        self._kinds[key] = [now, 0, level, (msg, args)]
        self.logger.log(level, msg, *args)

    def flush(self, force: bool = False) -> None:
        """Write the summary of every window that has ended (all, when ``force``)."""
        now = self.clock()
        for key, entry in list(self._kinds.items()):
            if force or now - entry[0] >= self.window:
                if entry[1]:
                    self._summary(key, entry)
                del self._kinds[key]

    def _summary(self, key: Any, entry: list) -> None:
        msg, args = entry[3]
        self.logger.log(
            entry[2], "%d more like this in the last %.0f s, the latest: " + msg, entry[1], self.window, *args
        )
