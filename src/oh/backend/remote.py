"""Agents elsewhere (issue 28), the backend's side: the Unix-socket endpoint (listen.py) and the share
credentials (shares.py, kept on disk by sharestore.py), plugged into the Backend through a few hooks (server.py:
start, stop, the handshake, token rotation, status, the control table). docs/protocol.md §2.1-§2.2,
docs/security.md §9.

``Remote`` knows nothing of the Backend: it gets its settings (``RemoteSettings``) and the four things it needs
from the server (``ServerHooks``: the connection handler, the TCP port, the live connections, the monitor
events), so server -> handshake -> remote imports no further than that (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable

from websockets.asyncio.server import ServerConnection, unix_serve

from ..protocol import frames
from ..protocol.codes import Close
from ..transport import close_quietly, coalescing
from . import auth, guard, listen
from .options import BackendConfig
from .shares import Share, ShareBook, ShareError

log = logging.getLogger("oh.backend")

SHARE_PATHS = frozenset({"/v1/agent", "/v1/status"})  # what a share credential opens (health needs none)
SWEEP_INTERVAL = 1.0  # seconds between checks for expired shares (their live connections are closed)
DENIED_TEXT = (
    "A share credential opens only /v1/agent (and /v1/status): it cannot register as the editor, watch, "
    "decide or control. Use the backend's own token on this machine.\n"
)


@dataclass(frozen=True)
class RemoteSettings:
    workspace: str  # the backend's (real path): where its socket lives by default
    host: str  # the TCP endpoint's host (the Host check on loopback)
    unix_socket: bool = False
    unix_socket_path: str | None = None  # None: listen.socket_path(workspace)
    share_book: str | None = None  # the shares on disk (sharestore); None: in memory only

    @classmethod
    def of(cls, config: BackendConfig, workspace: str) -> "RemoteSettings":
        return cls(workspace, config.host, config.unix_socket, config.unix_socket_path, config.share_book)


@dataclass(frozen=True)
class ServerHooks:
    """What Remote uses of the server, and nothing else."""

    handler: Callable[[ServerConnection], Awaitable[None]]  # the one connection handler (both endpoints)
    port: Callable[[], int]  # the TCP port (known once the TCP server is bound)
    connections: Callable[[], Iterable[ServerConnection]]  # the live connections (a share's are closed)
    emit: Callable[..., None]  # a monitor event


class Remote:
    def __init__(self, settings: RemoteSettings, hooks: ServerHooks) -> None:
        self.settings = settings
        self.hooks = hooks
        self.book = ShareBook(Path(settings.share_book) if settings.share_book else None)
        self.socket_path: Path | None = None
        self.socket_error = ""
        self._inode = 0
        self._server: Any = None  # websockets' Server of the Unix socket
        self._sweeper: asyncio.Task | None = None

    # ------------------------------------------------------------------ the Unix socket
    async def start(self, kwargs: dict[str, Any]) -> None:
        """Listen on the workspace's socket with the TCP server's settings (``kwargs``); a path that cannot be
        used is reported (log, status) and the backend goes on serving on loopback TCP."""
        restored = self.book.load()
        if restored:
            log.info("%d share(s) restored from %s", restored, self.book.path)
        self._sweeper = asyncio.create_task(self._sweep_loop())
        if not self.settings.unix_socket:
            return
        path = Path(self.settings.unix_socket_path or listen.socket_path(self.settings.workspace))
        try:
            listen.prepare(path)
            self._server = await unix_serve(self.hooks.handler, str(path), **kwargs)
            self._inode = listen.secure(path)
        except (listen.SocketRefused, OSError) as exc:
            self.socket_error = str(exc)
            log.warning("no Unix socket endpoint: %s", exc)
            if self._server is not None:
                self._server.close()
                self._server = None
            return
        self.socket_path = path
        log.info("also listening on unix:%s", path)

    def close(self) -> None:
        """Stop accepting on the socket and remove it (only the one we bound)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._server is not None:
            self._server.close(close_connections=False)
        if self.socket_path is not None:
            listen.remove(self.socket_path, self._inode)

    async def wait_closed(self) -> None:
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 3)

    # ------------------------------------------------------------------ the handshake
    def check_host(self, connection, headers) -> tuple[HTTPStatus, str] | None:
        if listen.is_unix(connection):
            return auth.check_unix_host(headers, listen.UNIX_HOST)
        return auth.check_host(headers, self.hooks.port(), self.settings.host)

    def admit(self, connection, path: str, headers, refusal):
        """The handshake's last chance: a share credential where the token did not match. Returns the refusal
        to send, or None when a live share admits the connection (``connection.oh_share``)."""
        share = self.book.match(auth.bearer_token(headers))
        if share is None:
            return refusal
        if path not in SHARE_PATHS:
            return HTTPStatus.FORBIDDEN, DENIED_TEXT
        connection.oh_share = share
        return None

    # ------------------------------------------------------------------ revocation
    async def _close_share(self, shares: list[Share], why: str) -> int:
        gone = {id(s) for s in shares}
        conns = [c for c in list(self.hooks.connections()) if id(getattr(c, "oh_share", None)) in gone]
        await asyncio.gather(*(close_quietly(c, Close.TOKEN_ROTATED, why) for c in conns))
        return len(conns)

    async def revoke_all(self) -> None:
        """Token rotation ends every share (their connections are closed by the rotation itself)."""
        gone = self.book.revoke_all()
        if gone:
            self.hooks.emit("shares_revoked", shares=[s.share_id for s in gone], reason="token rotated")

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_INTERVAL)
            expired = self.book.sweep()
            if expired:
                closed = await self._close_share(expired, "share expired")
                for s in expired:
                    self.hooks.emit("share_ended", share_id=s.share_id, reason="expired", closed=closed)

    # ------------------------------------------------------------------ control (`oh share`)
    async def control(self, obj: dict[str, Any], decider: bool) -> dict[str, Any]:
        op = obj.get("op")
        if op == "list":
            return {"type": "share", "op": "list", "shares": self.book.rows(), **self.endpoint()}
        if op not in ("create", "revoke", "link"):
            return frames.refusal("BAD_REQUEST", "share op must be list, create, revoke or link")
        if not decider:  # an agent must not mint or end credentials for elsewhere
            return frames.refusal(
                "FORBIDDEN", "Creating and revoking shares needs the decider credential (`oh share` on this machine)."
            )
        if op == "create":
            try:
                share, token = self.book.create(
                    obj.get("where"), obj.get("ttl"), obj.get("map") or [], obj.get("kind") or "env", obj.get("host")
                )
            except ShareError as exc:
                return frames.refusal("BAD_REQUEST", str(exc))
            self.hooks.emit("share_created", **share.row())
            return {"type": "share", "op": "create", "share": share.row(), "token": token, **self.endpoint()}
        return await self._on_share(op, self.book.get(str(obj.get("share_id") or "")), obj)

    async def _on_share(self, op: str, share: Share | None, obj: dict[str, Any]) -> dict[str, Any]:
        """``revoke`` and ``link`` of one share."""
        if share is None:
            return frames.refusal(
                "NO_SHARE", f"No active share {str(obj.get('share_id'))[:40]!r}: see `oh share list`."
            )
        if op == "link":  # `oh share ssh` reports its link's state
            link = obj.get("link")
            if isinstance(link, dict):
                share.link = {k: str(v)[:200] for k, v in link.items() if k in ("state", "reason", "host", "since")}
                self.hooks.emit("share_link", share_id=share.share_id, **share.link)
            return {"type": "share", "op": "link", "share": share.row()}
        self.book.revoke(share.share_id)
        closed = await self._close_share([share], "share revoked")
        self.hooks.emit("share_ended", share_id=share.share_id, reason="revoked", closed=closed)
        return {"type": "share", "op": "revoke", "share": share.row(), "closed": closed}

    # ------------------------------------------------------------------ status
    def endpoint(self) -> dict[str, Any]:
        return {"socket": str(self.socket_path) if self.socket_path else "", "socket_error": self.socket_error}

    def status(self) -> dict[str, Any]:
        return {**self.endpoint(), "shares": self.book.rows()}


def gate_kwargs(c: BackendConfig, gate: guard.PreAuthGate, process_request: Callable[..., Any]) -> dict[str, Any]:
    """The server settings both endpoints share (limits, keepalive, the pre-auth gate): one definition."""
    return dict(
        process_request=process_request,
        create_connection=coalescing(guard.gated_connection_class(gate)),
        open_timeout=c.open_timeout,
        max_size=c.max_frame,
        compression=None,
        ping_interval=c.ping_interval,
        ping_timeout=c.ping_timeout,
        close_timeout=2,
        server_header=None,
    )
