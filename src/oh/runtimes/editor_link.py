"""The editor connection, both ways: one owner for ``/v1/editor`` (docs/protocol.md §4).

It registers an editor (the ``register`` → ``registered`` handshake), sends it actions
(``forward``) and waits for their observations, reads everything the editor sends (observations,
binary read answers, ``job_event`` and ``proposal_event`` frames), and on disconnect fails every
action the editor owed with ``EDITOR_DISCONNECTED`` and tells its listener (the vscode runtime
marks the editor's running jobs ``LOST``). The backend only routes the path here; the actions
each editor owes (``Editor.pending``) are touched by no other module.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from websockets.exceptions import ConnectionClosed

from ..protocol import binary, frames
from ..protocol.codes import Close
from ..protocol.errors import ErrorId, ProtocolError
from ..protocol.events import decode_frame, encode, error_observation, parse_observation
from ..transport import send_bounded
from .editors import Editor, EditorRegistry

log = logging.getLogger("oh.backend")

REGISTER_TIMEOUT = 10.0


@dataclass(frozen=True)
class Welcome:
    """What a ``registered`` frame tells every editor about this backend."""

    instance_id: str
    workspace: str
    allowed_roots: list[str]
    max_shells: int
    job_retention: float
    review: bool
    review_timeout: float
    # The agent's shell as the backend's settings say (§3.4.1): the editor's engine follows them.
    user_shell: bool | None = None
    shell_startup_timeout: float | None = None
    # The agent shell's sandbox (§3.18): {level, network, writable, fallback}; None = the editor's default.
    sandbox: dict[str, Any] | None = None


class EditorLink:
    """Connected editors: registration, the read loop, pending actions, disconnects."""

    def __init__(
        self,
        registry: EditorRegistry,
        welcome: Welcome,
        send_timeout: float = 40.0,
        register_timeout: float = REGISTER_TIMEOUT,
    ) -> None:
        self.registry = registry
        self.welcome = welcome
        self.send_timeout = send_timeout  # an editor that does not read for this long is dropped
        self.register_timeout = register_timeout  # its register frame must arrive within this long
        # Set by the backend: monitor events (editor_connected / editor_disconnected), and proposal
        # events with the editor's id (the backend adds whose action it is).
        self.on_event: Callable[..., None] = lambda name, **fields: None
        self.on_proposal_event: Callable[[str, dict[str, Any], str], None] = lambda name, fields, editor_id: None
        # Consent (§3.13): an editor's `approval` answer -> the frame to send back (None: consent is not wired).
        self.on_approval: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        # History (§3.15.2): an editor's `history` request -> its answer (None: history is not wired).
        self.on_history: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None = None
        self._tasks: set[asyncio.Task] = set()
        # Set by the runtime that keeps the editors' jobs (the vscode one): an editor's job_event, an
        # editor gone. Unset (the local runtime), both are ignored.
        self.on_job_event: Callable[[Editor, str, dict[str, Any]], None] | None = None
        self.on_editor_gone: Callable[[Editor], None] | None = None
        # The last editor refused for its version (protocol/versions.py): `GET /v1/status`, the live view.
        self.refused: dict[str, Any] | None = None

    # ------------------------------------------------------------------ sending
    async def forward(self, editor: Editor, action_id: int, frame: dict[str, Any]) -> dict[str, Any]:
        """Send ``frame`` to ``editor`` and wait for its observation (cause ``action_id``). A cancel
        (agent gone, deadline, shutdown) is passed on to the editor as a ``cancel`` frame."""
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        editor.pending[action_id] = future
        try:
            if not await send_bounded(editor.connection, encode(frame), self.send_timeout):
                return error_observation(
                    action_id,
                    ErrorId.EDITOR_DISCONNECTED,
                    "The editor disconnected (or stopped reading) before the action could be delivered.",
                )
            return await future
        except asyncio.CancelledError:
            # Agent gone, deadline passed or shutdown: tell the editor to stop the work.
            if editor.pending.pop(action_id, None) is not None:
                try:
                    await asyncio.wait_for(editor.connection.send(encode(frames.cancel(action_id)), text=True), 1.0)
                except Exception:  # noqa: BLE001 - the editor may be gone already
                    pass
            raise
        except Exception:  # noqa: BLE001 - the send failed: the editor dropped
            return error_observation(
                action_id, ErrorId.EDITOR_DISCONNECTED, "The editor disconnected before the action could be delivered."
            )
        finally:
            editor.pending.pop(action_id, None)

    def can(self, capability: str) -> bool:
        """Whether a connected editor advertised ``capability``."""
        return any(capability in (e.registration.capabilities or ()) for e in self.registry.all())

    def broadcast(self, capability: str, frame: dict[str, Any]) -> None:
        """Send ``frame`` (no answer awaited) to every editor that advertised ``capability``, each bounded by
        ``send_timeout`` (an editor that stops reading is dropped, as for actions)."""
        data = encode(frame)
        for editor in self.registry.all():
            if capability in (editor.registration.capabilities or ()):
                asyncio.ensure_future(send_bounded(editor.connection, data, self.send_timeout))

    async def tell(self, editor: Editor, frame: dict[str, Any]) -> None:
        """A one-way frame (no answer awaited), at most 1 s; an editor that is gone is skipped."""
        try:
            await asyncio.wait_for(editor.connection.send(encode(frame), text=True), 1.0)
        except Exception:  # noqa: BLE001 - an editor that is gone has nothing to be told
            pass

    # ------------------------------------------------------------------ receiving
    async def serve(self, connection: Any) -> None:
        """One editor's connection, from its ``register`` frame to its disconnect."""
        editor = await self._register(connection)
        if editor is None:
            return
        reason = "closed"
        try:
            async for message in connection:
                await self._receive(editor, message)
        except ConnectionClosed as exc:
            reason = f"connection closed ({exc.rcvd.code if exc.rcvd else 'no close frame'})"
        finally:
            self._gone(editor, reason)

    async def _register(self, connection: Any) -> Editor | None:
        w = self.welcome
        try:
            first = await asyncio.wait_for(connection.recv(), self.register_timeout)
            registration = frames.parse_registration(decode_frame(first), w.instance_id)
            self.registry.check_folders(registration.workspace_folders)
        except asyncio.TimeoutError:
            await connection.close(Close.BAD_REGISTRATION, "no register frame")
            return None
        except (ProtocolError, frames.RegistrationError) as exc:
            if exc.error_id == "PROTOCOL_MISMATCH":  # oh and the extension cannot talk: say so where the user looks
                self.refused = {"message": exc.message, "time": time.time()}
                self.on_event("editor_refused", message=exc.message)
                log.warning("editor refused: %s", exc.message)
            await connection.send(encode(frames.refusal(str(exc.error_id), exc.message)), text=True)
            await connection.close(Close.BAD_REGISTRATION, "bad registration")
            return None
        editor = Editor(self.registry.new_id(), registration, connection, time.monotonic())
        self.registry.add(editor)
        await connection.send(
            encode(
                frames.registered(
                    editor.editor_id,
                    w.instance_id,
                    w.workspace,
                    w.allowed_roots,
                    w.max_shells,
                    w.job_retention,
                    review=w.review,
                    review_timeout=w.review_timeout,
                    version_check=registration.version_check,
                    user_shell=w.user_shell,
                    shell_startup_timeout=w.shell_startup_timeout,
                    sandbox=w.sandbox,
                )
            ),
            text=True,
        )
        self.on_event("editor_connected", editor=editor.describe())
        log.info(
            "editor %s registered: %s %s %s",
            editor.editor_id,
            registration.editor_name,
            registration.editor_version,
            registration.workspace_folders,
        )
        return editor

    async def _receive(self, editor: Editor, message: str | bytes) -> None:
        try:
            if binary.is_binary_frame(message):  # a binary read's answer (protocol/binary.py)
                obs = binary.unpack(message)
                content = obs.pop("content")
                parse_observation(obs)
                if obs["observation"] != "read":
                    raise ProtocolError(
                        ErrorId.BAD_REQUEST, "Only a read observation may be a binary frame.", obs["cause"]
                    )
                obs["content"] = content
            else:
                obj = decode_frame(message)
                if obj.get("type") == "job_event":  # an editor's job started / ended
                    event = frames.parse_job_event(obj)
                    if event is not None and self.on_job_event is not None:
                        self.on_job_event(editor, *event)
                    return
                if obj.get("type") == "proposal_event":  # §3.11: what awaits review in the editor
                    pevent = frames.parse_proposal_event(obj)
                    if pevent is not None:
                        self.on_proposal_event(pevent[0], pevent[1], editor.editor_id)
                    return
                if (
                    obj.get("type") == "approval" and self.on_approval is not None
                ):  # §3.13: the user answered in the editor
                    await editor.connection.send(encode(self.on_approval(obj)), text=True)
                    return
                if obj.get("type") == "history" and self.on_history is not None:  # §3.15.2: VS Code's undo
                    # Answered in a task: planning reads files and may merge; this editor's observations keep flowing.
                    task = asyncio.ensure_future(self._answer_history(editor, obj))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                    return
                if obj.get("type") is not None:
                    return  # other control frames from editors are ignored
                obs = parse_observation(obj)
        except ProtocolError as exc:
            log.debug("editor %s sent a bad frame: %s", editor.editor_id, exc.message)
            await editor.connection.send(encode(frames.refusal(str(exc.error_id), exc.message)), text=True)
            return
        future = editor.pending.pop(obs["cause"], None)
        if future is not None and not future.done():
            future.set_result(obs)

    async def _answer_history(self, editor: Editor, obj: dict[str, Any]) -> None:
        assert self.on_history is not None
        try:
            answer = await self.on_history(obj)
        except Exception as exc:  # noqa: BLE001 - a failed request is answered, never a dead task
            log.warning("editor %s: history request failed: %s", editor.editor_id, exc)
            answer = {**frames.refusal("SERVER_ERROR", f"history: {exc}"), "rid": obj.get("rid")}
        await send_bounded(editor.connection, encode(answer), self.send_timeout)

    def _gone(self, editor: Editor, reason: str) -> None:
        self.registry.remove(editor)
        # Every action this editor owed fails now, not at its deadline.
        for leg_id, future in list(editor.pending.items()):
            if not future.done():
                future.set_result(
                    error_observation(
                        leg_id,
                        ErrorId.EDITOR_DISCONNECTED,
                        "The editor disconnected while executing the action; it may or may not have run.",
                    )
                )
        editor.pending.clear()
        if self.on_editor_gone is not None:
            self.on_editor_gone(editor)  # its running jobs are LOST
        self.on_event("editor_disconnected", editor_id=editor.editor_id, reason=reason)
        log.info("editor %s gone: %s", editor.editor_id, reason)
