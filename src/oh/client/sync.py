"""Blocking client for scripts and the CLI's agent verbs: one action at a time.

Built on websockets' sync client (no event loop, cheap to import) rather than wrapping the async
client in a thread.
"""

from __future__ import annotations

import itertools
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.sync.client import ClientConnection, connect

from ..protocol.events import decode, encode
from . import actions
from .errors import ConnectionLost, handshake_error
from .observation import Observation


class SyncClient:
    def __init__(self, connection: ClientConnection, url: str) -> None:
        self._conn = connection
        self.url = url
        self._ids = itertools.count(1)

    @classmethod
    def connect(cls, url: str, token: str, *, name: str | None = None, path: str = "/v1/agent", open_timeout: float = 10.0) -> "SyncClient":
        headers = {"Authorization": f"Bearer {token}"}
        if name:
            headers["X-OH-Client"] = name
        try:
            conn = connect(url.rstrip("/") + path, additional_headers=headers, open_timeout=open_timeout, max_size=None, compression=None)
            # We own the connection's lifetime (close() ends it); entering its context is what
            # websockets >= 17.1 asks of a connection used beyond a `with` block.
            conn.__enter__()
        except (InvalidHandshake, OSError, TimeoutError) as exc:
            raise handshake_error(exc, url) from None
        return cls(conn, url)

    def __enter__(self) -> "SyncClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._conn.close()
        except Exception:  # noqa: BLE001
            pass

    def send(self, action: dict[str, Any], *, timeout: float | None = None) -> Observation:
        action = dict(action)
        action.setdefault("id", next(self._ids))
        try:
            self._conn.send(encode(action), text=True)
            while True:
                obs = decode(self._conn.recv(timeout=timeout))
                if isinstance(obs, dict) and obs.get("cause") == action["id"]:
                    return Observation(obs)
        except ConnectionClosed as exc:
            code, reason = (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (None, "")
            raise ConnectionLost(
                f"Connection to {self.url} closed ({code}{' ' + reason if reason else ''}) before the observation arrived.", code, reason or ""
            ) from None

    def run(self, command: str, *, timeout: float | None = None, blocking: bool = False, is_input: bool = False, cwd: str | None = None) -> Observation:
        return self.send(actions.run(command, timeout=timeout, blocking=blocking, is_input=is_input, cwd=cwd))

    def read(self, path: str, *, start: int = 0, end: int = -1, view_range: list[int] | None = None) -> Observation:
        return self.send(actions.read(path, start=start, end=end, view_range=view_range))

    def write(self, path: str, content: str) -> Observation:
        return self.send(actions.write(path, content))

    def edit(self, path: str, command: str, **kw: Any) -> Observation:
        return self.send(actions.edit(path, command, **kw))
