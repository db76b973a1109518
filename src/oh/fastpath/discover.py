"""Find the running backend for the fast path, without psutil, platformdirs or dataclasses.

It reads the same session files as ``oh.sessions`` (the one owner, which also cleans
stale ones) and only answers when everything is ordinary: Linux ``/proc``, files owned by us and
not writable by others, every listed backend alive. Anything else returns ``None`` and the caller
runs the full CLI, whose code reports, cleans or refuses exactly as documented. So this module
never has to duplicate an error message or a clean-up rule; it is a cache-like shortcut.
"""

from __future__ import annotations

import os

from ..protocol.paths import within  # stdlib only: the fast path may load it
from .fastjson import loads
from .statedir import state_dir  # noqa: F401 - also this module's name for it (tests, callers)

START_TIME_TOLERANCE = 1.0  # seconds, as oh.sessions


def _private(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


_boot: list[float] = []


def _boot_time() -> float:
    if not _boot:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime "):
                    _boot.append(float(line.split()[1]))
                    break
            else:
                raise OSError("no btime in /proc/stat")
    return _boot[0]


def start_time(pid: int) -> float | None:
    """Process start (epoch s) as psutil computes it on Linux; None if gone or a zombie."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()
    if fields[0] == b"Z":  # killed, not reaped: serves nothing
        return None
    return _boot_time() + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def live_sessions() -> list[dict] | None:
    """Every session (newest first), or None when the full CLI must decide."""
    if not os.path.isdir("/proc/self"):
        return None
    base = state_dir()
    if base is None:
        return None
    directory = os.path.join(base, "sessions")
    try:
        # Someone else's (or a world-writable) oh directory could hold a planted token:
        # only our own private directories are read here; the full CLI explains anything else.
        if not _private(os.stat(base)) or not _private(os.stat(directory)):
            return None
        entries = [e for e in os.scandir(directory) if e.name.endswith(".json") and not e.name.startswith(".")]
    except FileNotFoundError:
        return []
    except OSError:
        return None
    found = []
    try:
        for entry in entries:
            if not _private(entry.stat(follow_symlinks=False)) or not entry.is_file(follow_symlinks=False):
                return None
            with open(entry.path, "rb") as f:
                data = loads(f.read())
            if not isinstance(data, dict):
                return None
            started = start_time(data["pid"])
            if started is None or abs(started - float(data["start_time"])) > START_TIME_TOLERANCE:
                return None  # stale: the full CLI cleans it (and may say so)
            if not all(
                isinstance(data.get(k), str) and data.get(k) for k in ("host", "token", "workspace", "instance_id")
            ):
                return None
            found.append(data)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    found.sort(key=lambda d: d["start_time"], reverse=True)
    return found


def died_notes() -> bool:
    """Whether a note of a backend found dead (``.<id>.died``, written by ``oh.sessions``) waits to be told."""
    base = state_dir()
    try:
        return base is None or any(e.name.endswith(".died") for e in os.scandir(os.path.join(base, "sessions")))
    except FileNotFoundError:
        return False
    except OSError:
        return True


def pick(workspace: str | None, instance: str | None) -> dict | None:
    """The session a verb acts on (same rule as ``_common.pick_session``); None = ask the full CLI."""
    from . import connect

    try:  # agents elsewhere (issue 28): OH_URL wins, a connect file serves when no local backend runs
        remote = connect.from_env()
        if remote is not None:
            return remote
        found = live_sessions()
        if not found:
            return connect.from_file() if found is not None else None
    except connect.ConnectError:
        return None  # the full CLI says what is wrong
    if instance:
        hits = [s for s in found if s["instance_id"].startswith(instance)]
        return hits[0] if len(hits) == 1 else None
    target = os.path.realpath(workspace or os.getcwd())
    best = None
    for s in found:
        ws = s["workspace"]
        if within(target, ws) and (best is None or len(ws) > len(best["workspace"])):
            best = s
    return best
