"""Bounded command output: keeps the head and the tail, counts what was dropped in the middle.

Memory stays O(limit) however much a command prints (1 GB of ``yes`` costs a few hundred KB), and
the agent sees both how the command started and how it ended.
"""

from __future__ import annotations


def truncation_marker(dropped: int) -> str:
    return f"\n[... {dropped} characters truncated ...]\n"


class OutputBuffer:
    """Text appended in chunks; ``text()`` is all of it, or head + marker + tail once over ``limit``."""

    __slots__ = ("limit", "_head_n", "_tail_n", "_parts", "_size", "_head", "_tail", "dropped")

    def __init__(self, limit: int = 30000) -> None:
        self.limit = max(int(limit), 2)
        self._head_n = self.limit // 2
        self._tail_n = self.limit - self._head_n
        self._parts: list[str] = []
        self._size = 0
        self._head: str | None = None  # set once we switched to truncating mode
        self._tail = ""
        self.dropped = 0

    def __len__(self) -> int:
        """Characters received (including dropped ones)."""
        if self._head is None:
            return self._size
        return len(self._head) + self.dropped + len(self._tail)

    def add(self, text: str) -> None:
        if not text:
            return
        if self._head is None:
            self._parts.append(text)
            self._size += len(text)
            if self._size <= self.limit:
                return
            whole = "".join(self._parts)
            self._parts = []
            self._head = whole[: self._head_n]
            self._tail = ""
            rest = whole[self._head_n :]
            self._append_tail(rest)
            return
        self._append_tail(text)

    def _append_tail(self, text: str) -> None:
        if len(text) >= self._tail_n:
            self.dropped += len(self._tail) + len(text) - self._tail_n
            self._tail = text[-self._tail_n :]
            return
        tail = self._tail + text
        if len(tail) > self._tail_n:
            self.dropped += len(tail) - self._tail_n
            tail = tail[-self._tail_n :]
        self._tail = tail

    def text(self) -> str:
        if self._head is None:
            if len(self._parts) > 1:
                self._parts = ["".join(self._parts)]
            return self._parts[0] if self._parts else ""
        if not self.dropped:
            return self._head + self._tail
        return self._head + truncation_marker(self.dropped) + self._tail


def truncate_middle(text: str, limit: int) -> str:
    """One-shot version for a string already in memory."""
    if len(text) <= limit:
        return text
    buf = OutputBuffer(limit)
    buf.add(text)
    return buf.text()
