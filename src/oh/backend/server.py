"""The backend: a websockets (asyncio API) server on loopback that routes agents' actions to a runtime.

Thin I/O shell around the pure protocol core (``oh.protocol``): it authenticates handshakes, reads
frames, hands validated actions to the runtime, numbers observations, and tells monitors what
happens. Roles by path: /v1/agent, /v1/editor, /v1/monitor, /v1/control (docs/protocol.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from .. import PROTOCOL_VERSION, __version__
from ..protocol import binary, frames, review
from ..protocol.branch import Plan
from ..protocol.codes import Close
from ..protocol.correlation import Correlator
from ..protocol.errors import ErrorId, ProtocolError
from ..protocol.events import (
    Action,
    decode_frame,
    encode,
    error_from,
    error_observation,
    exit_code_of,
    outcome_of,
    parse_action,
    parse_observation,
    summarize,
)
from ..runtimes.base import AgentContext
from ..runtimes.editors import Editor, EditorRegistry
from ..transport import abort, coalescing, send_bounded
from . import agentinfo, auth, consentctl, guard
from .trace import TraceWriter
from .history import MonitorHistory
from .deadlines import Deadlines

log = logging.getLogger("oh.backend")

ROLES = {"/v1/agent": "agent", "/v1/editor": "editor", "/v1/monitor": "monitor", "/v1/control": "control"}
# What may appear in the log as a request's path: anything else is logged as "<other path>", since
# a client may put a secret there (e.g. the token as a path segment, issue 9 #8).
LOGGABLE_PATHS = frozenset(ROLES) | {"/v1/status", "/v1/health"}
MAX_FRAME = 128 * 1024 * 1024  # a 64 MiB file read, JSON-escaped, must fit
REGISTER_TIMEOUT = 10.0
DEADLINE_GRACE = 5.0
MONITOR_QUEUE = 1000


@dataclass(eq=False)
class Agent:
    agent_id: str
    name: str
    connection: ServerConnection
    tasks: set[asyncio.Task] = field(default_factory=set)
    obs_ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    done: int = 0
    send_timeout: float = 40.0
    workdir: str = ""
    shell: str | None = None  # shared X-OH-Shell key, or None = private shell
    last_command: str | None = None  # repetition control: the last new command and its streak
    repeats: int = 0

    @property
    def context(self) -> AgentContext:
        # Built once (frozen; the agent's name, workdir and shell never change after the handshake):
        # it was one more object per action.
        ctx = self.__dict__.get("_context")
        if ctx is None:
            ctx = self.__dict__["_context"] = AgentContext(self.agent_id, self.name, self.workdir or None, self.shell)
        return ctx

    async def send(self, obs: dict[str, Any]) -> None:
        obs["id"] = next(self.obs_ids)
        if binary.is_binary(obs):  # the agent asked for read encoding "binary"
            # Two fragments (header, the editor's content untouched): no join of the content here.
            await send_bounded(self.connection, binary.parts(obs), self.send_timeout, text=False)
            return
        await send_bounded(self.connection, encode(obs), self.send_timeout)


@dataclass
class BackendConfig:
    workspace: str
    runtime: str = "local"  # "local" | "vscode"
    host: str = "127.0.0.1"
    port: int = 0
    instance_id: str = ""
    editor_timeout: float = 30.0
    action_timeout: float = 300.0  # deadline for an action without its own timeout
    trace_path: Path | None = None
    trace_max_bytes: int = 10 * 1024 * 1024
    allowed_roots: list[str] | None = None  # extra roots besides the workspace (`oh start --allow`)
    write_session: bool = True
    session_dir: Path | None = None
    max_frame: int = MAX_FRAME
    deadline_grace: float = DEADLINE_GRACE
    # Keepalive: a peer that stops reading (or freezes) is dropped after about interval + timeout,
    # which is what bounds a send to it (docs/reliability.md).
    ping_interval: float = 20.0
    ping_timeout: float = 20.0
    # A send to a peer that does not read is abandoned (and the peer dropped) after this long.
    send_timeout: float = 40.0
    # Jobs and repetition control (docs/protocol.md §3.8, §3.10): the settings' defaults; the launcher
    # passes the user's settings as flags (the backend reads no settings itself).
    max_shells: int = 8
    job_retention: float = 3600.0
    repeat_limit: int = 0
    repeat_action: str = "note"
    spool_dir: str | None = None  # background jobs' output (None: a private temporary directory)
    # Proposal mode (docs/protocol.md §3.11): write/edit wait for the user's decision, at most this long.
    review: bool = False
    review_timeout: float = 600.0
    # Pre-auth bounds (backend/guard.py): seconds to complete the upgrade, and the fd budget the
    # caps on connections that have not sent their request yet derive from (None: RLIMIT_NOFILE).
    open_timeout: float = guard.OPEN_TIMEOUT
    fd_budget: int | None = None
    # Git-branch mode (docs/protocol.md §3.12): None = off; else the user's choices (protocol.branch.Plan).
    branch: Plan | None = None
    # Consent (docs/protocol.md §3.13): None = ask for nothing; else the level and the user's rules.
    consent: Any = None  # protocol.consent.Policy
    approval_timeout: float = 600.0


def _fd_soft_limit() -> int | None:
    try:
        import resource
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


class Backend:
    def __init__(self, config: BackendConfig, token: str, editor_token: str | None = None, decider_token: str | None = None) -> None:
        from ..sessions import new_instance_id

        self.config = config
        self.workspace = os.path.realpath(config.workspace)
        self.allowed_roots = agentinfo.effective_roots(self.workspace, config.allowed_roots)
        self.instance_id = config.instance_id or new_instance_id()
        self._token = token
        # The editor leg's own credential, written only to the session file (docs/security.md §2):
        # holding the agent token must not be enough to register as the editor.
        self._editor_token = editor_token or secrets.token_urlsafe(32)
        # The decider's credential (issue 19): approvals and review decisions need it; agents never get it.
        self._decider_token = decider_token or secrets.token_urlsafe(32)
        self._refusals = guard.Throttle(log)
        self.gate: guard.PreAuthGate | None = None
        self._token_gen = 0
        self.registry = EditorRegistry()
        self.correlator: Correlator[None] = Correlator()
        self.deadlines = Deadlines()
        self.trace = TraceWriter(config.trace_path, config.trace_max_bytes)
        self.agents: dict[str, Agent] = {}
        self.monitors: dict[ServerConnection, asyncio.Queue] = {}
        self.history = MonitorHistory()
        self.connections: dict[ServerConnection, int] = {}  # -> token generation it authenticated with
        self._agent_ids = itertools.count(1)
        self.stats = {"done": 0, "errors": 0}
        self.started_at = datetime.now(timezone.utc)
        self._t0 = time.monotonic()
        self.port = config.port
        self.stopping = False
        self._stopped = asyncio.Event()
        self._server = None
        self._flusher: asyncio.Task | None = None
        self.runtime = self._make_runtime()
        if config.branch is not None:
            self.runtime = self._branch_guard(self.runtime, config.branch)
        self.consent = None
        if config.consent is not None:
            self.runtime = self.consent = consentctl.wrap(self, self.runtime, config.consent, config.approval_timeout, config.review)
        self.runtime.on_job_event = self._job_event
        self.proposals = getattr(self.runtime, "proposals", None)  # the local runtime's ProposalQueue in review mode
        if self.proposals is not None:
            self.proposals.on_event = self._proposal_event

    # ------------------------------------------------------------------ lifecycle
    def _make_runtime(self):
        if self.config.runtime == "vscode":
            from ..runtimes.vscode import VscodeRuntime

            return VscodeRuntime(
                self.registry, self.workspace, self.config.editor_timeout, send_timeout=self.config.send_timeout, allowed_roots=self.allowed_roots,
                job_retention=self.config.job_retention, review=self.config.review,
            )
        if self.config.runtime == "local":
            from ..runtimes.local import LocalRuntime

            return LocalRuntime(
                self.workspace, self.allowed_roots, max_shells=self.config.max_shells, job_retention=self.config.job_retention,
                spool_dir=self.config.spool_dir, review=self.config.review, review_timeout=self.config.review_timeout,
                env=consentctl.agent_env() if self.config.consent is not None else None,
            )
        raise ValueError(f"unknown runtime {self.config.runtime!r} (local or vscode)")

    def _branch_guard(self, runtime, plan):
        from ..runtimes.branch import BranchGuard, local_switch

        switch = runtime.branch if self.config.runtime == "vscode" else local_switch(self.workspace)
        guard_ = BranchGuard(runtime, plan, switch)
        def switched(info: dict[str, Any]) -> None:
            log.info("branch mode: %s", info)
            self._emit("branch", **info)

        guard_.on_branch_event = switched
        return guard_

    async def start(self) -> None:
        if not auth.is_loopback_host(self.config.host):
            # Defence in depth: the launcher refuses such a host already. Off loopback, the bearer
            # token would be all that stood between the network and a shell as this user.
            raise ValueError(f"refusing to listen on {self.config.host!r}: not a loopback address (127.0.0.1, ::1 or localhost); oh never listens on the network")
        self.trace.open()
        await self.runtime.start()
        self.gate = guard.PreAuthGate(*guard.pending_caps(self.config.fd_budget or _fd_soft_limit()))
        self._server = await serve(
            self._handle,
            self.config.host,
            self.config.port,
            process_request=self._process_request,
            create_connection=coalescing(guard.gated_connection_class(self.gate)),  # one write per loop iteration
            open_timeout=self.config.open_timeout,
            max_size=self.config.max_frame,
            compression=None,  # loopback: deflate only costs CPU
            ping_interval=self.config.ping_interval,
            ping_timeout=self.config.ping_timeout,
            close_timeout=2,
            server_header=None,
        )
        sock = next(iter(self._server.sockets))
        self.port = sock.getsockname()[1]
        self._flusher = asyncio.create_task(self._flush_loop())
        if self.config.write_session:
            self._write_session()
        log.info("backend %s listening on %s:%s (runtime %s, workspace %s)", self.instance_id, self.config.host, self.port, self.config.runtime, self.workspace)

    def session(self):
        from ..sessions import Session, process_start_time

        return Session(
            instance_id=self.instance_id,
            pid=os.getpid(),
            start_time=process_start_time(os.getpid()) or time.time(),
            host=self.config.host,
            port=self.port,
            runtime=self.config.runtime,
            workspace=self.workspace,
            token=self._token,
            editor_token=self._editor_token,
            decider_token=self._decider_token,
            protocol=PROTOCOL_VERSION,
            oh_version=__version__,
            started_at=self.started_at.isoformat(timespec="seconds"),
            trace=str(self.config.trace_path or ""),
            editor_timeout=self.config.editor_timeout,
            allowed_roots=list(self.allowed_roots),
            review_timeout=self.config.review_timeout if self.config.review else 0.0,
            approval_timeout=self.config.approval_timeout if self.config.consent is not None else 0.0,
        )

    def _write_session(self) -> None:
        from .. import sessions

        sessions.write(self.session(), self.config.session_dir)

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(0.25)
            self.trace.flush()
            self._refusals.flush()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def stop(self, reason: str = "stopped") -> None:
        """Stop accepting, fail pending actions with INTERRUPTED, close sockets, flush the trace."""
        if self.stopping:
            await self._stopped.wait()
            return
        self.stopping = True
        log.info("backend %s shutting down: %s", self.instance_id, reason)
        self._emit("shutting_down", reason=reason)
        if self._server is not None:
            self._server.close(close_connections=False)
        tasks = [t for a in self.agents.values() for t in a.tasks]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=3)
        # All at once: one peer that does not read must not add 2 s per connection to the stop.
        await asyncio.gather(*(self._close_quietly(c, Close.GOING_AWAY, "backend shutting down") for c in list(self.connections)))
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.runtime.close(), 5)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 3)
        if self._flusher is not None:
            self._flusher.cancel()
        self._refusals.flush(force=True)
        self.deadlines.close()
        self.trace.close()
        if self.config.write_session:
            from .. import sessions

            sessions.remove(self.instance_id, self.config.session_dir)
        self._stopped.set()

    # ------------------------------------------------------------------ handshake
    def _process_request(self, connection: ServerConnection, request):
        path = urlsplit(request.path).path
        headers = request.headers
        refusal = auth.check_origin(headers) or auth.check_host(headers, self.port, self.config.host)
        if refusal is None and path == "/v1/health":
            return self._json_response(connection, {"status": "ok", "version": __version__, "protocol": PROTOCOL_VERSION})
        # Each role has one credential: editors the editor token, everyone else the token.
        if refusal is None:
            if path == "/v1/editor":
                refusal = auth.check_editor_auth(headers, self._editor_token)
            elif path == "/v1/control" and auth.token_matches(auth.bearer_token(headers), self._decider_token):
                connection.oh_decider = True  # type: ignore[attr-defined]
            else:
                refusal = auth.check_auth(headers, self._token)
        if refusal is not None:
            status, text = refusal
            route = path if path in LOGGABLE_PATHS else "<other path>"
            self._refusals.log(("refused", int(status), route), logging.INFO, "refused %s %s: %s", route, int(status), text.strip())
            return connection.respond(status, text)
        if path == "/v1/status":
            return self._json_response(connection, self.status())
        if path not in ROLES:
            return connection.respond(HTTPStatus.NOT_FOUND, "Unknown path: use /v1/agent, /v1/editor, /v1/monitor or /v1/control.\n")
        if path == "/v1/agent":
            parsed = agentinfo.parse(headers, self.workspace, self.allowed_roots)
            if isinstance(parsed, tuple):
                log.info("refused agent handshake: %s", parsed[1].strip()[:200])
                return connection.respond(*parsed)
            connection.oh_agent = parsed  # type: ignore[attr-defined]
        # Remember which token generation let this connection in, so a rotation can close it.
        connection.oh_token_gen = self._token_gen  # type: ignore[attr-defined]
        return None

    @property
    def editor_token(self) -> str:
        return self._editor_token

    @property
    def decider_token(self) -> str:
        return self._decider_token

    @staticmethod
    def _json_response(connection: ServerConnection, body: dict[str, Any]):
        response = connection.respond(HTTPStatus.OK, json.dumps(body) + "\n")
        del response.headers["Content-Type"]
        response.headers["Content-Type"] = "application/json"
        return response

    async def _handle(self, connection: ServerConnection) -> None:
        role = ROLES.get(urlsplit(connection.request.path).path)
        gen = getattr(connection, "oh_token_gen", -1)
        if gen < self._token_gen:  # rotated between handshake and here
            await self._close_quietly(connection, Close.TOKEN_ROTATED, "token rotated")
            return
        self.connections[connection] = gen
        try:
            if role == "agent":
                await self._serve_agent(connection)
            elif role == "editor":
                await self._serve_editor(connection)
            elif role == "monitor":
                await self._serve_monitor(connection)
            elif role == "control":
                await self._serve_control(connection)
        except ConnectionClosed:
            pass
        except Exception:  # noqa: BLE001 - one connection's bug must not take the server down
            log.exception("connection handler failed (%s)", role)
        finally:
            self.connections.pop(connection, None)

    # ------------------------------------------------------------------ agents
    async def _serve_agent(self, connection: ServerConnection) -> None:
        headers = getattr(connection, "oh_agent", None) or agentinfo.AgentHeaders("agent", self.workspace, None)
        name = headers.name
        agent = Agent(f"a{next(self._agent_ids)}", name, connection, send_timeout=self.config.send_timeout, workdir=headers.workdir, shell=headers.shell)
        self.agents[agent.agent_id] = agent
        self._emit("agent_connected", agent_id=agent.agent_id, name=name, workdir=agent.workdir, shell=agent.context.shell_key)
        try:
            async for message in connection:
                try:
                    action = parse_action(decode_frame(message))
                    if self.correlator.in_flight(agent.agent_id, action.id):
                        raise ProtocolError(ErrorId.BAD_REQUEST, f"Action id {action.id} is already in flight on this connection; use a new id.", action.id)
                    if self.stopping:
                        raise ProtocolError(ErrorId.INTERRUPTED, "The backend is shutting down.", action.id)
                except ProtocolError as exc:
                    self.stats["errors"] += 1
                    self.trace.record("error", agent=agent.agent_id, error_id=str(exc.error_id), message=exc.message[:200], cause=exc.cause)
                    await agent.send(error_from(exc))
                    continue
                entry = self.correlator.start(agent.agent_id, action.id, action.kind, time.monotonic())
                # The task leaves agent.tasks itself, when _execute ends (no done callback).
                agent.tasks.add(asyncio.create_task(self._execute(agent, action, entry.leg_id)))
        finally:
            self.agents.pop(agent.agent_id, None)
            for task in list(agent.tasks):
                task.cancel()
            if agent.tasks:
                await asyncio.wait(list(agent.tasks), timeout=3)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.runtime.agent_closed(agent.context), 5)
            self._emit("agent_disconnected", agent_id=agent.agent_id, name=name)

    def _deadline(self, action: Action) -> float:
        base = action.timeout if action.timeout is not None else self.config.action_timeout
        if self.config.runtime == "vscode":
            base += self.config.editor_timeout
        if self.config.review and review.is_proposal(action.kind, action.args):
            base += self.config.review_timeout  # the user's decision is part of the action's time
        return base + self.config.deadline_grace

    async def _execute(self, agent: Agent, action: Action, leg_id: int) -> None:
        """Run one action; always ends with exactly one observation to the agent (if it is still there)."""
        task = asyncio.current_task()
        try:
            started = time.monotonic()
            summary = summarize(action)
            # The leg shares the agent's frame (``raw``; no copy here): runtimes read it, and the vscode
            # runtime's forward copies it with the leg id (``with_id``) anyway.
            leg = Action(leg_id, action.kind, action.args, action.timeout, action.raw)
            risk = action.security_risk
            # env values are secrets: monitors and the trace get the variable names only.
            env_names = sorted(action.env) if action.kind == "run" and action.env else None
            # Always emitted, also with no monitor connected: the history keeps it for a view that subscribes later.
            self._emit("action_started", agent_id=agent.agent_id, action_id=leg_id, kind=action.kind, summary=summary, security_risk=risk)
            extra = {k: v for k, v in (("security_risk", risk), ("env_names", env_names)) if v}
            self.trace.record("request", agent=agent.agent_id, action_id=leg_id, agent_action_id=action.id, action=action.kind, summary=summary, **extra)
            cancelled = False
            repeat_note = self._repetition(agent, action)
            deadline = self._deadline(action)
            # The deadline through the shared wheel (backend/deadlines.py), not asyncio.timeout: no timer
            # per action (measured: docs/benchmarks.md §10). It cancels this task at the deadline.
            self.deadlines.add(leg_id, task.get_loop().time() + deadline, task)
            try:
                if repeat_note is not None and self.config.repeat_action == "skip":
                    obs = error_observation(leg_id, ErrorId.REPEATED, repeat_note)
                else:
                    obs = await self.runtime.execute(leg, agent.context)
                    if repeat_note is not None and obs.get("observation") == "run":
                        md = obs["extras"]["metadata"]
                        md["suffix"] = (md.get("suffix") or "") + "\n" + repeat_note
            except asyncio.CancelledError:
                # Our deadline's cancellation, unless someone else (agent gone, shutdown) cancelled too:
                # the same rule as asyncio.timeout's.
                if self.deadlines.expired(leg_id) and task.uncancel() == 0:
                    obs = error_observation(leg_id, ErrorId.TIMEOUT, f"No observation within {deadline:g} s; the action was cancelled.")
                else:
                    cancelled = True
                    obs = error_observation(leg_id, ErrorId.INTERRUPTED, "The backend is shutting down; the action was interrupted." if self.stopping else "The action was cancelled.")
            except Exception as exc:  # noqa: BLE001 - a runtime bug becomes SERVER_ERROR, never a hang
                log.exception("runtime failed on action %s", leg_id)
                obs = error_observation(leg_id, ErrorId.SERVER_ERROR, f"Internal error while executing the action ({type(exc).__name__}); see `oh logs`.")
            else:
                if self.deadlines.expired(leg_id):
                    task.uncancel()  # the runtime answered anyway: our cancellation is spent
            finally:
                self.deadlines.remove(leg_id)
                self.correlator.finish(leg_id)
            obs["cause"] = action.id  # map the executor leg's id back to the agent's
            duration_ms = round((time.monotonic() - started) * 1000, 1)
            outcome = outcome_of(obs)
            exit_code = exit_code_of(obs)
            self.stats["done"] += 1
            if outcome != "ok":
                self.stats["errors"] += 1
            agent.done += 1
            job_id = _job_id_of(action, obs)
            self.trace.record(
                "result" if outcome == "ok" else "error",
                agent=agent.agent_id, action_id=leg_id, agent_action_id=action.id, action=action.kind,
                summary=summary, outcome=outcome, exit_code=exit_code, duration_ms=duration_ms, **extra,
                **({"job_id": job_id} if job_id else {}),
            )
            self._emit(
                "action_finished", agent_id=agent.agent_id, action_id=leg_id, kind=action.kind, summary=summary,
                outcome=outcome, exit_code=exit_code, duration_ms=duration_ms, security_risk=risk,
            )
            if cancelled and not self.stopping:
                return  # the agent is gone; nobody to tell
            if cancelled:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(agent.send(obs), 1)
                return
            await agent.send(obs)
        finally:
            agent.tasks.discard(task)  # here rather than a done callback: one scheduled callback less per action

    def _repetition(self, agent: Agent, action: Action) -> str | None:
        """Repetition control (opt-in, ``repeat_limit``): the note (or skip reason) when ``action``
        repeats the agent's last new command for the N-th time in a row, else None.

        New ``run`` commands count; follow-ups (empty command, ``is_input``) and ``job``/``stat``
        actions are neutral; any other action (a write, an edit, a read) ends the streak."""
        limit = self.config.repeat_limit or 0
        if action.kind == "run" and not action.is_input and action.command.strip():
            if action.command == agent.last_command:
                agent.repeats += 1
            else:
                agent.last_command, agent.repeats = action.command, 1
            if limit and agent.repeats >= limit:
                verb = "was NOT run again" if self.config.repeat_action == "skip" else "ran again"
                return (
                    f"[Note: this exact command has now been sent {agent.repeats} times in a row and {verb} "
                    f"(repeat_limit = {limit}). Its result is unlikely to change: try a different approach.]"
                )
        elif action.kind not in ("run", "job", "stat"):
            agent.last_command, agent.repeats = None, 0
        return None

    def _proposal_event(self, name: str, fields: dict[str, Any]) -> None:
        """A proposal opened or closed (local queue, or an editor's proposal_event frame; §3.11)."""
        # The trace's own `kind` is the record type: the action kind goes in as `action` there.
        self.trace.record(name, **{("action" if k == "kind" else k): v for k, v in fields.items()})
        self._emit(name, **fields)

    def _job_event(self, name: str, job: dict[str, Any]) -> None:
        """A job started or finished (in the local runtime, or reported by an editor)."""
        summary = " ".join(str(job.get("command", "")).split())[:80]
        fields = {"job_id": job.get("job_id"), "agent_id": job.get("agent_id"), "shell": job.get("shell"), "summary": summary}
        if name == "job_finished":
            dur = job.get("duration_s")
            fields.update(state=job.get("state"), exit_code=job.get("exit_code"), duration_ms=round(dur * 1000, 1) if isinstance(dur, (int, float)) else None)
        else:
            fields.update(cwd=job.get("cwd"))
        self.trace.record(name, **fields)
        self._emit(name, **fields)

    # ------------------------------------------------------------------ editors
    async def _serve_editor(self, connection: ServerConnection) -> None:
        try:
            first = await asyncio.wait_for(connection.recv(), REGISTER_TIMEOUT)
            registration = frames.parse_registration(decode_frame(first), self.instance_id)
            self.registry.check_folders(registration.workspace_folders)
        except asyncio.TimeoutError:
            await connection.close(Close.BAD_REGISTRATION, "no register frame")
            return
        except (ProtocolError, frames.RegistrationError) as exc:
            await connection.send(encode(frames.refusal(str(exc.error_id), exc.message)), text=True)
            await connection.close(Close.BAD_REGISTRATION, "bad registration")
            return
        editor = Editor(self.registry.new_id(), registration, connection, time.monotonic())
        self.registry.add(editor)
        await connection.send(encode(frames.registered(
            editor.editor_id, self.instance_id, self.workspace, self.allowed_roots, self.config.max_shells, self.config.job_retention,
            review=self.config.review, review_timeout=self.config.review_timeout,
        )), text=True)
        self._emit("editor_connected", editor=editor.describe())
        log.info("editor %s registered: %s %s %s", editor.editor_id, registration.editor_name, registration.editor_version, registration.workspace_folders)
        reason = "closed"
        try:
            async for message in connection:
                try:
                    if binary.is_binary_frame(message):  # a binary read's answer (protocol/binary.py)
                        obs = binary.unpack(message)
                        content = obs.pop("content")
                        parse_observation(obs)
                        if obs["observation"] != "read":
                            raise ProtocolError(ErrorId.BAD_REQUEST, "Only a read observation may be a binary frame.", obs["cause"])
                        obs["content"] = content
                    else:
                        obj = decode_frame(message)
                        if obj.get("type") == "job_event":  # issue 11: an editor's job started / ended
                            event = frames.parse_job_event(obj)
                            if event is not None and hasattr(self.runtime, "editor_job_event"):
                                self.runtime.editor_job_event(editor, *event)
                            continue
                        if obj.get("type") == "proposal_event":  # §3.11: what awaits review in the editor
                            pevent = frames.parse_proposal_event(obj)
                            if pevent is not None:
                                entry = self.correlator.get(pevent[1]["action_id"])  # whose action it is
                                who = {"agent_id": entry.agent} if entry is not None else {}
                                self._proposal_event(pevent[0], {**pevent[1], **who, "editor_id": editor.editor_id})
                            continue
                        if obj.get("type") == "approval":  # consent (§3.13): the user answered in the editor
                            await connection.send(encode(consentctl.editor_answer(self, obj)), text=True)
                            continue
                        if obj.get("type") is not None:
                            continue  # other control frames from editors are ignored
                        obs = parse_observation(obj)
                except ProtocolError as exc:
                    log.debug("editor %s sent a bad frame: %s", editor.editor_id, exc.message)
                    await connection.send(encode(frames.refusal(str(exc.error_id), exc.message)), text=True)
                    continue
                future = editor.pending.pop(obs["cause"], None)
                if future is not None and not future.done():
                    future.set_result(obs)
        except ConnectionClosed as exc:
            reason = f"connection closed ({exc.rcvd.code if exc.rcvd else 'no close frame'})"
        finally:
            self.registry.remove(editor)
            # Every action this editor owed fails now, not at its deadline.
            for leg_id, future in list(editor.pending.items()):
                if not future.done():
                    future.set_result(
                        error_observation(leg_id, ErrorId.EDITOR_DISCONNECTED, "The editor disconnected while executing the action; it may or may not have run.")
                    )
            editor.pending.clear()
            if hasattr(self.runtime, "editor_gone"):
                self.runtime.editor_gone(editor)  # its running jobs are LOST
            self._emit("editor_disconnected", editor_id=editor.editor_id, reason=reason)
            log.info("editor %s gone: %s", editor.editor_id, reason)

    # ------------------------------------------------------------------ monitors and control
    def _emit(self, event_name: str, /, **fields: Any) -> None:
        self.history.note(event_name, fields)  # for monitors that subscribe later (the snapshot)
        if not self.monitors:
            return
        frame = encode(frames.event(event_name, **fields))
        for conn, queue in list(self.monitors.items()):
            try:
                queue.put_nowait(frame)
            except asyncio.QueueFull:
                # A monitor that cannot keep up is dropped rather than slowing everyone down.
                self.monitors.pop(conn, None)
                asyncio.ensure_future(self._close_quietly(conn, 1013, "monitor too slow"))

    async def _serve_monitor(self, connection: ServerConnection) -> None:
        queue: asyncio.Queue = asyncio.Queue(MONITOR_QUEUE)
        snapshot = {"type": "snapshot", **self.status(), "jobs": self.history.jobs(), "recent": self.history.recent()}
        # Subscribed in the same step the snapshot is taken: an event emitted while the snapshot is
        # being sent is queued behind it, not lost between the two.
        self.monitors[connection] = queue
        try:
            await connection.send(encode(snapshot), text=True)
        except BaseException:
            self.monitors.pop(connection, None)
            raise

        async def drain_incoming() -> None:
            async for _ in connection:  # monitors send nothing meaningful; keep reading for close
                pass

        reader = asyncio.create_task(drain_incoming())
        try:
            while not reader.done():
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, reader}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    if not await send_bounded(connection, getter.result(), self.config.send_timeout):
                        return
                else:
                    getter.cancel()
        finally:
            reader.cancel()
            self.monitors.pop(connection, None)

    async def _serve_control(self, connection: ServerConnection) -> None:
        async for message in connection:
            try:
                kind, obj = frames.parse_control(decode_frame(message))
            except ProtocolError as exc:
                await connection.send(encode(frames.refusal(str(exc.error_id), exc.message)), text=True)
                continue
            if kind == "status":
                await connection.send(encode({"type": "status", **self.status()}), text=True)
            elif kind == "rotate_token":
                closed = await self.rotate_token(obj["token"], keep=connection)
                await connection.send(encode({"type": "ok", "closed": closed}), text=True)
                await connection.close(Close.TOKEN_ROTATED, "token rotated")
                return
            elif kind == "review":
                await connection.send(encode(self._review_request(obj, getattr(connection, "oh_decider", False))), text=True)
            elif kind == "approvals":
                await connection.send(encode(consentctl.handle(self, obj, getattr(connection, "oh_decider", False))), text=True)
            elif kind == "shutdown":
                await connection.send(encode({"type": "ok"}), text=True)
                asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self.stop("shutdown requested")))
                return

    def _review_request(self, obj: dict[str, Any], decider: bool = False) -> dict[str, Any]:
        """``oh review``: list, show, accept, reject the local runtime's proposals (§3.11)."""
        try:
            req = review.parse_review_request(obj)
        except ProtocolError as exc:
            return frames.refusal(str(exc.error_id), exc.message)
        if req.op in ("accept", "reject") and not decider:  # no self-approval (issue 19): the agent token cannot decide
            return frames.refusal(consentctl.FORBIDDEN, consentctl.FORBIDDEN_TEXT)
        queue = self.proposals
        if queue is None:
            if self.config.runtime == "vscode" and self.config.review:
                return frames.refusal("NOT_HERE", "This backend's proposals are reviewed in VS Code (the diff editor and its Accept / Reject), not with `oh review`.")
            return frames.refusal("REVIEW_OFF", "Review mode is off for this backend: start it with `oh start --review` (or set `review = true`).")
        if req.op == "list":
            return {"type": "review", "op": "list", "review_timeout": queue.timeout, "proposals": queue.list()}
        if req.op == "accept" and req.all:
            return {"type": "review", "op": "accept", "results": queue.accept_all()}
        p = queue.find(req.proposal_id or "")
        if p is None:
            return frames.refusal("NO_PROPOSAL", f"No pending proposal {req.proposal_id}: it was decided, timed out or its agent left. `oh review` lists the pending ones.")
        if req.op == "show":
            diff, is_binary = p.diff()
            return {"type": "review", "op": "show", "proposal": {**p.row(), "diff": diff, "binary": is_binary}}
        if req.op == "accept":
            return {"type": "review", "op": "accept", "results": [queue.accept(p.proposal_id)]}
        return {"type": "review", "op": "reject", "results": [queue.reject(p.proposal_id, req.reason)]}

    async def rotate_token(self, new_token: str, keep: ServerConnection | None = None) -> int:
        """New connections need ``new_token``; connections opened with the old one are closed (4001)."""
        self._token = new_token
        self._editor_token = secrets.token_urlsafe(32)  # rotated together (the old one may have leaked with it)
        self._decider_token = secrets.token_urlsafe(32)
        self._token_gen += 1
        if self.config.write_session:
            self._write_session()  # editors re-read the token from here
        stale = [c for c, gen in self.connections.items() if gen < self._token_gen and c is not keep]
        for conn in stale:
            self.connections.pop(conn, None)
        await asyncio.gather(*(self._close_quietly(c, Close.TOKEN_ROTATED, "token rotated") for c in stale))
        self._emit("token_rotated", closed=len(stale))
        log.info("token rotated; %d connection(s) closed", len(stale))
        return len(stale)

    @staticmethod
    async def _close_quietly(conn: ServerConnection, code: int, reason: str) -> None:
        try:
            await asyncio.wait_for(conn.close(code, reason), 2)
        except Exception:  # noqa: BLE001 - a peer that does not read never gets the close frame
            abort(conn)

    def status(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "pid": os.getpid(),
            "host": self.config.host,
            "port": self.port,
            "runtime": self.config.runtime,
            "workspace": self.workspace,
            "allowed_roots": list(self.allowed_roots),
            "started_at": self.started_at.isoformat(timespec="seconds"),
            "uptime_s": round(time.monotonic() - self._t0, 1),
            "oh_version": __version__,
            "protocol": PROTOCOL_VERSION,
            "trace": str(self.config.trace_path or ""),
            "trace_warning": self.trace.warning,
            "editors": [e.describe() for e in self.registry.all()],
            "agents": [
                {"agent_id": a.agent_id, "name": a.name, "workdir": a.workdir, "shell": a.context.shell_key, "pending": len(a.tasks), "done": a.done}
                for a in self.agents.values()
            ],
            "stats": {"done": self.stats["done"], "pending": len(self.correlator), "errors": self.stats["errors"]},
            **({"branch": self.runtime.describe()} if self.config.branch is not None else {}),
            "review": self.config.review,
            **({"consent": self.consent.consent_status()} if self.consent is not None else {}),
            **({"proposals": len(self.proposals.pending)} if self.proposals is not None else {}),
        }


def _job_id_of(action: Action, obs: dict[str, Any]) -> str | None:
    """The job an action concerned (for the trace): a job action's, or a run observation's."""
    if action.kind == "job":
        return action.args.get("job_id")
    if obs.get("observation") == "run":
        jid = (obs.get("extras", {}).get("metadata") or {}).get("job_id")
        return jid if isinstance(jid, str) else None
    return None
