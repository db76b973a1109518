"""Which agents' sandboxes ran between two looks (issue 36 item 5): the evidence behind who changed a file.

inotify says what changed, never who. But every agent shell runs in its own bubblewrap sandbox with its own pid
namespace, and every process of that namespace is the agent's: the command, anything it started, and whatever it
left running after its command ended (a background writer cannot leave the namespace: an orphan is reparented to
the namespace's init). A process that made a change was scheduled to make it, so a sandbox none of whose
processes ran (its cumulative run time in ``/proc/<pid>/schedstat`` unchanged, the same processes, none runnable)
between two looks made no change found between them: that change is someone else's (the user's). A sandbox that
ran may have made it.

A look walks each sandbox's process tree from its namespace's init (``/proc/<pid>/task/*/children``): a few
small reads per process of a sandbox, nothing for the rest of the machine, nothing at all while no sandbox runs.
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


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # plain reads: a look is a few of these per process
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (a child is listed under the thread that made it)."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            out += [int(x) for x in _read(f"/proc/{pid}/task/{tid}/children").split()]
        except (OSError, ValueError):
            continue
    return out


def _run(pid: int) -> tuple[int, bool] | None:
    try:
        ran = int(_read(f"/proc/{pid}/schedstat").split()[0])
        state = _read(f"/proc/{pid}/stat").rsplit(b")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    return ran, state == b"R"


class Activity:
    """Looks at the agents' sandboxes (``sample``) and compares two looks (``ran``)."""

    def __init__(self, roots: Roots) -> None:
        self._roots = roots
        self._own = _ns(os.getpid())
        self._init_of_root: dict[int, int] = {}  # outer bwrap pid -> its namespace's init (bwrap's child)
        self._lock = threading.Lock()

    def _inits(self) -> dict[str, list[int]]:
        """Per sandbox key, the init process of each of its pid namespaces (every process of a namespace
        descends from its init: an orphan is reparented to it)."""
        roots: dict[str, list[int]] = {}
        for _ in range(3):
            try:
                roots = {key: list(pids) for key, pids in list(self._roots().items())}
                break
            except RuntimeError:  # the runtime's table changed while read (its own thread): look again
                continue
        out: dict[str, list[int]] = {}
        live: set[int] = set()
        for key, pids in roots.items():
            for pid in pids:
                live.add(pid)
                init = self._init_of_root.get(pid)
                if init is None:
                    init = next((c for c in _children(pid) if _ns(c) not in (None, self._own)), None)
                    if init is not None:
                        self._init_of_root[pid] = init
                if init is not None:
                    out.setdefault(key, []).append(init)
        for gone in set(self._init_of_root) - live:
            del self._init_of_root[gone]
        return out

    def sample(self) -> Sample:
        with self._lock:
            out: Sample = {}
            for key, inits in self._inits().items():
                seen: dict[int, tuple[int, bool]] = {}
                todo = list(inits)
                while todo:
                    pid = todo.pop()
                    got = _run(pid)
                    if got is None or pid in seen:
                        continue  # gone meanwhile: its parent's run time (or its absence next time) says it
                    seen[pid] = got
                    todo += _children(pid)
                out[key] = seen
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
