"""The backend's Unix-socket endpoint (issue 28, docs/protocol.md §2.1): the same WebSocket server, the same
handshake and limits, reached through a socket file instead of a loopback port.

Why: a container's network namespace has no route to the host's 127.0.0.1, and OpenSSH forwards Unix sockets
(``ssh -R remote.sock:local.sock``); a socket file is guarded by file permissions, with no port on any network.

Where: ``<state dir>/sock/<workspace hash>/oh.sock`` (``OH_SOCKET_DIR`` replaces ``<state dir>/sock``), one
per workspace, so the path stays the same across restarts (a container can mount its directory once). The
directory is 0700, the socket 0600. The workspace lock (backend/__main__.py) guarantees that no other backend
of ours serves this workspace, so a socket found at the path is a dead backend's: it is removed only after a
probe proves nobody listens, and only when it is a socket we own. Anything else at the path (a regular file,
a symlink, a directory, someone else's socket, a live listener) is left alone and reported.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import socket
import stat
from pathlib import Path

from ..config import paths
from ..errors import CliError

# sockaddr_un.sun_path is 108 bytes on Linux (104 on macOS), NUL included: longer paths cannot be bound.
SUN_PATH_MAX = 107 if not os.uname().sysname == "Darwin" else 103
SOCKET_NAME = "oh.sock"
ENV_DIR = "OH_SOCKET_DIR"
# What a client sends as Host over a Unix socket (websockets puts the URI's host there): the Host check
# keeps refusing anything a browser could send, as on TCP.
UNIX_HOST = "localhost"


class SocketRefused(CliError):
    """The endpoint cannot be (safely) created at ``path``; the message says why and what to do."""


def socket_dir(workspace: str) -> Path:
    base = os.environ.get(ENV_DIR)
    root = Path(base).expanduser().absolute() if base else paths.state_dir() / "sock"
    name = hashlib.sha256(os.path.realpath(workspace).encode()).hexdigest()[:12]
    return root / name


def socket_path(workspace: str) -> Path:
    return socket_dir(workspace) / SOCKET_NAME


def length_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be a socket address (too long for sun_path), or None."""
    n = len(os.fsencode(path))
    if n > SUN_PATH_MAX:
        return (
            f"the socket path {path} is {n} bytes, over the system's limit of {SUN_PATH_MAX}: "
            f"set {ENV_DIR} to a shorter directory (e.g. {ENV_DIR}=/run/user/$(id -u)/oh)"
        )
    return None


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a socket"


def someone_listens(path: str | os.PathLike[str]) -> bool:
    """True when a process accepts connections on the socket at ``path`` (a probe connect, closed at once)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(os.fspath(path))
        return True
    except OSError as exc:
        # EAGAIN: a listener whose backlog is full is still a listener.
        return exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK)
    finally:
        probe.close()


def prepare(path: Path) -> None:
    """Make ``path``'s 0700 directory and free the path of a dead backend's socket; raise SocketRefused for
    anything that is not ours to remove."""
    problem = length_problem(path)
    if problem:
        raise SocketRefused(problem)
    try:
        if not os.environ.get(ENV_DIR):  # <state dir>/sock is ours: 0700 too (a chosen OH_SOCKET_DIR is the user's)
            paths.ensure_private_dir(path.parent.parent)
        paths.ensure_private_dir(path.parent)
    except (OSError, paths.UnsafePath) as exc:
        raise SocketRefused(f"cannot use the socket directory {path.parent}: {exc}") from None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise SocketRefused(
            f"{path} exists and is {_kind(st.st_mode)}: oh removes only its own stale sockets. "
            f"Move it away, or choose another directory with {ENV_DIR}."
        )
    if st.st_uid != os.geteuid():
        raise SocketRefused(f"{path} is a socket of another user (uid {st.st_uid}): left alone; remove it as that user")
    if someone_listens(path):
        raise SocketRefused(f"another process listens on {path}: left alone (is another oh backend running there?)")
    os.unlink(path)  # a dead backend's socket (we hold the workspace's lock): reclaimed


def secure(path: Path) -> int:
    """0600 on the new socket (the 0700 directory already keeps others out); its inode, to remove only it."""
    os.chmod(path, 0o600)
    return os.lstat(path).st_ino


def remove(path: Path, inode: int) -> None:
    """Remove the socket at ``path`` if it is still the one we bound (same inode)."""
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if stat.S_ISSOCK(st.st_mode) and st.st_ino == inode:
            os.unlink(path)


def is_unix(connection) -> bool:
    """Whether ``connection`` came in through the Unix socket (its local address is a path, not a tuple)."""
    try:
        return isinstance(connection.transport.get_extra_info("sockname"), str)
    except Exception:  # noqa: BLE001 - no transport: treat as TCP (the stricter Host rule)
        return False
