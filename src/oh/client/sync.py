"""Blocking client for scripts, the CLI's agent verbs and threaded agents (the OpenHands SDK runs tool
calls in worker threads): one connection, any number of threads each waiting for its own observation.

Built on websockets' sync client (no event loop, cheap to import) rather than wrapping the async
client in a thread. websockets forbids two threads in ``recv()`` at once, so the waiting threads take
turns: whichever thread holds the "reader" role receives frames and files each under its ``cause``;
the others sleep on a condition until their observation is filed or the reader role is free. No
background thread: a single-threaded caller pays nothing extra.
"""

from __future__ import annotations

import inspect
import itertools
import threading
import time
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.protocol import State
from websockets.sync.client import ClientConnection, connect, unix_connect

from ..protocol.events import decode, encode
from . import actions
from .aio import agent_headers, unix_path
from .editorinfo import SyncEditorInfo
from .errors import ConnectionLost, OhClientError, handshake_error
from .jobs import SyncJobs
from .observation import Observation

_NOT_YET = object()
# websockets >= 17.1 deprecates using a bare `connect()` result outside a `with` block (a
# DeprecationWarning on the first send/recv) and names `legacy=True` as the way to own a connection
# directly, closed by the owner: exactly this client's model (close() ends it). Older releases have no
# such parameter and no warning.
_OWN_CONNECTION = {"legacy": True} if "legacy" in inspect.signature(connect).parameters else {}


class SyncClient(SyncEditorInfo, SyncJobs):
    def __init__(self, connection: ClientConnection, url: str) -> None:
        self._conn = connection
        self.url = url
        self._ids = itertools.count(1)
        self._ids_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._results: dict[int, Any] = {}  # cause -> observation (or _NOT_YET while awaited)
        self._reading = False
        self._closed: ConnectionLost | None = None
        self.stray: list[dict[str, Any]] = []  # frames whose cause nobody awaits (a timed-out call's late answer)

    @classmethod
    def connect(
        cls,
        url: str,
        token: str,
        *,
        name: str | None = None,
        path: str = "/v1/agent",
        open_timeout: float = 10.0,
        workdir: str | None = None,
        shell: str | None = None,
    ) -> "SyncClient":
        headers = agent_headers(token, name=name, workdir=workdir, shell=shell)
        sock = unix_path(url)  # a `unix:PATH` address (issue 28): Host: localhost through the socket file
        try:
            options: dict[str, Any] = {
                "additional_headers": headers,
                "open_timeout": open_timeout,
                "max_size": None,
                "compression": None,
                **_OWN_CONNECTION,
            }
            conn = (
                unix_connect(sock, "ws://localhost" + path, **options)
                if sock
                else connect(url.rstrip("/") + path, **options)
            )
        except (InvalidHandshake, OSError, TimeoutError) as exc:
            raise handshake_error(exc, url) from None
        return cls(conn, url)

    def __enter__(self) -> "SyncClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True once the connection is gone, including a close the peer sent that no call has seen yet
        (a token rotation closes with 4001): a caller can reconnect before sending into a dead socket."""
        return self._closed is not None or self._conn.state is State.CLOSED

    def close(self) -> None:
        try:
            self._conn.close()
        except Exception:  # noqa: BLE001
            pass
        with self._cond:
            if self._closed is None:
                self._closed = ConnectionLost(f"Connection to {self.url} was closed by this client.")
            self._cond.notify_all()

    def next_id(self) -> int:
        with self._ids_lock:
            return next(self._ids)

    def send(self, action: dict[str, Any], *, timeout: float | None = None) -> Observation:
        """Send a raw action dict (an ``id`` is assigned when missing) and wait for its observation.

        Safe to call from many threads at once. ``timeout`` bounds this call's wait (TimeoutError);
        the backend still answers later, and that late frame is kept in ``stray``.
        """
        action = dict(action)
        if "id" not in action:
            action["id"] = self.next_id()
        aid = action["id"]
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            if self._closed is not None:
                raise self._closed
            if aid in self._results:
                raise OhClientError(f"Action id {aid} is already awaited on this connection; use a fresh id.")
            self._results[aid] = _NOT_YET
        try:
            try:
                with self._send_lock:
                    self._conn.send(encode(action), text=True)
            except ConnectionClosed as exc:
                self._lost(exc)
            return self._wait(aid, deadline)
        finally:
            with self._cond:
                self._results.pop(aid, None)

    def _wait(self, aid: int, deadline: float | None) -> Observation:
        while True:
            with self._cond:
                while True:
                    got = self._results.get(aid, _NOT_YET)
                    if got is not _NOT_YET:
                        return got
                    if self._closed is not None:
                        raise self._closed
                    if not self._reading:
                        self._reading = True
                        break
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise TimeoutError(f"No observation for action {aid} within the timeout.")
                    self._cond.wait(left)
            # This thread is the reader now: receive one frame (outside the lock), file it, hand over.
            frame: Any = None
            try:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                frame = decode(self._conn.recv(timeout=left))
            except ConnectionClosed as exc:
                self._lost(exc)
            finally:
                with self._cond:
                    self._reading = False
                    if frame is not None:
                        cause = frame.get("cause") if isinstance(frame, dict) else None
                        if cause in self._results and self._results[cause] is _NOT_YET:
                            self._results[cause] = Observation(frame)
                        else:
                            self.stray.append(frame)
                    self._cond.notify_all()

    def _lost(self, exc: ConnectionClosed) -> None:
        code, reason = (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (None, "")
        err = ConnectionLost(
            f"Connection to {self.url} closed ({code}{' ' + reason if reason else ''}) before the observation arrived"
            + (": the token was rotated, reconnect with the new one." if code == 4001 else "."),
            code,
            reason or "",
        )
        with self._cond:
            if self._closed is None:
                self._closed = err
            self._cond.notify_all()
        raise self._closed from None

    def run(
        self,
        command: str,
        *,
        timeout: float | None = None,
        blocking: bool = False,
        is_input: bool = False,
        cwd: str | None = None,
        **extra: Any,
    ) -> Observation:
        """``extra``: the optional run args (``reset``, ``env``, ``max_output``, ``security_risk``)."""
        return self.send(actions.run(command, timeout=timeout, blocking=blocking, is_input=is_input, cwd=cwd, **extra))

    def read(
        self,
        path: str,
        *,
        start: int = 0,
        end: int = -1,
        view_range: list[int] | None = None,
        encoding: str | None = None,
    ) -> Observation:
        return self.send(actions.read(path, start=start, end=end, view_range=view_range, encoding=encoding))

    def write(
        self,
        path: str,
        content: str,
        *,
        encoding: str | None = None,
        if_version: str | None = None,
        force: bool = False,
    ) -> Observation:
        """``if_version``: the version a read returned (``extras.version``); the write is refused with ``STALE``
        when the file changed since. ``force``: overwrite anyway (docs/protocol.md §3.18)."""
        return self.send(actions.write(path, content, encoding=encoding, if_version=if_version, force=force))

    def edit(self, path: str, command: str, **kw: Any) -> Observation:
        return self.send(actions.edit(path, command, **kw))

    def claim(self, paths: list[str], *, ttl: float | None = None) -> Observation:
        """Claim files, directories or globs for ``ttl`` seconds: other agents' writes there are refused
        (``CLAIMED``) until it ends (``release``, the TTL, this connection's end; docs/protocol.md §3.18)."""
        return self.send(actions.claim(paths, ttl=ttl))

    def release(self, claim_id: str | None = None) -> Observation:
        """Release one of this connection's claims, or all of them."""
        return self.send(actions.release(claim_id))
