"""The backend: a websockets (asyncio API) server on loopback that routes agents' actions to a runtime.

Thin I/O shell around the pure protocol core (``oh.protocol``). This module is the backend's
lifecycle (start, stop, the session file, status), the handshake (Origin, Host, token; which
credential each path needs) and the path -> handler table; each role lives in its own module:
agents (``agents.py``), editors (``runtimes/editor_link.py``, with the vscode runtime that sends
through it), monitors (``monitors.py``), control (``control.py``). docs/architecture.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import os
import sys
import time
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from .. import PROTOCOL_VERSION, __version__
from ..protocol import progress, review
from ..protocol import sandbox as sandbox_rules
from ..protocol.codes import Close
from ..runtimes import stack
from ..runtimes.choose import RuntimeSettings
from ..runtimes.editor_link import EditorLink, Welcome
from ..runtimes.editors import EditorRegistry
from ..transport import close_quietly
from . import agentinfo, auth, consentctl, guard, historyctl
from .agents import Agents
from .approvalweb import ApprovalWeb
from .control import Control
from .handshake import ROLES, Credentials, Handshake
from .monitors import Monitors
from .options import BackendConfig  # noqa: F401 - imported from here (tests, benchmarks, __main__)
from .remote import Remote, RemoteSettings, ServerHooks, gate_kwargs
from .trace import TraceWriter

log = logging.getLogger("oh.backend")

REGISTER_TIMEOUT = 10.0  # an editor's register frame must arrive within this long


def _fd_soft_limit() -> int | None:
    try:
        import resource
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def _welcome(config: BackendConfig, instance_id: str, workspace: str, roots: list[str]) -> Welcome:
    """What the ``registered`` frame tells every editor about this backend."""
    return Welcome(
        instance_id,
        workspace,
        roots,
        config.max_shells,
        config.job_retention,
        config.review,
        config.review_timeout,
        config.user_shell,
        config.shell_startup_timeout,
        _sandbox_welcome(config),
    )


def _stack_settings(config: BackendConfig, workspace: str, roots: list[str]) -> stack.StackSettings:
    """The runtime stack's settings (runtimes/stack.py) from the backend's."""
    inner = RuntimeSettings(
        workspace,
        roots,
        editor_timeout=config.editor_timeout,
        max_shells=config.max_shells,
        job_retention=config.job_retention,
        spool_dir=config.spool_dir,
        review=config.review,
        review_timeout=config.review_timeout,
        env=consentctl.agent_env() if config.consent is not None else None,
        user_shell=config.user_shell,
        shell_startup_timeout=config.shell_startup_timeout,
        sandbox=config.sandbox,
        sandbox_hidden=config.sandbox_hidden,
    )
    return stack.StackSettings(
        config.runtime,
        inner,
        branch=config.branch,
        consent=config.consent,
        approval_timeout=config.approval_timeout,
        action_timeout=config.action_timeout,
        setup_script=config.setup_script,
    )


def _branch_reporter(emit: Callable[..., None]) -> Callable[[dict[str, Any]], None]:
    def report(info: dict[str, Any]) -> None:  # branch mode switched (or gave up): the log and monitors
        log.info("branch mode: %s", info)
        emit("branch", **info)

    return report


class Backend:
    def __init__(
        self, config: BackendConfig, token: str, editor_token: str | None = None, decider_token: str | None = None
    ) -> None:
        from ..sessions import new_instance_id

        # The sandbox resolved once (absolute paths), for the runtime and for every editor (docs/protocol.md §3.17).
        config = dataclasses.replace(config, sandbox=_resolved_sandbox(config.sandbox))
        self.config = config
        self.workspace = os.path.realpath(config.workspace)
        self.allowed_roots = agentinfo.effective_roots(self.workspace, config.allowed_roots)
        self.instance_id = config.instance_id or new_instance_id()
        self.credentials = Credentials(token, editor_token, decider_token)  # which path needs which: handshake.py
        self.gate: guard.PreAuthGate | None = None
        self.trace = TraceWriter(config.trace_path, config.trace_max_bytes)
        self.connections: dict[ServerConnection, int] = {}  # -> token generation it authenticated with
        self.started_at = datetime.now(timezone.utc)
        self._t0 = time.monotonic()
        self.port = config.port
        self.stopping = False
        self._stopped = asyncio.Event()
        self._server: Server | None = None
        self._flusher: asyncio.Task | None = None
        self._internal_ids = itertools.count(1)
        # issue 28: the Unix socket and share credentials (backend/remote.py), with only what it needs of us
        self.remote = Remote(
            RemoteSettings.of(config, self.workspace),
            ServerHooks(self._handle, lambda: self.port, lambda: self.connections, lambda *a, **k: self._emit(*a, **k)),
        )
        self.handshake = Handshake(self.credentials, self.remote, self.workspace, self.allowed_roots, self.status)
        self.handshake.isolate = config.isolate if config.worktree_root else "off"

        # The roles. Monitors first: everyone else tells them what happens.
        self.monitors = Monitors(self.trace, self.status, config.send_timeout)
        self._emit = self.monitors.emit
        self.history = self.monitors.history
        self.registry = EditorRegistry()
        welcome = _welcome(config, self.instance_id, self.workspace, self.allowed_roots)
        self.editors = EditorLink(self.registry, welcome, config.send_timeout, REGISTER_TIMEOUT)
        self.editors.on_event = self._emit
        self.editors.on_proposal_event = self._editor_proposal_event
        self.historyctl = historyctl.HistoryControl(config, self.workspace)  # issue 29: recorder and undo
        self.editors.on_history = self.historyctl.handle_editor  # §3.15.2: VS Code's undo
        self.historyctl.on_changeset = self.monitors.proposal_event  # §3.15.1: change sets in the live view
        self.historyctl.on_note = self.monitors.shell_note  # issue 39: the inotify fallback, said once
        self._build_stack(config)
        self.agent_desk = Agents(config, self.workspace, self.runtime, self.trace, self._emit, lambda: self.stopping)
        self.agents = self.agent_desk.agents
        self.correlator = self.agent_desk.correlator
        self.deadlines = self.agent_desk.deadlines
        self.stats = self.agent_desk.stats
        self._wire_consent(config)
        self.control = Control(
            self.runtime,
            config.review,
            self.status,
            self.rotate_token,
            self.stop,
            approvals=lambda obj, decider: consentctl.handle(self.consent, obj, decider, self.web),
            history=self.historyctl.handle,
            shares=self.remote.control,
            changesets=historyctl.ChangeSets(self.historyctl, config.review),
            claims=self.stack.arbiter.control if self.stack.arbiter is not None else None,
        )
        # The path -> handler table (the handshake has checked the credential each path needs).
        self.routes: dict[str, Callable[[ServerConnection], Awaitable[None]]] = {
            "/v1/agent": self.agent_desk.serve,
            "/v1/editor": self.editors.serve,
            "/v1/monitor": self.monitors.serve,
            "/v1/control": self.control.serve,
        }

    def _wire_consent(self, config: BackendConfig) -> None:
        """Consent's events to the trace, monitors, editors and the approvals page (issue 40), which also
        counts as someone who can answer when a device is paired or a notifier is set."""
        self.web: ApprovalWeb | None = None  # the approvals page (issue 40): whenever consent is on
        if self.consent is not None:
            guard_ = self.consent
            self.web = web = ApprovalWeb(
                lambda frame: consentctl.handle(guard_, frame, decider=True),
                guard_.approvals.list,
                self._protections,
                config.host,
                config.approvals_port,
                config.approvals_origin,
                config.approval_notify,
            )
            record = consentctl.recorder(self.trace, self._emit, self.monitors.named)
            consentctl.attach(guard_, record, self.deadlines, self.editors, also=web.event)
            self.editors.on_approval = lambda obj: consentctl.editor_answer(self.consent, obj)
            # Who can answer a question now: a monitor (the live view), an editor that decides (VS Code), a
            # paired device or a notifier (issue 40: no headless stall).
            self.consent.can_answer = lambda: (
                bool(self.monitors.queues) or self.editors.can(consentctl.EDITOR_CAPABILITY) or web.reachable()
            )

    def _build_stack(self, config: BackendConfig) -> None:
        """The runtime stack (runtimes/stack.build) and the monitors' hooks into it."""
        self.stack = stack.build(
            _stack_settings(config, self.workspace, self.allowed_roots),
            self.editors,
            stack.StackHooks(
                self._new_internal_id,
                lambda leg: self.correlator.finish(leg),
                _branch_reporter(self._emit),
                # history (issue 29): innermost, so it records what actually ran (consent may refuse, branch switch)
                wrap_inner=self.historyctl.wrap,
            ),
        )
        self.runtime = self.stack.outer
        self.consent = self.stack.consent  # consent (§3.13): around the branch guard, so every route passes it
        # The agent shell's sandbox as the runtime applies it (README "Sandbox"), for `oh status` and the live view.
        self.sandbox = self.runtime.sandbox_view()
        # Installs of `ensure` ask to leave the sandbox only with a consent gate to ask (`oh start` always has
        # one when the shell is sandboxed): without one a request to leave is refused, so installs stay inside.
        self.stack.ensure.installs_leave_sandbox = self.consent is not None and _shell_without_network(self.sandbox)
        self.runtime.on_job_event = self.monitors.job_event
        if self.stack.arbiter is not None:  # issue 37: stale refusals and claims to monitors and the trace
            self.stack.arbiter.on_event = self.monitors.arbiter_event
        self.runtime.on_shell_note = self.monitors.shell_note
        self.proposals = self.runtime.proposals  # the local runtime's ProposalQueue in review mode
        if self.proposals is not None:
            self.proposals.on_event = self.monitors.proposal_event

    # ------------------------------------------------------------------ lifecycle
    def _new_internal_id(self) -> int:
        """A backend-wide leg id for the ensure service's own run/job actions (the agents' correlator)."""
        return self.correlator.start("oh-ensure", next(self._internal_ids), "internal", time.monotonic()).leg_id

    def _editor_proposal_event(self, name: str, fields: dict[str, Any], editor_id: str) -> None:
        owner = self.agent_desk.owner_of(fields["action_id"])  # whose action it is
        who: dict[str, Any] = {"agent_id": owner} if owner is not None else {}
        if name == "proposal_closed":  # who decided (issue 19): the user in the editor, unless it timed out or stopped
            who.update(by=review.decided_by(str(fields.get("decision") or ""), "vscode"), at=time.time())
        self.monitors.proposal_event(name, {**fields, **who, "editor_id": editor_id})
        pump = self.agent_desk.pumps.get(fields["action_id"])
        if name == "proposal_opened" and pump is not None:  # the agent that asked learns it waits (issue 30 #2)
            what = f"{fields.get('kind')} {fields.get('path')}"
            pump(progress.WAITING, **progress.waiting_for_review(None, what, self.config.review_timeout))

    async def start(self) -> None:
        if not auth.is_loopback_host(self.config.host):
            # Defence in depth: the launcher refuses such a host already. Off loopback, the bearer
            # token would be all that stood between the network and a shell as this user.
            raise ValueError(
                f"refusing to listen on {self.config.host!r}: not a loopback address (127.0.0.1, ::1 or "
                "localhost); oh never listens on the network"
            )
        self.trace.open()
        await self.runtime.start()
        self.gate = guard.PreAuthGate(*guard.pending_caps(self.config.fd_budget or _fd_soft_limit()))
        # One write per loop iteration (coalescing), no deflate (loopback: it only costs CPU): remote.gate_kwargs.
        settings = gate_kwargs(self.config, self.gate, self.handshake.process_request)
        self._server = server = await serve(self._handle, self.config.host, self.config.port, **settings)
        sock = next(iter(server.sockets))
        self.port = sock.getsockname()[1]
        await self.remote.start(settings)  # the Unix socket: same handler, handshake and limits
        if self.web is not None:
            await self.web.start()  # the approvals page: its own loopback port (issue 40)
        self._flusher = asyncio.create_task(self._flush_loop())
        if self.config.write_session:
            self._write_session()
        log.info(
            "backend %s listening on %s:%s (runtime %s, workspace %s)",
            self.instance_id,
            self.config.host,
            self.port,
            self.config.runtime,
            self.workspace,
        )

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
            token=self.credentials.token,
            editor_token=self.credentials.editor,
            decider_token=self.credentials.decider,
            protocol=PROTOCOL_VERSION,
            oh_version=__version__,
            started_at=self.started_at.isoformat(timespec="seconds"),
            trace=str(self.config.trace_path or ""),
            editor_timeout=self.config.editor_timeout,
            allowed_roots=list(self.allowed_roots),
            review_timeout=self.config.review_timeout if self.config.review else 0.0,
            approval_timeout=self.config.approval_timeout if self.config.consent is not None else 0.0,
            python=sys.executable,
            socket=str(self.remote.socket_path or ""),
        )

    def _write_session(self) -> None:
        from .. import sessions

        sessions.write(self.session(), self.config.session_dir)

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(0.25)
            self.trace.flush()
            self.handshake.refusals.flush()

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
        self.remote.close()
        if self.web is not None:
            await self.web.stop()
        await self.agent_desk.cancel_all()
        # All at once: one peer that does not read must not add 2 s per connection to the stop.
        await asyncio.gather(
            *(close_quietly(c, Close.GOING_AWAY, "backend shutting down") for c in list(self.connections))
        )
        self.historyctl.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.runtime.close(), 5)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 3)
        await self.remote.wait_closed()
        if self._flusher is not None:
            self._flusher.cancel()
        self.handshake.refusals.flush(force=True)
        self.deadlines.close()
        self.trace.close()
        if self.config.write_session:
            from .. import sessions

            sessions.remove(self.instance_id, self.config.session_dir)
        self._stopped.set()

    @property
    def editor_token(self) -> str:
        return self.credentials.editor

    @property
    def decider_token(self) -> str:
        return self.credentials.decider

    async def _handle(self, connection: ServerConnection) -> None:
        assert connection.request is not None  # the handler runs after the handshake, which read the request
        path = urlsplit(connection.request.path).path
        gen = getattr(connection, "oh_token_gen", -1)
        if gen < self.credentials.generation:  # rotated between handshake and here
            await close_quietly(connection, Close.TOKEN_ROTATED, "token rotated")
            return
        self.connections[connection] = gen
        try:
            handler = self.routes.get(path)
            if handler is not None:
                await handler(connection)
        except ConnectionClosed:
            pass
        except Exception:  # noqa: BLE001 - one connection's bug must not take the server down
            log.exception("connection handler failed (%s)", ROLES.get(path))
        finally:
            self.connections.pop(connection, None)

    async def rotate_token(self, new_token: str, keep: ServerConnection | None = None) -> int:
        """New connections need ``new_token``; connections opened with the old one are closed (4001)."""
        self.credentials.rotate(new_token)  # the editor's and decider's too (they may have leaked with it)
        await self.remote.revoke_all()  # shares end with the token (their connections close below)
        if self.web is not None:
            await self.web.revoke_all()  # and so do the approvals page's devices (issue 40)
        if self.config.write_session:
            self._write_session()  # editors re-read the token from here
        stale = [c for c, gen in self.connections.items() if gen < self.credentials.generation and c is not keep]
        for conn in stale:
            self.connections.pop(conn, None)
        await asyncio.gather(*(close_quietly(c, Close.TOKEN_ROTATED, "token rotated") for c in stale))
        self._emit("token_rotated", closed=len(stale))
        log.info("token rotated; %d connection(s) closed", len(stale))
        return len(stale)

    def _protections(self) -> dict[str, str]:
        """What the approvals page lists under "Protections in force" (issue 40)."""
        c = self.consent
        box = self.sandbox.status() if self.sandbox is not None else {}
        return {
            "consent": f"{c.policy.level}, {len(c.policy.rules)} rule(s), {c.approvals.timeout:g} s to answer"
            if c is not None
            else "off",
            "sandbox": ("confined" if box.get("confined") else "not confined") if box else "none (an editor's shell)",
            "history": "on" if self.config.history_dir else "off",
            "review": "on" if self.config.review else "off",
        }

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
            **({"editor_refused": self.editors.refused} if self.editors.refused else {}),
            "agents": self.agent_desk.describe(),
            "stats": {"done": self.stats["done"], "pending": len(self.correlator), "errors": self.stats["errors"]},
            **({"branch": self.stack.branch.describe()} if self.stack.branch is not None else {}),
            **({"setup": dict(self.stack.ensure.setup_state)} if self.stack.ensure.setup_state.get("script") else {}),
            "review": self.config.review,
            "history": self.historyctl.status(),
            **({"sandbox": self.sandbox.status()} if self.sandbox is not None else {}),
            **({"consent": self.consent.consent_status()} if self.consent is not None else {}),
            **({"proposals": len(self.proposals.pending)} if self.proposals is not None else {}),
            **({"claims": self.stack.arbiter.describe_claims()} if self.stack.arbiter is not None else {}),
            **self.remote.status(),
            **({"approvals_page": self.web.site.url()} if self.web is not None and self.web.port else {}),
        }


def _shell_without_network(sandbox: Any) -> bool:
    """Whether the agent's shell is sandboxed with the network off, as the runtime's sandbox says
    (``Runtime.sandbox_view``: the local runtime's, or the one every editor's engine host is sent)."""
    return sandbox is not None and bool(sandbox.status()["confined"] and not sandbox.spec.network)


def _resolved_sandbox(spec: Any) -> Any:
    """The settings' sandbox resolved once (``protocol.sandbox.resolve``: absolute paths); None stays None
    (an in-process backend without one: the runtime's own default)."""
    return None if spec is None else sandbox_rules.resolve(spec, os.path.expanduser("~"))


def _sandbox_welcome(config: BackendConfig) -> dict[str, Any] | None:
    """The resolved sandbox an editor's engine host applies as it is (docs/protocol.md §3.17); None: its own
    default (a hand-made in-process backend without one)."""
    if config.sandbox is None:
        return None
    return sandbox_rules.to_wire(config.sandbox, tuple(config.sandbox_hidden))
