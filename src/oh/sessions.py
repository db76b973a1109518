"""Session (discovery) files: the one owner of ``<sessions dir>/<instance_id>.json``. A neutral module
below the backend, the launcher, the editor and the clients: the backend writes its own file (as
Jupyter's server writes its own info file), everyone else reads it.

A running backend writes its file once it listens and removes it on clean exit; whoever lists the
directory deletes stale files (dead pid, or a reused pid whose start time differs). The VS Code
extension watches this directory: a file appearing for its workspace is the on-demand signal.
Format: docs/protocol.md §7.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .config import paths

# Reading with the fast path's parser (the C scanner `json` itself uses): `json` loads `re` and compiles its
# patterns, a tenth of the interpreter's start for `oh doctor`/`oh status`; writing (rare) imports `json`.
from .fastpath.fastjson import loads
from .protocol.paths import within

TYPE_CHECKING = False  # typing costs ~20 ms to import; these names serve annotations (and mypy) only
if TYPE_CHECKING:
    from typing import Any

SUFFIX = ".json"
START_TIME_TOLERANCE = 1.0  # seconds; create_time is rounded differently by platforms


class Session:
    """One backend's session file, as fields. A plain class rather than a dataclass: `dataclasses` (and the
    `inspect` it loads) is a third of the interpreter's start, paid by every command that reads sessions
    (`oh doctor`, `oh status`; docs/benchmarks.md). ``FIELDS`` is the file's field order; ``to_dict`` is what
    ``dataclasses.asdict`` gave. The credentials (``token``, ``editor_token``, ``decider_token``) never show
    in ``repr``."""

    def __init__(
        self,
        instance_id: str,
        pid: int,
        start_time: float,
        host: str,
        port: int,
        runtime: str,
        workspace: str,
        token: str,
        protocol: int = 1,
        oh_version: str = "",
        started_at: str = "",
        trace: str = "",
        editor_timeout: float = 30.0,
        url: str = "",
        allowed_roots: list[str] | None = None,
        review_timeout: float = 0.0,
        approval_timeout: float = 0.0,
        python: str = "",
        editor_token: str = "",
        decider_token: str = "",
        socket: str = "",
    ) -> None:
        self.instance_id, self.pid, self.start_time = instance_id, pid, start_time
        self.host, self.port, self.runtime, self.workspace = host, port, runtime, workspace
        self.token, self.protocol, self.oh_version, self.started_at = token, protocol, oh_version, started_at
        self.trace, self.editor_timeout = trace, editor_timeout
        if not url:
            bracketed = f"[{host}]" if ":" in host else host
            url = f"ws://{bracketed}:{port}"
        self.url = url
        self.allowed_roots = list(allowed_roots) if allowed_roots is not None else []  # workspace + `--allow` dirs
        # Review mode (docs/protocol.md §3.11): how long a write/edit may wait for the user's decision on top of
        # the action's own deadline; 0 = review off. Clients with a wait of their own add it (the integrations).
        self.review_timeout = review_timeout
        # Consent (issue 19): how long an action may wait for the user's answer on top of its own deadline;
        # 0 = this backend asks for nothing. Clients with a wait of their own add it.
        self.approval_timeout = approval_timeout
        # The interpreter running the backend (sys.executable): the VS Code extension starts the shell engine
        # host with it (docs/protocol.md §3.4.1, §7). "" in files from older backends.
        self.python = python
        # The editor leg's own credential (docs/security.md §2): /v1/editor accepts only this one, every
        # other role only ``token``, so an agent connection cannot register as an editor.
        self.editor_token = editor_token
        # The decider's credential (issue 19, docs/security.md): approvals and review decisions on /v1/control
        # need it; the agent token gets FORBIDDEN for them. Agents are never given it.
        self.decider_token = decider_token
        # The Unix-socket endpoint (issue 28, docs/protocol.md §2.1): its path, "" when the backend has none.
        self.socket = socket

    FIELDS = (
        "instance_id",
        "pid",
        "start_time",
        "host",
        "port",
        "runtime",
        "workspace",
        "token",
        "protocol",
        "oh_version",
        "started_at",
        "trace",
        "editor_timeout",
        "url",
        "allowed_roots",
        "review_timeout",
        "approval_timeout",
        "python",
        "editor_token",
        "decider_token",
        "socket",
    )
    _SECRET = ("token", "editor_token", "decider_token")

    def to_dict(self) -> dict[str, Any]:
        """Every field (credentials included), in the file's order: what the session file holds."""
        d = {name: getattr(self, name) for name in self.FIELDS}
        d["allowed_roots"] = list(self.allowed_roots)  # a copy, as asdict made: the caller may change it
        return d

    def public(self) -> dict[str, Any]:
        """Everything but the credentials: what status output and logs may show."""
        return {k: v for k, v in self.to_dict().items() if k not in self._SECRET}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Session) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.public().items())
        return f"Session({shown})"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Session":
        return cls(**{k: v for k, v in d.items() if k in cls.FIELDS})


def new_instance_id() -> str:
    import secrets  # here: it loads OpenSSL (hmac), a cost to every command that only reads sessions

    return secrets.token_hex(6)


def process_start_time(pid: int) -> float | None:
    """Creation time of ``pid`` (epoch seconds), or None when no such process."""
    if sys.platform.startswith("linux"):
        from .fastpath.discover import start_time

        try:  # /proc says it as psutil would, without psutil's import (~3x the interpreter's start)
            return start_time(pid)
        except (OSError, ValueError, IndexError):
            pass  # /proc mounted with hidepid, an unusual stat line: psutil decides
    import psutil  # lazy: only the commands that list sessions pay for it

    try:
        proc = psutil.Process(pid)
        # A killed backend whose parent does not reap it (containers without an init) lingers as a
        # zombie: it no longer serves anything, so its session file is stale.
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc.create_time()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:
        return -1.0  # alive but not ours to inspect: treat as alive


def path_for(instance_id: str, directory: Path | None = None) -> Path:
    return (directory or paths.sessions_dir()) / f"{instance_id}{SUFFIX}"


def write(session: Session, directory: Path | None = None) -> Path:
    """Atomically (re)write the session file, 0600 in a 0700 directory."""
    import json

    target = path_for(session.instance_id, directory)
    paths.write_private_file(target, json.dumps(session.to_dict(), indent=2) + "\n")
    return target


def remove(instance_id: str, directory: Path | None = None) -> None:
    try:
        path_for(instance_id, directory).unlink()
    except FileNotFoundError:
        pass


def is_alive(session: Session) -> bool:
    started = process_start_time(session.pid)
    if started is None:
        return False
    if started < 0:
        return True
    return abs(started - float(session.start_time)) <= START_TIME_TOLERANCE


def read(path: Path) -> Session | None:
    """One session file, or None when unreadable/partial (a writer's race, or garbage).

    Raises ``paths.UnsafePath`` for a file another user could have written: its token and address
    would be trusted by every command that picks it."""
    try:
        paths.check_file(path, what="session file")
    except OSError:
        return None
    try:
        data = loads(path.read_text(encoding="utf-8"))
        return Session.from_dict(data)
    except (OSError, ValueError, TypeError):
        return None


def list_sessions(directory: Path | None = None, *, clean: bool = True) -> list[Session]:
    """Live sessions, newest first. Stale files are deleted when ``clean`` (the default)."""
    d = directory or paths.sessions_dir()
    if directory is None:
        paths.check_roots()
    if not d.is_dir():
        return []
    paths.check_owned(d, what="sessions directory")
    found: list[Session] = []
    for p in d.glob(f"*{SUFFIX}"):
        s = read(p)
        if s is None:
            continue
        if is_alive(s):
            found.append(s)
        elif clean:
            _bury(p, s, d)
    found.sort(key=lambda s: s.start_time, reverse=True)
    return found


# A stale session file (its backend died: kill -9, a crash, a reboot) is replaced by a note without the
# credentials, `.<instance_id>.died`, so that whichever command cleans it first (often `oh run`), `oh status`
# still says once that the backend died (and takes the note away).
DIED_SUFFIX = ".died"
_DIED_FIELDS = ("instance_id", "pid", "runtime", "workspace", "port", "started_at")


def _bury(path: Path, session: Session, directory: Path) -> None:
    try:
        path.unlink()
    except OSError:
        return  # another lister took it (and buried it)
    import json

    note = {k: v for k, v in session.to_dict().items() if k in _DIED_FIELDS}
    try:
        paths.write_private_file(directory / f".{session.instance_id}{DIED_SUFFIX}", json.dumps(note) + "\n")
    except OSError:
        pass


def take_died(directory: Path | None = None) -> list[dict[str, Any]]:
    """The backends found dead since the last call (oldest first), each once: their notes are removed."""
    d = directory or paths.sessions_dir()
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob(f".*{DIED_SUFFIX}"), key=lambda p: p.stat().st_mtime if p.exists() else 0):
        try:
            paths.check_file(p, what="session note")
            data = loads(p.read_text(encoding="utf-8"))
            p.unlink()
        except (OSError, ValueError, paths.UnsafePath):
            continue
        if isinstance(data, dict) and isinstance(data.get("instance_id"), str):
            out.append({k: data.get(k) for k in _DIED_FIELDS})
    return out


def find(instance_prefix: str, directory: Path | None = None) -> list[Session]:
    return [s for s in list_sessions(directory) if s.instance_id.startswith(instance_prefix)]


def for_workspace(workspace: str | os.PathLike[str], directory: Path | None = None) -> Session | None:
    """The live session whose workspace contains ``workspace`` (deepest match wins)."""
    target = os.path.realpath(workspace)
    best: Session | None = None
    for s in list_sessions(directory):
        ws = s.workspace
        if within(target, ws):
            if best is None or len(ws) > len(best.workspace):
                best = s
    return best


# The workspace lock (backend/__main__.py holds it with flock for its lifetime; the kernel releases it even
# on SIGKILL). Once listening, the backend writes its public identity into it (no token), so a backend
# whose session file was deleted can still be named: pid, instance id, address.
def lock_path(workspace: str, directory: Path | None = None) -> Path:
    import hashlib

    name = hashlib.sha256(os.path.realpath(workspace).encode()).hexdigest()[:16]
    return (directory or paths.sessions_dir()) / f".{name}.lock"


def write_identity(fd: int, session: Session) -> None:
    """Replace the lock file's content with ``session``'s public fields (the lock is ours: ``fd`` holds it)."""
    import json

    data = json.dumps(
        {
            k: v
            for k, v in session.public().items()
            if k in ("instance_id", "pid", "start_time", "port", "url", "workspace", "runtime")
        }
    )
    os.ftruncate(fd, 0)
    os.pwrite(fd, data.encode(), 0)


def lock_holder(workspace: str, directory: Path | None = None) -> dict[str, Any] | None:
    """The identity in the workspace's lock file when its writer is still alive (same pid and start
    time), else None. For messages only: nothing here is a credential."""
    try:
        path = lock_path(workspace, directory)
        paths.check_file(path, what="lock file")
        data = loads(path.read_text(encoding="utf-8") or "null")
    except (OSError, ValueError, paths.UnsafePath):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("pid"), int):
        return None
    started = process_start_time(data["pid"])
    if started is None or (started >= 0 and abs(started - float(data.get("start_time") or 0)) > START_TIME_TOLERANCE):
        return None
    return data


# Agents elsewhere (issue 28): a backend reached through `OH_URL` or a connect file (oh.fastpath.connect, the one
# owner of those) is a Session like a local one, with url `unix:PATH` and pid 0 (not a process of this machine).
def from_env() -> Session | None:
    """The backend ``OH_URL`` names (explicit: it wins over session files). Raises fastpath.connect.ConnectError."""
    from .fastpath import connect

    found = connect.from_env()
    return Session.from_dict(found) if found else None


def from_connect_file() -> Session | None:
    """The backend of ``OH_CONNECT`` / ``<state dir>/connect.json`` (used when no local backend serves)."""
    from .fastpath import connect

    found = connect.from_file()
    return Session.from_dict(found) if found else None


def elsewhere_or(local: "Session | None") -> Session | None:
    """The session an agent-side route uses: ``OH_URL``, else ``local``, else the connect file."""
    return from_env() or local or from_connect_file()
