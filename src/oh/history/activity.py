"""Which agents' sandboxes ran between two looks (issue 36 item 5): the evidence behind who changed a file.

inotify says what changed, never who. But every agent shell runs in its own bubblewrap sandbox with its own pid
namespace, and every process of that namespace is the agent's: the command, anything it started, and whatever it
left running after its command ended (a background writer cannot leave the namespace: an orphan is reparented to
the namespace's init). A process that made a change was scheduled to make it, so a sandbox none of whose
processes ran (its cumulative run time in ``/proc/<pid>/schedstat`` unchanged, the same processes, none runnable)
between two looks made no change found between them: that change is someone else's (the user's). A sandbox that
ran may have made it.

Costs one ``readlink`` per process on the machine per look (the namespace of each), and two small reads per
process of a sandbox; none at all while no sandbox runs.
"""

from __future__ import annotations

import os
import threading
from typing import Callable

# One look: per sandbox key, per pid of its namespace, (run time in ns, runnable now).
Sample = dict[str, dict[int, tuple[int, bool]]]
# What the runtime says: per sandbox key (an agent shell's key), the pids of the bubblewrap processes that run its
# shells (the outer bwrap: its child is the namespace's init).
Roots = Callable[[], dict[str, list[int]]]


def _ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def _run(pid: int) -> tuple[int, bool] | None:
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            ran = int(f.read().split()[0])
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    return ran, state == "R"


class Activity:
    """Looks at the agents' sandboxes (``sample``) and compares two looks (``ran``)."""

    def __init__(self, roots: Roots) -> None:
        self._roots = roots
        self._own = _ns(os.getpid())
        self._ns_of_root: dict[int, str] = {}  # outer bwrap pid -> its sandbox's pid namespace
        self._lock = threading.Lock()

    def _namespaces(self) -> dict[str, str]:
        """pid namespace -> sandbox key, for the sandboxes the runtime has now."""
        try:
            roots = {key: list(pids) for key, pids in list(self._roots().items())}
        except RuntimeError:  # the runtime's table changed while read (another thread): look again
            roots = {key: list(pids) for key, pids in list(self._roots().items())}
        out: dict[str, str] = {}
        live: set[int] = set()
        for key, pids in roots.items():
            for pid in pids:
                live.add(pid)
                ns = self._ns_of_root.get(pid)
                if ns is None:
                    for child in _children(pid):
                        got = _ns(child)
                        if got is not None and got != self._own:
                            ns = self._ns_of_root[pid] = got
                            break
                if ns is not None:
                    out[ns] = key
        for gone in set(self._ns_of_root) - live:
            del self._ns_of_root[gone]
        return out

    def sample(self) -> Sample:
        with self._lock:
            wanted = self._namespaces()
            out: Sample = {key: {} for key in wanted.values()}
            if not wanted:
                return out
            for name in os.listdir("/proc"):
                if not name.isdigit():
                    continue
                key = wanted.get(_ns(int(name)) or "")
                if key is None:
                    continue
                got = _run(int(name))
                if got is not None:
                    out[key][int(name)] = got
            return out

    @staticmethod
    def ran(before: Sample, after: Sample) -> set[str]:
        """The sandboxes that may have done anything between the two looks: a process came or went, ran, or is
        runnable at either look. A sandbox in only one of the looks started or ended between them: it ran."""
        out = set(before) ^ set(after)
        for key in set(before) & set(after):
            a, b = before[key], after[key]
            if a.keys() != b.keys() or any(b[p][0] != a[p][0] or a[p][1] or b[p][1] for p in b):
                out.add(key)
        return out
