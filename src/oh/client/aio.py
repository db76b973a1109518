"""Async client: many actions in flight on one connection, matched by ``cause``."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from typing import Any, Callable

from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from ..protocol.codes import Close
from ..protocol.events import decode, encode
from ..protocol.headers import encode_value
from ..transport import coalescing, messages
from . import actions
from .editorinfo import AsyncEditorInfo
from .errors import ConnectionLost, handshake_error
from .jobs import AsyncJobs
from .observation import Observation

log = logging.getLogger("oh.client")


def agent_headers(
    token: str,
    *,
    name: str | None = None,
    workdir: str | None = None,
    shell: str | None = None,
    isolate: bool = False,
) -> dict[str, str]:
    """Handshake headers of the agent role: the token, and the optional name / working dir / shell key."""
    headers = {"Authorization": f"Bearer {token}"}
    # Any Unicode (a name with an emoji, a workspace in Cyrillic): protocol/headers.py encodes it.
    if name:
        headers["X-OH-Client"] = encode_value(name)
    if workdir:
        headers["X-OH-Workdir"] = encode_value(str(workdir))
    if shell:
        headers["X-OH-Shell"] = shell
    if isolate:  # a git worktree of its own (issue 37; the backend runs with --isolate on-request)
        headers["X-OH-Isolate"] = "worktree"
    return headers


def unix_path(url: str) -> str | None:
    """The socket path of a ``unix:PATH`` address (``unix:///abs/path`` too), None for a ``ws://`` URL."""
    if not url.startswith("unix:"):
        return None
    rest = url[5:]
    return "/" + rest.lstrip("/") if rest.startswith("//") else rest


MAX_BINARY_HEADER = 64 * 1024
_CONNECTION = coalescing(ClientConnection)


def _binary_fragments(frags: list[bytes]) -> Any:
    """``_binary_obs`` for a message that came in fragments (oh.transport.messages). The backend
    sends a binary read as [4-byte length + header, the content]: the content fragment then becomes
    ``content`` as is, without a join; any other cut is joined first."""
    frags = [f for f in frags if f]
    if len(frags) == 2 and len(frags[0]) >= 4 and 4 + int.from_bytes(frags[0][:4], "big") == len(frags[0]):
        obs = _binary_obs(frags[0])
        if isinstance(obs, dict):
            obs["content"] = bytes(frags[1]) if not isinstance(frags[1], bytes) else frags[1]
        return obs
    return _binary_obs(b"".join(frags))


def _binary_obs(message: bytes) -> Any:
    """The observation of a binary read's frame (docs/protocol.md §3.6: 4-byte big-endian header
    length, the JSON header, the file's bytes), ``content`` as bytes; None if it is not one (it then
    lands in ``stray``). Parsed here rather than with oh.protocol.binary: the client speaks the wire
    format only (docs/architecture.md)."""
    n = int.from_bytes(message[:4], "big")
    if len(message) < 4 or n > MAX_BINARY_HEADER or 4 + n > len(message):
        return None
    try:
        obs = decode(message[4 : 4 + n])
    except ValueError:
        return None
    if not isinstance(obs, dict) or "content" in obs:
        return None
    obs["content"] = message[4 + n :]
    return obs


class Client(AsyncEditorInfo, AsyncJobs):
    def __init__(self, connection: ClientConnection, url: str) -> None:
        self._conn = connection
        self.url = url
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future] = {}  # by action id (ours are ints; a caller may give its own)
        self._progress: dict[int, Callable[[dict[str, Any]], None]] = {}  # action id -> its progress callback
        self._closed: ConnectionLost | None = None
        self._reader = asyncio.create_task(self._read_loop())
        self.stray: list[dict[str, Any]] = []  # error frames without a cause (should not happen)

    @classmethod
    async def connect(
        cls,
        url: str,
        token: str,
        *,
        name: str | None = None,
        path: str = "/v1/agent",
        open_timeout: float = 10.0,
        workdir: str | None = None,
        shell: str | None = None,
        isolate: bool = False,
    ) -> "Client":
        headers = agent_headers(token, name=name, workdir=workdir, shell=shell, isolate=isolate)
        sock = unix_path(url)
        # A `unix:PATH` address (issue 28): the same handshake through the socket file, Host: localhost.
        dial = (lambda uri, **kw: unix_connect(sock, uri, **kw)) if sock else connect
        full = ("ws://localhost" if sock else url.rstrip("/")) + path
        try:
            conn = await dial(
                full,
                additional_headers=headers,
                open_timeout=open_timeout,
                max_size=None,
                compression=None,
                ping_interval=20,
                create_connection=_CONNECTION,
            )  # many actions sent in one loop iteration: one write
        except (InvalidHandshake, OSError, asyncio.TimeoutError) as exc:
            raise handshake_error(exc, url) from None
        return cls(conn, url)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._conn.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader

    async def _read_loop(self) -> None:
        try:
            async for message in messages(self._conn):
                # A binary message answers a read with encoding "binary": content is bytes.
                if isinstance(message, list):  # fragments (the backend sends a binary read in two)
                    obs = _binary_fragments(message) if message[0][:1] == b"\x00" else decode(b"".join(message))
                else:
                    obs = (
                        _binary_obs(message)
                        if isinstance(message, bytes) and message[:1] == b"\x00"
                        else decode(message)
                    )
                if isinstance(obs, dict) and obs.get("type") == "progress":  # before its observation (§3.16)
                    self._on_progress(obs)
                    continue
                fut = self._pending.pop(obs.get("cause"), None) if isinstance(obs, dict) else None
                if fut is None:
                    self.stray.append(obs)
                elif not fut.done():
                    fut.set_result(Observation(obs))
            code, reason = self._conn.close_code, self._conn.close_reason
        except ConnectionClosed as exc:
            code, reason = (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (None, "")
        err = ConnectionLost(
            f"Connection to {self.url} closed ({code}{' ' + reason if reason else ''}) before the observation arrived"
            + (": the token was rotated, reconnect with the new one." if code == Close.TOKEN_ROTATED else "."),
            code,
            reason or "",
        )
        self._closed = err
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(err)
        self._pending.clear()

    def _on_progress(self, frame: dict[str, Any]) -> None:
        callback = self._progress.get(frame.get("cause"))  # type: ignore[arg-type]
        if callback is None:
            return
        try:
            callback(frame)
        except Exception:  # noqa: BLE001 - the caller's callback must not end the read loop
            log.exception("progress callback failed")

    def next_id(self) -> int:
        return next(self._ids)

    async def send(
        self,
        action: dict[str, Any],
        *,
        timeout: float | None = None,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        progress: bool | list[str] = True,
    ) -> Observation:
        """Send a raw action dict (an ``id`` is assigned when missing) and await its observation.

        ``on_progress``: called (in the event loop) with each progress frame of this action before its
        observation (docs/protocol.md §3.16: a wait for the user's consent or review, a run's output, an
        ``ensure`` step); ``progress``: which events to ask for (true: all)."""
        if self._closed is not None:
            raise self._closed
        action = dict(action)
        if "id" not in action:
            action["id"] = self.next_id()
        if on_progress is not None:
            action["progress"] = progress
            self._progress[action["id"]] = on_progress
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending[action["id"]] = fut
        try:
            await self._conn.send(encode(action), text=True)
        except ConnectionClosed:
            self._pending.pop(action["id"], None)
            raise self._closed or ConnectionLost(f"Connection to {self.url} is closed.") from None
        try:
            return await (asyncio.wait_for(fut, timeout) if timeout else fut)
        finally:
            self._pending.pop(action["id"], None)
            self._progress.pop(action["id"], None)

    async def run(
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
        return await self.send(
            actions.run(command, timeout=timeout, blocking=blocking, is_input=is_input, cwd=cwd, **extra)
        )

    async def read(
        self,
        path: str,
        *,
        start: int = 0,
        end: int = -1,
        view_range: list[int] | None = None,
        encoding: str | None = None,
    ) -> Observation:
        return await self.send(actions.read(path, start=start, end=end, view_range=view_range, encoding=encoding))

    async def write(
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
        return await self.send(actions.write(path, content, encoding=encoding, if_version=if_version, force=force))

    async def read_bytes(self, path: str) -> Observation:
        """The whole file's bytes in ``content`` (``bytes``), sent as one binary frame: no base64,
        no JSON escaping (docs/protocol.md, "Binary read"). Extras gain ``encoding``, ``mime_type``."""
        action = actions.read(path)
        action["args"]["encoding"] = "binary"
        return await self.send(action)

    async def edit(self, path: str, command: str, **kw: Any) -> Observation:
        return await self.send(actions.edit(path, command, **kw))

    async def claim(self, paths: list[str], *, ttl: float | None = None) -> Observation:
        """Claim files, directories or globs for ``ttl`` seconds: other agents' writes there are refused
        (``CLAIMED``) until it ends (``release``, the TTL, this connection's end; docs/protocol.md §3.18)."""
        return await self.send(actions.claim(paths, ttl=ttl))

    async def release(self, claim_id: str | None = None) -> Observation:
        """Release one of this connection's claims, or all of them."""
        return await self.send(actions.release(claim_id))
