"""The shared deadline wheel (backend/deadlines.py) on a real event loop: a task is cancelled at its
deadline (never before it), through the coarse buckets as well as the exact timer, and not at all
once its deadline is removed."""

from __future__ import annotations

import asyncio

from oh.backend.deadlines import Deadlines


async def _sleeper(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "done"


async def _cancelled_at(task: asyncio.Task) -> float | None:
    loop = asyncio.get_running_loop()
    try:
        await task
    except asyncio.CancelledError:
        return loop.time()
    return None


async def test_near_and_far_deadlines_cancel_at_their_time_not_before():
    wheel = Deadlines(tick=0.05)
    loop = asyncio.get_running_loop()
    tasks, whens = [], []
    for i, delay in enumerate((0.02, 0.12, 0.31)):  # one exact at once, two through the buckets
        task = asyncio.ensure_future(_sleeper(30))
        when = loop.time() + delay
        wheel.add(i, when, task)
        tasks.append(task)
        whens.append(when)
    ends = await asyncio.wait_for(asyncio.gather(*(_cancelled_at(t) for t in tasks)), 10)
    for i, (end, when) in enumerate(zip(ends, whens)):
        assert end is not None, f"deadline {i} never fired"
        assert end >= when - 0.001, (i, end, when)  # never early
        assert wheel.expired(i)
    for i in range(3):
        wheel.remove(i)
    assert len(wheel) == 0 and not wheel.expired(0)
    wheel.close()


async def test_a_removed_deadline_never_fires_and_the_ticker_stops():
    wheel = Deadlines(tick=0.05)
    loop = asyncio.get_running_loop()
    near, far = asyncio.ensure_future(_sleeper(0.4)), asyncio.ensure_future(_sleeper(0.4))
    wheel.add("near", loop.time() + 0.03, near)  # exact timer armed at once
    wheel.add("far", loop.time() + 0.2, far)  # in a bucket
    wheel.remove("near")
    wheel.remove("far")
    assert await asyncio.wait_for(asyncio.gather(near, far), 10) == ["done", "done"]
    assert not wheel.expired("near") and not wheel.expired("far") and len(wheel) == 0
    assert wheel._ticker is None and not wheel._buckets and not wheel._exact  # nothing left scheduled
    wheel.close()


async def test_close_cancels_nothing_and_forgets_everything():
    wheel = Deadlines(tick=0.05)
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(_sleeper(0.3))
    wheel.add(1, loop.time() + 0.1, task)
    wheel.close()
    assert await asyncio.wait_for(task, 10) == "done"
    assert len(wheel) == 0
