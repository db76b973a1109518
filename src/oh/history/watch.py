"""What changed in the workspace since the last look: inotify (through ``inotify_simple``) plus a full
rescan when the kernel cannot tell (its queue overflowed, or the watch limit was reached).

inotify_simple is a thin ctypes wrapper over the three system calls: the recorder drains the queue itself
(``read(timeout=0)``) at each action's start and end, so every event a finished command caused is already
queued when its end is recorded (the kernel queues them inside the write). watchdog would add an observer
thread and a second queue between the kernel and us, and no guarantee that "drained" means "all of it".
"""

from __future__ import annotations

import errno
import logging
import os
from dataclasses import dataclass, field
from typing import Callable

try:
    from inotify_simple import INotify, flags
except ImportError:  # not Linux: no kernel notifier here, every drain rescans (correct, slower)
    INotify = None

log = logging.getLogger("oh.history")

_DIR_MASK = (
    0
    if INotify is None
    else (
        flags.CREATE
        | flags.DELETE
        | flags.MODIFY
        | flags.CLOSE_WRITE
        | flags.ATTRIB
        | flags.MOVED_FROM
        | flags.MOVED_TO
        | flags.DELETE_SELF
        | flags.MOVE_SELF
        | flags.DONT_FOLLOW
        | flags.ONLYDIR
    )
)
# An ignored tree's top: what appears, goes or changes right under it (its inside is not watched: cost).
_TOP_MASK = (
    0
    if INotify is None
    else flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO | flags.MODIFY | flags.DONT_FOLLOW
)


@dataclass
class Dirty:
    """What one drain found: paths that may have changed, trees that appeared or went, ignored changes."""

    paths: set[str] = field(default_factory=set)
    new_dirs: set[str] = field(default_factory=set)
    gone_dirs: set[str] = field(default_factory=set)
    ignored: set[str] = field(default_factory=set)
    rescan: bool = False


class Watcher:
    def __init__(self, root: str, max_watches: int = 0) -> None:
        self.root = root
        # Tests only (OH_TEST_HISTORY_MAX_WATCHES): a watch limit below the kernel's, met as the kernel's would be
        # (lowering /proc/sys/fs/inotify/max_user_watches would starve every other process of this user).
        self.max_watches = max_watches
        self.on_degraded: Callable[[str], None] = lambda why: None  # told once, when the fallback begins
        self.dirs: dict[int, tuple[str, bool]] = {}  # watch descriptor -> (relative dir, is an ignored top)
        self.wds: dict[str, int] = {}
        self.degraded = ""  # why every drain rescans (the watch limit), or ""
        self.inotify = None
        try:
            self.inotify = INotify(nonblocking=True) if INotify is not None else None
        except OSError as exc:  # EMFILE: max_user_instances reached
            self.degraded = f"no inotify instance ({exc.strerror})"
        if self.inotify is None and not self.degraded:
            self.degraded = "no inotify on this system"

    def add(self, rel: str, ignored_top: bool = False) -> None:
        if self.inotify is None or self.degraded or rel in self.wds:
            return
        try:
            if self.max_watches and len(self.wds) >= self.max_watches:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            wd = self.inotify.add_watch(
                os.path.join(self.root, rel) if rel else self.root, _TOP_MASK if ignored_top else _DIR_MASK
            )
        except FileNotFoundError:
            return  # gone already: the drain that sees its parent's event finds that out
        except OSError as exc:
            # ENOSPC: /proc/sys/fs/inotify/max_user_watches reached. Correct, only slower: rescan per drain.
            self.degraded = (
                f"inotify watch limit reached ({exc.strerror}): every action rescans the workspace (slower, nothing "
                "missed); more watches: `sudo sysctl fs.inotify.max_user_watches=524288`"
            )
            log.warning("history: %s", self.degraded)
            self.on_degraded(self.degraded)
            return
        self.dirs[wd] = (rel, ignored_top)
        self.wds[rel] = wd

    def forget(self, prefix: str) -> None:
        for rel in [r for r in self.wds if r == prefix or r.startswith(prefix + "/")]:
            wd = self.wds.pop(rel)
            self.dirs.pop(wd, None)
            try:
                self.inotify.rm_watch(wd)  # type: ignore[union-attr]
            except OSError:
                pass  # already removed by the kernel (IN_IGNORED)

    def drain(self) -> Dirty:
        out = Dirty(rescan=bool(self.degraded))
        while self.inotify is not None:
            events = self.inotify.read(timeout=0)
            if not events:
                return out
            for ev in events:
                self._one(ev, out)
        return out

    def _one(self, ev, out: Dirty) -> None:
        if ev.mask & flags.Q_OVERFLOW:
            out.rescan = True
            return
        if ev.mask & flags.IGNORED:
            rel_ign = self.dirs.pop(ev.wd, None)
            if rel_ign is not None:
                self.wds.pop(rel_ign[0], None)
            return
        where = self.dirs.get(ev.wd)
        if where is None or not ev.name:
            return  # the watched directory itself (DELETE_SELF): its parent's event names it
        rel = f"{where[0]}/{ev.name}" if where[0] else ev.name
        if where[1]:
            out.ignored.add(rel)
        elif ev.mask & flags.ISDIR:
            if ev.mask & (flags.CREATE | flags.MOVED_TO):
                out.new_dirs.add(rel)
            elif ev.mask & (flags.DELETE | flags.MOVED_FROM):
                out.gone_dirs.add(rel)
        else:
            out.paths.add(rel)

    def close(self) -> None:
        if self.inotify is not None:
            self.inotify.close()
