"""``os.path.realpath`` in three system calls instead of one ``lstat`` per path component.

On Linux an existing path is opened with ``O_PATH`` (no access check on the file, nothing read, no
side effect: FIFOs and devices are not opened for I/O) and the kernel's own resolution is read
back from ``/proc/self/fd``. That is the same answer ``realpath`` computes component by component
(symlinks followed, ``..`` applied after them), at about a third of its CPU: the backend resolves
one path per delegated action, where ``realpath`` was ~10 % of its CPU (docs/benchmarks.md §9).
A path that does not exist, a dangling symlink, a loop, or any platform without ``/proc`` falls back
to ``os.path.realpath`` itself, so the answer never differs in kind.
"""

from __future__ import annotations

import os

_FLAGS = getattr(os, "O_PATH", 0) | getattr(os, "O_CLOEXEC", 0)
_PROC_FD = "/proc/self/fd/"
_USABLE = hasattr(os, "O_PATH") and os.path.isdir(_PROC_FD)


def realpath(path: str) -> str:
    if not _USABLE or "\x00" in path:
        return os.path.realpath(path)
    try:
        fd = os.open(path, _FLAGS)
    except (OSError, ValueError):
        return os.path.realpath(path)
    try:
        real = os.readlink(_PROC_FD + str(fd))
    except OSError:
        real = ""
    finally:
        os.close(fd)
    # Anything but a plain absolute path (e.g. " (deleted)" after a concurrent unlink, or a path
    # outside this process's root) is left to realpath.
    if not real.startswith("/") or real.endswith(" (deleted)"):
        return os.path.realpath(path)
    return real
