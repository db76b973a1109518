"""The blocking client shared by many threads over ONE connection (the OpenHands SDK runs tool calls in
worker threads): every thread gets exactly its own observation, nothing is dropped, a timed-out
waiter does not disturb the others, and a lost connection wakes every waiter."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from oh.client import ConnectionLost, SyncClient

from .conftest import TOKEN


def url(b):
    return f"ws://127.0.0.1:{b.port}"


async def test_many_threads_one_connection_each_gets_its_own_answer(make_backend, workspace):
    b = await make_backend("local")
    for i in range(16):
        (workspace / f"f{i}.txt").write_text(f"content {i}\n")

    def work(client: SyncClient, i: int) -> list[tuple[int, str]]:
        got = []
        for j in range(15):
            obs = client.read(f"f{i}.txt")
            got.append((i, obs.content))
            obs = client.write(f"out{i}-{j}.txt", f"{i}/{j}")
            assert obs.kind == "write", obs
        return got

    def scenario():
        with SyncClient.connect(url(b), TOKEN, name="threads") as client:
            # A slow command holds its answer back while the other threads' answers overtake it.
            slow = threading.Thread(target=lambda: results.append(client.run("sleep 0.5; echo slow-done", timeout=20)))
            slow.start()
            with ThreadPoolExecutor(16) as pool:
                per_thread = list(pool.map(lambda i: work(client, i), range(16)))
            slow.join(30)
            return per_thread, client.stray

    results: list = []
    per_thread, stray = await asyncio.to_thread(scenario)
    for i, got in enumerate(per_thread):
        assert len(got) == 15
        assert all(content.endswith(f"content {i}\n") or f"content {i}" in content for _, content in got), got[:2]
    assert results and results[0].kind == "run" and "slow-done" in results[0].content and results[0].exit_code == 0
    assert stray == []
    assert (workspace / "out7-14.txt").read_text() == "7/14"


async def test_a_timed_out_waiter_leaves_the_others_alone(make_backend, workspace):
    b = await make_backend("local")
    (workspace / "a.txt").write_text("A\n")

    def scenario():
        with SyncClient.connect(url(b), TOKEN) as client:
            out = {}

            def slow():
                # Gives up after 0.3 s, possibly while holding the reader role: the read below must still work.
                try:
                    client.send(
                        {"action": "run", "args": {"command": "sleep 1.5; echo late"}, "timeout": 20}, timeout=0.3
                    )
                    out["slow"] = "answered"
                except TimeoutError:
                    out["slow"] = "timeout"

            t = threading.Thread(target=slow)
            t.start()
            t.join(10)
            out["read"] = client.read("a.txt").content
            return out

    out = await asyncio.to_thread(scenario)
    assert out["slow"] == "timeout"
    assert "A" in out["read"]


async def test_connection_loss_wakes_every_waiting_thread():
    """A peer that takes three actions, answers none and closes: all three waiting threads raise
    ConnectionLost (none hangs), and so does the next call."""
    from websockets.asyncio.server import serve

    async def swallow_then_close(ws):
        for _ in range(3):
            await ws.recv()
        await ws.close(1011, "test closes")

    async with serve(swallow_then_close, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        client = await asyncio.to_thread(SyncClient.connect, f"ws://127.0.0.1:{port}", TOKEN)
        errors: list[BaseException] = []

        def waiter(i: int):
            try:
                client.read(f"f{i}.txt")
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=waiter, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            await asyncio.to_thread(t.join, 15)
        assert not any(t.is_alive() for t in threads)
        assert len(errors) == 3 and all(isinstance(e, ConnectionLost) and e.code == 1011 for e in errors), errors
        with pytest.raises(ConnectionLost):
            client.read("x.txt")
        client.close()


async def test_duplicate_in_flight_id_is_refused_client_side(make_backend):
    b = await make_backend("local")

    def scenario():
        with SyncClient.connect(url(b), TOKEN) as client:
            box = {}
            t = threading.Thread(
                target=lambda: box.setdefault(
                    "obs", client.send({"id": 5, "action": "run", "args": {"command": "sleep 0.5"}, "timeout": 10})
                )
            )
            t.start()
            import time

            time.sleep(0.1)
            try:
                client.send({"id": 5, "action": "read", "args": {"path": "x"}})
                box["dup"] = "sent"
            except Exception as exc:  # noqa: BLE001
                box["dup"] = str(exc)
            t.join(10)
            return box

    box = await asyncio.to_thread(scenario)
    assert "already awaited" in box["dup"]
    assert box["obs"].kind == "run"


async def test_the_sync_client_owns_its_connection_without_a_deprecation_warning(make_backend, workspace):
    # websockets >= 17.1 warns on the first send/recv of a connection opened outside `with connect()`
    # unless it was opened with legacy=True; the client owns its connection, so it must not warn.
    import warnings

    b = await make_backend("local")
    (workspace / "w.txt").write_text("w\n")

    def scenario():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with SyncClient.connect(url(b), TOKEN, name="warn") as client:
                obs = client.read("w.txt")
        return obs, [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]

    obs, deprecations = await asyncio.to_thread(scenario)
    assert obs.kind == "read" and "w" in obs.content
    assert deprecations == []
