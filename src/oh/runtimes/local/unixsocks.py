"""The path-bound Unix sockets of this network namespace, from ``/proc/net/unix`` (docs/security.md §10).

With the network off, a sandboxed shell covers each one its sandbox would show (``protocol/sandbox.py``
``sockets_to_cover`` decides which): ``connect()`` to a path needs no network. The kernel's list holds the
sockets of the namespace of the process that reads it (the backend's, or the engine host's): every socket a
process outside the sandbox listens on, and none that a sandboxed shell binds (each has its own namespace).
No walk of HOME: one read of a file the kernel writes.

The kernel prints each path raw (``af_unix.c``, ``unix_seq_show``): a space, a newline or any byte of the
path as it is, so a path with a newline spans lines and may even forge an entry. Nothing here trusts the
text: a candidate is a path only if ``os.lstat`` says a socket is there (S_ISSOCK), and each entry also
offers its path joined with the lines that follow (a path is at most 107 bytes, so few joins are tried).
A forged entry can thus only add a cover over another socket: never remove one.
"""

from __future__ import annotations

import os
import re
import stat

PROC_NET_UNIX = "/proc/net/unix"
SUN_PATH_MAX = 107  # sizeof(sun_path) - 1: the longest path a socket can be bound to
# "Num: RefCount Protocol Flags Type St Inode[ Path]" (%pK: %08X %08X %08X %04X %02X %5lu)
_ENTRY = re.compile(rb"[0-9a-fA-F]+: [0-9A-F]{8} [0-9A-F]{8} [0-9A-F]{8} [0-9A-F]{4} [0-9A-F]{2} +[0-9]+(?: (.*))?")


def candidates(text: bytes) -> list[bytes]:
    """Absolute paths that ``text`` (the content of /proc/net/unix) may name, entry by entry; abstract
    (``@``) and relative names are not paths here. Each entry's path is offered alone and joined with the
    next lines (a newline in the path) while it fits in a socket address."""
    lines = text.split(b"\n")
    out: list[bytes] = []
    for i, line in enumerate(lines):
        m = _ENTRY.fullmatch(line)
        if m is None or not (m.group(1) or b"").startswith(b"/"):
            continue
        path = m.group(1)
        out.append(path)
        j = i + 1
        while j < len(lines) and len(path) + 1 + len(lines[j]) <= SUN_PATH_MAX:
            path += b"\n" + lines[j]
            out.append(path)
            j += 1
    return list(dict.fromkeys(out))


def is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except (OSError, ValueError):  # gone, unreadable directory, a NUL byte
        return False


def live(proc: str = PROC_NET_UNIX) -> list[str]:
    """The real paths (symlinked directories resolved: ``/var/run`` is ``/run``, as the sandbox sees it) of
    the path-bound sockets listed now; [] when the list cannot be read (no /proc: nothing to cover)."""
    try:
        with open(proc, "rb") as f:
            text = f.read()
    except OSError:
        return []
    found: list[str] = []
    reals: dict[str, str] = {}  # one realpath per directory (sockets crowd in a few)
    for raw in candidates(text):
        path = os.fsdecode(raw)
        if is_socket(path):
            d = os.path.dirname(path)
            if d not in reals:
                reals[d] = os.path.realpath(d)
            real = path if reals[d] == d else os.path.join(reals[d], os.path.basename(path))
            if real == path or is_socket(real):
                found.append(real)
    return list(dict.fromkeys(found))


def only_sockets(paths: list[str], at_least: int) -> frozenset[str]:
    """The directories holding ``at_least`` of ``paths`` that hold nothing but sockets (one listing each):
    covered whole, they cost one mount instead of one per socket."""
    count: dict[str, int] = {}
    for p in paths:
        count[os.path.dirname(p)] = count.get(os.path.dirname(p), 0) + 1
    out = set()
    for d, n in count.items():
        if n < at_least:
            continue
        try:
            with os.scandir(d) as entries:
                if all(stat.S_ISSOCK(e.stat(follow_symlinks=False).st_mode) for e in entries):
                    out.add(d)
        except OSError:
            continue
    return frozenset(out)
