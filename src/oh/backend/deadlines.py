"""Action deadlines without a timer per action: a coarse timer wheel plus an exact timer near the end.

Why: ``asyncio.timeout`` per action costs a ``TimerHandle``, a heap push and a cancel (and the heap's
clean-up of cancelled handles) for every action, although almost every action ends long before
its deadline (minutes). Here adding and removing a deadline is two dict operations. One periodic
tick (only while deadlines are pending) looks at the buckets that come due within the next tick
and gives just those actions an exact ``loop.call_at``: an action is still cancelled *at* its
deadline, never early and never a tick late.

A deadline that passes cancels the action's task and marks it ``expired``: the task tells a
timeout from any other cancellation with ``expired`` (and ``Task.uncancel``, as ``asyncio.timeout``
does).
"""

from __future__ import annotations

import asyncio
from typing import Hashable

TICK = 0.5  # seconds per bucket: the tick's period, and how early an action gets its exact timer


class Deadlines:
    def __init__(self, tick: float = TICK) -> None:
        self._tick = tick
        self._buckets: dict[int, dict[Hashable, tuple[float, asyncio.Task]]] = {}
        self._where: dict[Hashable, int] = {}  # key -> its bucket (or -1: its exact timer is armed)
        self._exact: dict[Hashable, asyncio.TimerHandle] = {}
        self._expired: set[Hashable] = set()
        self._ticker: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        return len(self._where)

    def add(self, key: Hashable, when: float, task: asyncio.Task) -> None:
        """Cancel ``task`` at loop time ``when`` unless ``remove(key)`` comes first."""
        loop = task.get_loop()
        if when - loop.time() <= self._tick:
            self._arm(loop, key, when, task)
            return
        slot = int(when / self._tick)
        bucket = self._buckets.get(slot)
        if bucket is None:
            bucket = self._buckets[slot] = {}
        bucket[key] = (when, task)
        self._where[key] = slot
        if self._ticker is None:
            self._ticker = loop.call_later(self._tick, self._sweep, loop)

    def remove(self, key: Hashable) -> None:
        slot = self._where.pop(key, None)
        if slot is None:
            return
        if slot < 0:
            handle = self._exact.pop(key, None)
            if handle is not None:
                handle.cancel()
        else:
            bucket = self._buckets.get(slot)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self._buckets[slot]
        self._expired.discard(key)

    def suspend(self, key: Hashable, now: float) -> float | None:
        """Take ``key``'s deadline off the clock (an action waiting for the user's consent): returns the
        time it had left, for ``add(key, now + left, task)`` when the wait ends; None when it had none."""
        slot = self._where.get(key)
        if slot is None or key in self._expired:
            return None
        if slot < 0:
            handle = self._exact.get(key)
            when = handle.when() if handle is not None else now
        else:
            when = self._buckets.get(slot, {}).get(key, (now, None))[0]
        self.remove(key)
        return max(0.0, when - now)

    def expired(self, key: Hashable) -> bool:
        """True once ``key``'s deadline has passed (until ``remove``)."""
        return key in self._expired

    def _arm(self, loop: asyncio.AbstractEventLoop, key: Hashable, when: float, task: asyncio.Task) -> None:
        self._where[key] = -1
        self._exact[key] = loop.call_at(when, self._fire, key, task)

    def _fire(self, key: Hashable, task: asyncio.Task) -> None:
        self._exact.pop(key, None)
        if self._where.get(key) == -1 and not task.done():
            self._expired.add(key)
            task.cancel()

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        self._ticker = None
        horizon = int((loop.time() + self._tick) / self._tick)
        for slot in [s for s in self._buckets if s <= horizon]:
            for key, (when, task) in self._buckets.pop(slot).items():
                self._arm(loop, key, when, task)
        if self._buckets:
            self._ticker = loop.call_later(self._tick, self._sweep, loop)

    def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        for handle in self._exact.values():
            handle.cancel()
        self._buckets.clear()
        self._where.clear()
        self._exact.clear()
        self._expired.clear()
