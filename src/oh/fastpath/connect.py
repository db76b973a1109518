"""Connect files and the ``OH_URL`` environment (issue 28): how an agent elsewhere (a container, another machine)
finds the backend it was given with ``oh share``. The one owner of connect files: ``oh share`` writes them, every
agent-side route reads them through ``discover`` (the fast path, the CLI, ``oh mcp``, the OpenHands
integrations). Stdlib only: the fast path imports it.

Where an agent looks, first match wins (docs/protocol.md §2.2):
1. ``OH_URL`` (``unix:/path/oh.sock``, or ``ws://127.0.0.1:PORT``) with ``OH_TOKEN_FILE`` (a file holding the
   credential) or ``OH_TOKEN``; ``OH_WORKSPACE`` is the agent's view of the workspace (default: the cwd).
2. The running backends' session files on this machine (a local backend always wins over a connect file).
3. ``OH_CONNECT`` (a connect file's path), else ``<state dir>/connect.json`` (what ``oh share ssh`` writes on the
   remote side).

A connect file is JSON, 0600: ``{"oh_connect": 1, "url", "token", "workspace", "share_id", "where",
"expires_at"}``. Files and token files are trusted only when they are regular files of this user that no one
else can write (a planted file would point the agent at someone else's endpoint).
"""

from __future__ import annotations

import os
import stat
import time

from ..errors import ClientError

VERSION = 1
FILE_NAME = "connect.json"


class ConnectError(ClientError):
    """A connect file or OH_URL that cannot be used; the message says what to fix."""


def _trusted(path: str, what: str) -> None:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ConnectError(f"{what} {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConnectError(f"{what} {path} is not a regular file")
    if hasattr(os, "geteuid") and (st.st_uid != os.geteuid() or st.st_mode & 0o022):
        raise ConnectError(
            f"{what} {path} is not private (owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}): "
            f"it must be yours and writable only by you (chmod 600 {path})"
        )


def _read_token(path: str) -> str:
    _trusted(path, "OH_TOKEN_FILE")
    with open(path, encoding="utf-8") as f:
        token = f.read(4096).strip()
    if not token:
        raise ConnectError(f"OH_TOKEN_FILE {path} is empty")
    return token


def state_connect_path() -> str | None:
    """``<state dir>/connect.json`` (fastpath/statedir.py: the rule of config/paths.py, stdlib only)."""
    from .statedir import state_dir

    base = state_dir()
    return os.path.join(base, FILE_NAME) if base else None


def session_of(url: str, token: str, workspace: str, **extra: object) -> dict:
    """A session dict as the agent verbs and clients take it (``url`` is ``unix:PATH`` or ``ws://H:P``)."""
    host, port = "localhost", 0
    if url.startswith("ws://"):
        hostport = url[5:].split("/", 1)[0]
        host, _, p = hostport.rpartition(":")
        try:
            port = int(p)
        except ValueError:
            raise ConnectError(f"OH_URL {url}: write unix:/path/oh.sock or ws://127.0.0.1:PORT") from None
        host = host.strip("[]")
    elif not url.startswith("unix:") or len(url) < 7:
        raise ConnectError(f"OH_URL {url!r}: write unix:/path/oh.sock or ws://127.0.0.1:PORT")
    return {
        "instance_id": extra.get("share_id") or "remote",
        "pid": 0,
        "start_time": 0.0,
        "host": host,
        "port": port,
        "runtime": "remote",
        "workspace": os.path.realpath(workspace),
        "token": token,
        "url": url,
        "editor_timeout": 30.0,
        "allowed_roots": [],
        **{k: v for k, v in extra.items() if k in ("share_id", "where", "expires_at")},
    }


def from_env() -> dict | None:
    url = os.environ.get("OH_URL")
    if not url:
        return None
    token_file = os.environ.get("OH_TOKEN_FILE")
    token = _read_token(token_file) if token_file else os.environ.get("OH_TOKEN", "")
    if not token:
        raise ConnectError("OH_URL is set but there is no credential: set OH_TOKEN_FILE (from `oh share`)")
    return session_of(url, token, os.environ.get("OH_WORKSPACE") or os.getcwd())


def read(path: str) -> dict:
    import json  # lazily: the fast path pays for it only when a connect file is there (`json` costs ~3 ms)

    _trusted(path, "connect file")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.loads(f.read(1 << 16))
    except (OSError, ValueError) as exc:
        raise ConnectError(f"connect file {path} is unreadable: {exc}") from None
    if not isinstance(data, dict) or data.get("oh_connect") != VERSION:
        raise ConnectError(f"connect file {path} is not an oh connect file (version {VERSION})")
    url, token, ws = data.get("url"), data.get("token"), data.get("workspace")
    if not all(isinstance(v, str) and v for v in (url, token, ws)):
        raise ConnectError(f"connect file {path} lacks url, token or workspace: share again with `oh share`")
    expires = data.get("expires_at")
    if isinstance(expires, (int, float)) and expires <= time.time():
        raise ConnectError(f"the share in {path} expired: ask for a new one (`oh share` on the host)")
    return session_of(str(url), str(token), str(ws), **{k: data.get(k) for k in ("share_id", "where", "expires_at")})


def from_file() -> dict | None:
    path = os.environ.get("OH_CONNECT") or state_connect_path()
    if not path or not os.path.lexists(path):
        if os.environ.get("OH_CONNECT"):
            raise ConnectError(f"OH_CONNECT {path}: no such file")
        return None
    return read(path)


def write(path: str, *, url: str, token: str, workspace: str, share: dict) -> None:
    """A connect file, created 0600 (never readable by others, not even briefly), replaced atomically."""
    import json

    data = {
        "oh_connect": VERSION,
        "url": url,
        "token": token,
        "workspace": workspace,
        "share_id": share.get("share_id"),
        "where": share.get("where"),
        "expires_at": share.get("expires_at"),
    }
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def write_token(path: str, token: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
