"""Per agent connection: how many actions may be in flight and how many bytes of observations may wait
to be sent (issue 18 item 2; docs/protocol.md §2.3, docs/reliability.md §6).

An agent that stops reading its socket used to make the backend hold every observation it had asked
for (20 reads of a 4 MiB file: +261 MiB, ~12.5 MiB each: the content, its JSON, the frame, the socket
buffer). Now each connection has two bounds:

- ``max_in_flight`` actions at once (``MAX_IN_FLIGHT``): one more is answered ``BUSY`` at once (not
  executed). Not backpressure, deliberately: a backend that stops reading a connection stops reading
  its keepalive pongs too, and websockets then drops it after ``ping_timeout`` with everything it had
  in flight (e.g. proposals awaiting the user);
- ``max_output`` bytes of observations produced or being sent (``MAX_OUTPUT``): when they are reached
  the backend stops reading that connection's frames (backpressure: the agent's own sends block once
  the kernel buffers fill; nobody else is slowed, nothing of anyone else's is dropped). A ``read`` whose size
  the backend can tell in advance (a `stat`) reserves it *before* it executes, so a non-reading agent's further
  reads wait without holding their content; any other observation is counted when it is made, and
  waits (holding only itself) while the connection's output is full. One observation larger than the
  whole bound is let through alone. Bytes are released when the send returns, i.e. once the frame left
  the process's buffers (websockets waits for the transport to drain below its high-water mark).

A connection whose peer never reads is still dropped after ``send_timeout`` (transport.send_bounded).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from ..protocol.backendconfig import MAX_IN_FLIGHT, MAX_OUTPUT  # spelled once, with the settings


def obs_size(obs: dict[str, Any]) -> int:
    """About the bytes ``obs`` will take on the wire (its big fields; cheap: no encoding)."""
    size = 256
    content = obs.get("content")
    if isinstance(content, (str, bytes, bytearray, memoryview)):
        size += len(content)
    extras = obs.get("extras")
    if isinstance(extras, dict):
        for key in ("old_content", "new_content", "diff"):
            value = extras.get(key)
            if isinstance(value, str):
                size += len(value)
    return size


def read_size(action, workdir: str) -> int:
    """A ``read``'s size before it runs (0: unknown, or not a read): one ``stat`` of the path joined to
    the agent's working directory, unresolved -- only a size, never a permission (the runtime checks
    the path). Both runtimes: the files an editor reads are this machine's too."""
    if action.kind != "read":
        return 0
    path = action.args.get("path")
    if not isinstance(path, str) or not path:
        return 0
    try:
        size = os.stat(path if path[0] == "/" else os.path.join(workdir, path)).st_size
    except (OSError, ValueError):
        return 0
    return size * 4 // 3 + 256 if action.args.get("encoding") == "base64" else size


class Flow:
    def __init__(self, max_in_flight: int = MAX_IN_FLIGHT, max_output: int = MAX_OUTPUT) -> None:
        self.max_in_flight = max(1, max_in_flight)
        self.max_output = max(1, max_output)
        self.in_flight = 0
        self.output = 0  # bytes reserved: observations being made (known size) or waiting / being sent
        self.waiting = 0  # observations waiting for output room
        self._changed = asyncio.Event()
        self._watched = 0  # coroutines waiting on _changed (the reader, reserve): set it only for them

    def full(self) -> bool:
        return self.in_flight >= self.max_in_flight

    def admits_frames(self) -> bool:
        return self.output < self.max_output and not self.waiting

    async def _wait_change(self) -> None:
        self._watched += 1
        try:
            self._changed.clear()
            await self._changed.wait()
        finally:
            self._watched -= 1

    def _wake(self) -> None:
        if self._watched:
            self._changed.set()

    async def wait_for_room(self) -> None:
        """Until this connection's output has room again (the reader waits here: backpressure)."""
        while not self.admits_frames():
            await self._wait_change()

    def started(self) -> None:
        self.in_flight += 1

    def finished(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _fits(self, n: int) -> bool:
        return self.output == 0 or self.output + n <= self.max_output

    def try_reserve(self, n: int) -> bool:
        """Take ``n`` bytes if they fit now (the common case: no coroutine, no wait)."""
        if self.output == 0 or self.output + n <= self.max_output:
            self.output += n
            return True
        return False

    async def reserve(self, n: int) -> None:
        """Wait until ``n`` more bytes fit (or nothing else is reserved), then take them. Only callers
        holding no reservation may wait here (so two waiters never wait for each other)."""
        if not self._fits(n):
            self.waiting += 1
            try:
                while not self._fits(n):
                    await self._wait_change()
            finally:
                self.waiting -= 1
        self.output += n

    def add(self, n: int) -> None:
        """Count ``n`` more bytes without waiting (a caller that already holds a reservation)."""
        self.output += n

    def release(self, n: int) -> None:
        if n:
            self.output -= n
            self._wake()
