"""Share credentials (issue 28, docs/security.md §9): what an agent elsewhere (a container, another machine)
holds instead of the backend's token.

A share credential opens ``/v1/agent`` (and ``/v1/status``, ``/v1/health``) of this one backend and nothing
else: never ``/v1/editor``, ``/v1/monitor`` or ``/v1/control``, so it cannot register as the editor, watch other
agents, decide approvals or review, rotate tokens or stop the backend. It expires (``--ttl``; checked at the
handshake, and live connections are closed when it lapses), and ``oh share revoke`` / ``oh token rotate`` end it
and close its connections at once. The backend keeps only its SHA-256 digest: in memory, and in the share book
on disk (``sharestore.py``, 0600) so that a share survives `oh stop; oh start` until it expires or is revoked.

Only the decider credential (the user's CLI) may create or revoke shares: an agent holding the agent token
cannot mint credentials for elsewhere.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import WireError
from ..protocol.pathmap import MapError, PathMap
from . import sharestore

log = logging.getLogger("oh.backend")

MAX_SHARES = 64
MAX_TTL = 30 * 24 * 3600.0
LABEL_MAX = 80


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


@dataclass(eq=False)
class Share:
    share_id: str
    digest: bytes = field(repr=False)
    where: str  # where its agents run, as the user named it ("docker", "ssh me@gpu-box"): shown on their actions
    created: float
    expires_at: float | None
    pathmap: PathMap
    link: dict[str, Any] = field(default_factory=dict)  # `oh share ssh`: {"state": up|reconnecting|down, "reason"}
    kind: str = "env"  # env | docker | devcontainer | ssh (sharestore.KINDS)
    host: str = ""  # ssh: the destination, for the command that brings the link back after a restart

    def expired(self, now: float | None = None) -> bool:
        return self.expires_at is not None and (now or time.time()) >= self.expires_at

    def row(self) -> dict[str, Any]:
        return {
            "share_id": self.share_id,
            "where": self.where,
            "created": round(self.created, 3),
            "expires_at": None if self.expires_at is None else round(self.expires_at, 3),
            "map": self.pathmap.describe(),
            "kind": self.kind,
            **({"link": dict(self.link)} if self.link else {}),
        }

    def record(self) -> dict[str, Any]:
        """What the share book on disk keeps (sharestore.write): the digest, never the credential."""
        return {
            "share_id": self.share_id,
            "digest": self.digest,
            "where": self.where,
            "kind": self.kind,
            "host": self.host,
            "created": self.created,
            "expires_at": self.expires_at,
            "map": self.pathmap.describe(),
        }


class ShareError(WireError, ValueError):
    pass


def _clean_where(raw: Any) -> str:
    text = "".join(ch for ch in str(raw or "") if ch.isprintable())[:LABEL_MAX].strip()
    return text or "elsewhere"


def restart_note(share: Share) -> dict[str, str]:
    """The link state of an ssh share read back from the book: its ssh process ended with the old backend."""
    return {
        "state": "down",
        "reason": (
            f"the backend restarted: `oh share ssh {share.host} --resume {share.share_id}` brings the link back, "
            f"`oh share revoke {share.share_id}` ends the share"
        ),
    }


class ShareBook:
    """The live shares; with ``path``, also kept on disk (sharestore) after every change and read at ``load``."""

    def __init__(self, path: Path | None = None) -> None:
        self._shares: dict[str, Share] = {}
        self.path = path

    def load(self) -> int:
        """Read back the shares of an earlier backend of this workspace (none without a path)."""
        if self.path is None:
            return 0
        for rec in sharestore.read(self.path, MAX_SHARES):
            share = Share(
                rec["share_id"],
                rec["digest"],
                _clean_where(rec["where"]),
                rec["created"],
                rec["expires_at"],
                rec["pathmap"],
                kind=rec["kind"],
                host=rec["host"],
            )
            if share.kind == "ssh":
                share.link = restart_note(share)
            self._shares[share.share_id] = share
        self._save()  # what was dropped (expired, malformed) is gone from the file too
        return len(self._shares)

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            sharestore.write(self.path, [s.record() for s in self._shares.values()])
        except OSError as exc:  # the shares go on in memory; they will not survive a restart
            log.warning("share book not written (%s): %s", self.path, exc)

    def __len__(self) -> int:
        return len(self._shares)

    def create(
        self, where: Any, ttl: Any = None, maps: Any = (), kind: Any = "env", host: Any = ""
    ) -> tuple[Share, str]:
        """A new share and its credential (the only time the credential exists in clear here)."""
        self.sweep()
        if len(self._shares) >= MAX_SHARES:
            raise ShareError(
                f"{MAX_SHARES} shares are active: revoke some first (`oh share list`, `oh share revoke ID`)"
            )
        if ttl is not None and (not isinstance(ttl, (int, float)) or isinstance(ttl, bool) or not 0 < ttl <= MAX_TTL):
            raise ShareError(f"ttl must be a number of seconds in (0, {int(MAX_TTL)}]")
        if not isinstance(maps, (list, tuple)) or not all(isinstance(m, str) for m in maps):
            raise ShareError("map must be a list of AGENT=HOST strings")
        if kind not in sharestore.KINDS:
            raise ShareError(f"kind must be one of {', '.join(sharestore.KINDS)}")
        from ..protocol.pathmap import parse_map

        try:
            pathmap = PathMap([parse_map(m) for m in maps])
        except MapError as exc:
            raise ShareError(str(exc)) from None
        token = secrets.token_urlsafe(32)
        now = time.time()
        share = Share(
            "s" + secrets.token_hex(4),
            _digest(token),
            _clean_where(where),
            now,
            None if ttl is None else now + ttl,
            pathmap,
            kind=kind,
            host=_clean_where(host) if kind == "ssh" else "",
        )
        self._shares[share.share_id] = share
        self._save()
        return share, token

    def match(self, token: str | None) -> Share | None:
        """The live share this credential belongs to, or None (constant-time comparison of digests)."""
        if not token:
            return None
        d = _digest(token)
        found = None
        for share in self._shares.values():
            if hmac.compare_digest(d, share.digest) and not share.expired():
                found = share
        return found

    def get(self, share_id: str) -> Share | None:
        return self._shares.get(share_id)

    def revoke(self, share_id: str) -> Share | None:
        gone = self._shares.pop(share_id, None)
        self._save()
        return gone

    def revoke_all(self) -> list[Share]:
        gone = list(self._shares.values())
        self._shares.clear()
        self._save()
        return gone

    def sweep(self) -> list[Share]:
        """Remove and return the expired shares."""
        now = time.time()
        gone = [s for s in self._shares.values() if s.expired(now)]
        for s in gone:
            del self._shares[s.share_id]
        if gone:
            self._save()
        return gone

    def rows(self) -> list[dict[str, Any]]:
        return [s.row() for s in self._shares.values()]
