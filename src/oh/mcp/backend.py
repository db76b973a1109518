"""The MCP server's one connection to the oh backend serving its directory.

Lazy: nothing connects until the first tool call, so an MCP client can list the tools even while
no backend runs. The session file is read at every (re)connect, so a backend that was restarted
(new port, rotated token) is found again: a call that finds the connection already closed
reconnects once before sending. A connection lost *while* an action ran is reported, never
retried: the action may have run, and running a command twice is worse than saying so.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import re
from typing import Any

from .. import sessions
from ..client import AuthError, Client, ConnectionLost, OhClientError
from ..errors import ClientError
from ..fastpath.connect import ConnectError
from ..protocol.paths import within

log = logging.getLogger("oh.mcp")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class NoBackend(ClientError):
    """No backend serves the directory (the message says how to start one)."""


class BackendLost(ClientError):
    """The connection broke while an action was in flight."""


def shell_key(client_name: str) -> str:
    """``mcp-<client name>`` in the X-OH-Shell alphabet, so one agent keeps one shell across reconnects."""
    cleaned = _UNSAFE.sub("-", client_name).strip("-.") or "client"
    return ("mcp-" + cleaned)[:64]


def no_backend_message(target: str, *, can_start: bool) -> str:
    text = (
        f"No oh backend serves {target}. Start one in a terminal in that directory: `oh start` (the live view; the "
        "actions run on this machine, the agent's shell sandboxed unless the config's `sandbox` is off, unless the "
        "config's `runtime` says vscode) or `oh start --runtime vscode` (VS Code runs the actions, sandboxed the "
        "same way); add `--detach` to get the terminal back. Then call this tool again."
    )
    if not can_start:
        text += " Or run this MCP server as `oh mcp --start` to start a local backend by itself."
    return text


async def connect_client(url: str, token: str, *, name: str, shell: str, workdir: str | None) -> Client:
    """``Client.connect`` with the agent headers (docs/protocol.md: X-OH-Client, X-OH-Shell, X-OH-Workdir).

    Uses the client's own keyword arguments when it has them; otherwise sends the headers itself.
    """
    params = inspect.signature(Client.connect).parameters
    isolate = (
        os.environ.get("OH_AGENT_ISOLATE") == "worktree"
    )  # issue 37: a worktree of its own (`--isolate on-request`)
    if "shell" in params and "workdir" in params and "isolate" in params:
        return await Client.connect(url, token, name=name, shell=shell, workdir=workdir, isolate=isolate)
    if "shell" in params and "workdir" in params and not isolate:
        return await Client.connect(url, token, name=name, shell=shell, workdir=workdir)
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidHandshake

    from ..client.errors import handshake_error
    from ..protocol.headers import encode_value

    headers = {"Authorization": f"Bearer {token}", "X-OH-Client": encode_value(name), "X-OH-Shell": shell}
    if workdir:
        headers["X-OH-Workdir"] = encode_value(workdir)
    if isolate:
        headers["X-OH-Isolate"] = "worktree"
    try:
        conn = await connect(
            url.rstrip("/") + "/v1/agent",
            additional_headers=headers,
            open_timeout=10,
            max_size=None,
            compression=None,
            ping_interval=20,
        )
    except (InvalidHandshake, OSError, asyncio.TimeoutError) as exc:
        raise handshake_error(exc, url) from None
    return Client(conn, url)


def _is_closed(client: Client) -> bool:
    closed = getattr(client, "closed", None)
    if isinstance(closed, bool):
        return closed
    return getattr(client, "_closed", None) is not None or client._reader.done()


class Backend:
    def __init__(
        self,
        *,
        workspace: str | None = None,
        instance: str | None = None,
        start: bool = False,
        runtime: str | None = None,
        cwd: str | None = None,
    ) -> None:
        self.cwd = os.path.realpath(cwd or os.getcwd())
        if workspace and "${" in workspace:
            # A client that does not expand ${workspaceFolder} (the entry `install` writes for VS Code and
            # Cursor) passes it literally: the directory it started us in is the best guess left.
            log.warning("--workspace %s was not expanded by the MCP client; using %s", workspace, self.cwd)
            workspace = None
        self.target = os.path.realpath(workspace) if workspace else self.cwd
        self.instance = instance
        self.explicit = bool(workspace or instance)
        self.roots = None  # async () -> list of root paths, set per call when the MCP client offers roots
        self.start = start
        self.runtime = runtime
        self.client_name = "mcp"
        self.session: sessions.Session | None = None
        self.base_dir = self.target
        self._client: Client | None = None
        self._lock = asyncio.Lock()

    def set_client_name(self, name: str | None) -> None:
        if name and self._client is None:
            self.client_name = name[:64]

    # ------------------------------------------------------------------ finding / starting
    def _find(self):
        if self.instance:
            found = sessions.find(self.instance)
            if len(found) == 1:
                return found[0]
            if not found:
                raise NoBackend(
                    f"No running oh backend has the instance id {self.instance!r}. List them with `oh status`."
                )
            raise NoBackend(
                f"The instance id {self.instance!r} is ambiguous ({', '.join(s.instance_id for s in found)}): "
                "give more characters."
            )
        try:  # agents elsewhere (issue 28): OH_URL, else a local backend, else a connect file
            return sessions.elsewhere_or(sessions.for_workspace(self.target))
        except ConnectError as exc:
            raise NoBackend(f"{exc}.") from None

    def _start_backend(self):
        # Lazy: only an MCP server that has to start a backend pays for settings, keyring and the launcher.
        from ..config import secrets
        from ..config.settings import SettingError, Settings
        from ..launcher import backendconfig, process

        try:
            s = Settings.load({"runtime": self.runtime} if self.runtime else {})
        except SettingError as exc:
            raise NoBackend(f"Cannot start a backend: {exc}") from None
        if not os.path.isdir(self.target):
            raise NoBackend(f"Cannot start a backend: {self.target} is not a directory.")
        from ..launcher import consent

        try:
            token = secrets.get_or_create_token()
            plan = consent.plan(
                s, os.path.realpath(self.target), s.review
            )  # the user's consent holds here too (issue 19)
            for _, text in plan.warnings:
                log.warning("%s", text)
            # the user's review and consent settings hold here too
            config = backendconfig.resolve(s, self.target, review=plan.review, consent=plan)
            started = process.start_backend(config, token=token, log_level=s.log_level)
        except process.StartError as exc:
            if exc.already_served:  # someone else started one at the same moment: use it
                return self._find()
            raise NoBackend(f"Cannot start a backend for {self.target}: {exc.message} Run `oh doctor`.") from None
        except Exception as exc:  # noqa: BLE001 - token store failures and the like: say what happened
            raise NoBackend(f"Cannot start a backend for {self.target}: {exc}. Run `oh doctor`.") from None
        log.warning(
            "started backend %s (runtime %s) for %s; stop it with `oh stop %s`%s",
            started.session.instance_id,
            started.session.runtime,
            started.session.workspace,
            started.session.instance_id,
            " (sandbox = off: actions run on this machine as you)" if s.sandbox == "off" else "",
        )
        return started.session

    def _locate(self):
        session = self._find()
        if session is None and self.start and not self.instance:
            session = self._start_backend()
        if session is None:
            raise NoBackend(no_backend_message(self.target, can_start=self.start))
        return session

    async def _target_from_roots(self) -> None:
        """No backend serves our directory: try the client's roots (MCP ``roots/list``).

        Some clients start servers in $HOME or / (desktop apps) but tell their open folders as roots;
        the first root a backend serves becomes the target. A flag or a served cwd always wins.
        """
        if self.explicit or self.roots is None or await asyncio.to_thread(self._find) is not None:
            return
        try:
            paths = await asyncio.wait_for(self.roots(), 5)
        except Exception as exc:  # noqa: BLE001 - roots are a fallback: a failure leaves the target as it was
            log.debug("roots/list failed: %s", exc)
            return
        for path in paths:
            if await asyncio.to_thread(sessions.for_workspace, path) is not None:
                self.target = os.path.realpath(path)
                return

    # ------------------------------------------------------------------ connection
    async def _connect(self) -> Client:
        await self._target_from_roots()
        for attempt in (0, 1):
            session = await asyncio.to_thread(self._locate)
            roots = [session.workspace, *(getattr(session, "allowed_roots", None) or [])]
            workdir = self.cwd if any(within(self.cwd, r) for r in roots) else None
            try:
                client = await connect_client(
                    session.url,
                    session.token,
                    name=self.client_name,
                    shell=shell_key(self.client_name),
                    workdir=workdir,
                )
            except AuthError:
                if attempt == 0:  # the session file may be mid-rotation: read it again once
                    await asyncio.sleep(0.2)
                    continue
                raise NoBackend(
                    f"The backend for {session.workspace} refused the token in its session file. Run `oh doctor`."
                ) from None
            except OhClientError as exc:
                if attempt == 0:  # it may have just stopped: look again once
                    await asyncio.sleep(0.2)
                    continue
                raise NoBackend(
                    f"Cannot reach the backend for {session.workspace}: {exc} Check it with `oh status`."
                ) from None
            self.session = session
            self.base_dir = workdir or session.workspace
            return client
        raise NoBackend(
            no_backend_message(self.target, can_start=self.start)
        )  # pragma: no cover - loop returns or raises

    async def client(self) -> Client:
        async with self._lock:
            if self._client is not None and _is_closed(self._client):
                await self._drop()
            if self._client is None:
                self._client = await self._connect()
            return self._client

    async def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def send(self, action: dict[str, Any], on_progress=None) -> dict[str, Any]:
        """``on_progress``: gets the action's `waiting` and `step` frames (protocol §3.16)."""
        client = await self.client()
        try:
            if on_progress is None:
                return await client.send(action)
            return await client.send(action, on_progress=on_progress, progress=["waiting", "step"])
        except ConnectionLost as exc:
            async with self._lock:
                if self._client is client:
                    await self._drop()
            raise BackendLost(
                f"The connection to the oh backend was lost while this action ran ({exc}). The backend stopped or "
                "restarted, or its token was rotated; the action may or may not have run. Check with `oh status`; "
                "the next call reconnects."
            ) from None

    async def control(self, frame: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        """One request on the backend's control leg with the agent token (history, §3.15)."""
        from ..launcher.control import BackendUnreachable, control

        await self.client()
        session = self.session
        if session is None:  # client() found (or started) one, or raised
            raise BackendLost("No oh backend. Check it with `oh status`.")
        try:
            return await asyncio.to_thread(control, session, frame, timeout=timeout)
        except BackendUnreachable as exc:
            raise BackendLost(f"The oh backend did not answer ({exc}). Check it with `oh status`.") from None

    async def close(self) -> None:
        async with self._lock:
            await self._drop()
