"""Write coalescing (backend/coalesce.py) on a real loopback socket pair, and the optional loop."""

from __future__ import annotations

import asyncio

import pytest

from oh import eventloop
from oh.transport import CoalescingTransport


class Sink(asyncio.Protocol):
    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.data += data

    def connection_lost(self, exc) -> None:
        self.closed.set()


class Source(asyncio.Protocol):
    def __init__(self) -> None:
        self.paused = 0

    def pause_writing(self) -> None:
        self.paused += 1


async def pair():
    loop = asyncio.get_running_loop()
    sink = Sink()
    server = await loop.create_server(lambda: sink, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    source = Source()
    transport, _ = await loop.create_connection(lambda: source, "127.0.0.1", port)
    return server, sink, source, transport, CoalescingTransport(transport, loop)


async def wait_for_bytes(sink: Sink, n: int) -> None:
    for _ in range(500):
        if len(sink.data) >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"got {len(sink.data)} of {n} bytes")


async def test_writes_of_one_iteration_go_out_together_in_order():
    server, sink, _, raw, t = await pair()
    writes = []
    real_write = raw.write
    raw.write = lambda data: (writes.append(bytes(data)), real_write(data))
    for i in range(10):
        t.write(b"frame%d;" % i)
    assert writes == [] and t.get_write_buffer_size() == sum(len(b"frame%d;" % i) for i in range(10))
    await asyncio.sleep(0)  # the flush runs in the next iteration
    assert len(writes) == 1
    await wait_for_bytes(sink, len(writes[0]))
    assert bytes(sink.data) == b"".join(b"frame%d;" % i for i in range(10))
    t.close()  # flushes what is queued, then closes
    server.close()


async def test_a_write_past_the_high_water_mark_goes_through_at_once_and_pauses():
    server, sink, source, raw, t = await pair()
    t.set_write_buffer_limits(high=1024)
    t.write(b"x" * 10)
    t.write(b"y" * 4096)  # over the mark: flushed now, so flow control sees it in this iteration
    assert t.get_write_buffer_size() == raw.get_write_buffer_size()
    await wait_for_bytes(sink, 4106)
    assert bytes(sink.data) == b"x" * 10 + b"y" * 4096
    t.write(b"tail")
    t.close()
    await asyncio.wait_for(sink.closed.wait(), 5)
    assert bytes(sink.data).endswith(b"tail")
    server.close()


async def test_abort_drops_what_is_queued():
    server, sink, _, raw, t = await pair()
    t.write(b"never")
    t.abort()
    await asyncio.wait_for(sink.closed.wait(), 5)
    assert bytes(sink.data) == b"" and t.is_closing()
    server.close()


@pytest.mark.parametrize("value,expected", [("asyncio", "asyncio"), ("ASYNCIO", "asyncio")])
def test_event_loop_choice(monkeypatch, value, expected):
    monkeypatch.setenv("OH_EVENT_LOOP", value)
    assert eventloop.loop_name() == expected
    assert eventloop.run(asyncio.sleep(0, "ok")) == "ok"


def test_uvloop_is_used_when_installed(monkeypatch):
    pytest.importorskip("uvloop")
    monkeypatch.delenv("OH_EVENT_LOOP", raising=False)
    assert eventloop.loop_name() == "uvloop"

    async def which() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert eventloop.run(which()).startswith("uvloop")
