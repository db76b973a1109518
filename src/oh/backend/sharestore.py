"""Shares that outlive the backend process (issue 28): the share book on disk, so `oh stop; oh start` keeps the
credentials agents elsewhere hold (a container's mounted token file, an ssh remote's connect file).

One file per workspace, ``<state dir>/sharebook/<sha256(workspace)[:24]>.json`` (0600 in a 0700 directory,
written atomically by ``config.paths.write_private_file``). It holds each share's record: id, the SHA-256 of the
credential (never the credential), where and what kind, created, expiry, the path map. Revoking, expiry and
`oh token rotate` rewrite it (an empty book removes the file), so what ended never comes back.

Reading trusts nothing: a file that is not a regular file of this user, writable by nobody else, is refused
whole (a record there could admit a credential someone else chose); a malformed or expired record is dropped;
at most ``MAX_SHARES`` are read. Problems are logged; the backend starts with the shares it could read.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from ..config import backendstate, paths
from ..protocol.pathmap import MapError, PathMap, parse_map

log = logging.getLogger("oh.backend")

VERSION = 1
MAX_FILE = 1 << 20
KINDS = ("env", "docker", "devcontainer", "ssh")
_ID = re.compile(r"s[0-9a-f]{8}")
_DIGEST = re.compile(r"[0-9a-f]{64}")


def default_path(workspace: str) -> Path:
    return backendstate.share_book(workspace)


def read(path: Path, limit: int) -> list[dict[str, Any]]:
    """The live records in ``path`` (checked, at most ``limit``); [] when there is none or it is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("shares not restored: cannot open %s: %s", path, exc)
        return []
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            log.warning("shares not restored: %s is not a private file of this user (left as is)", path)
            return []
        raw = f.read(MAX_FILE + 1)
    try:
        data = json.loads(raw) if len(raw) <= MAX_FILE else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("shares"), list):
        log.warning("shares not restored: %s is not a share book of this oh version", path)
        return []
    now, out = time.time(), list[dict[str, Any]]()
    for rec in data["shares"]:
        good = _check(rec, now)
        if good is None:
            log.info("share record dropped (expired or malformed): %.80r", rec)
        elif len(out) < limit:
            out.append(good)
    return out


def _check(rec: Any, now: float) -> dict[str, Any] | None:
    """A record as written by ``write``, its types checked and its path map parsed; None if bad or expired."""
    if not isinstance(rec, dict):
        return None
    sid, digest, where, kind = rec.get("share_id"), rec.get("digest"), rec.get("where"), rec.get("kind")
    created, expires, maps = rec.get("created"), rec.get("expires_at"), rec.get("map")
    if not (isinstance(sid, str) and _ID.fullmatch(sid) and isinstance(digest, str) and _DIGEST.fullmatch(digest)):
        return None
    if not isinstance(where, str) or kind not in KINDS or not isinstance(created, (int, float)):
        return None
    if expires is not None and (not _number(expires) or expires <= now):
        return None
    if not isinstance(maps, list) or not all(isinstance(m, str) for m in maps):
        return None
    try:
        pathmap = PathMap([parse_map(m) for m in maps])
    except MapError:
        return None
    host = rec.get("host")
    return {
        "share_id": sid,
        "digest": bytes.fromhex(digest),
        "where": where,
        "kind": kind,
        "host": host if isinstance(host, str) else "",
        "created": float(created),
        "expires_at": None if expires is None else float(expires),
        "pathmap": pathmap,
    }


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def write(path: Path, records: list[dict[str, Any]]) -> None:
    """Replace the book with ``records`` (each: share_id, digest bytes, where, kind, host, created, expires_at,
    map); none left removes the file. Raises OSError (the caller logs it: the shares go on in memory)."""
    if not records:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    body = {"version": VERSION, "shares": [{**r, "digest": r["digest"].hex()} for r in records]}
    paths.write_private_file(path, json.dumps(body, indent=1) + "\n")
