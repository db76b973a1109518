"""backend/guard.py policies, pure (no sockets): which pending connection is closed, and what a
throttled log writes. The real-socket proof is tests/security/test_preauth_flood.py."""

from __future__ import annotations

import logging

from oh.backend.guard import PreAuthGate, Throttle, pending_caps


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class FakeTransport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True

    def get_extra_info(self, name):  # no real socket: FIONREAD fails, so "idle"
        return None


class Conn:
    def __init__(self, name: str) -> None:
        self.name, self.transport = name, FakeTransport()

    def __repr__(self) -> str:
        return self.name


def test_caps_follow_the_fd_limit():
    assert pending_caps(256) == (64, 64, 48)
    assert pending_caps(1024) == (128, 256, 192)
    assert pending_caps(1 << 20) == (128, 4096, 3072)
    assert pending_caps(None) == (128, 4096, 3072)


def test_soft_cap_closes_only_connections_idle_long_enough():
    clock = Clock()
    gate = PreAuthGate(soft=3, hard=10, per_peer=10, min_age=1.0, clock=clock)
    old = [Conn(f"old{i}") for i in range(3)]
    for c in old:
        gate.admit(c, "127.0.0.1")
    clock.t += 0.5
    burst = [Conn(f"new{i}") for i in range(4)]
    for c in burst:  # a legitimate burst: everything is young, nobody is closed
        gate.admit(c, "127.0.0.1")
    assert len(gate) == 7 and gate.evicted == 0
    clock.t += 0.6  # the first three are now idle for 1.1 s
    gate.admit(Conn("late"), "127.0.0.1")
    assert [c.transport.aborted for c in old] == [True, True, True]
    assert not any(c.transport.aborted for c in burst)
    # new0..new3 are only 0.6 s old: kept even though we are over the soft cap
    assert len(gate) == 5 and gate.evicted == 3


def test_hard_cap_and_per_peer_cap_close_the_oldest_never_the_newcomer():
    gate = PreAuthGate(soft=2, hard=4, per_peer=3, min_age=60, clock=Clock())
    a = [Conn(f"a{i}") for i in range(3)]
    for c in a:
        gate.admit(c, "127.0.0.2")
    newcomer = Conn("a3")
    gate.admit(newcomer, "127.0.0.2")  # per-peer cap 3: a0 goes
    assert a[0].transport.aborted and not newcomer.transport.aborted
    b, c = Conn("b0"), Conn("b1")
    gate.admit(b, "127.0.0.1")  # 4 pending now, all young: nobody closed
    assert gate.evicted == 1 and len(gate) == 4
    gate.admit(c, "127.0.0.1")  # the hard cap (4) is reached: the oldest overall (a1) goes
    assert a[1].transport.aborted and not b.transport.aborted and not c.transport.aborted and len(gate) == 4
    gate.done(b)
    gate.done(b)  # idempotent
    assert len(gate) == 3


def test_throttle_writes_one_line_per_kind_per_window_then_a_count(caplog):
    clock = Clock()
    log = logging.getLogger("oh.test.throttle")
    t = Throttle(log, window=10, clock=clock)
    with caplog.at_level(logging.INFO, logger="oh.test.throttle"):
        for i in range(500):
            t.log(("refused", 401), logging.INFO, "refused %s", i)
        t.log(("refused", 403), logging.INFO, "refused host")
        clock.t += 11
        t.flush()
        t.flush()  # nothing left to say
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["refused 0", "refused host", "499 more like this in the last 10 s, the latest: refused 499"]
