"""The agent role (``/v1/agent``): read an agent's actions, run each under its deadline, answer
with exactly one observation per action, and tell monitors and the trace what happened."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from websockets.asyncio.server import ServerConnection

from ..protocol import binary, budget, progress, repetition, review
from ..protocol.correlation import Correlator
from ..protocol.errors import ErrorId, ProtocolError
from ..protocol.events import (
    COMMAND_SUMMARY_LIMIT,
    Action,
    decode_frame,
    encode,
    error_from,
    error_observation,
    exit_code_of,
    outcome_of,
    parse_action,
    summarize,
)
from ..runtimes.base import AgentContext, Runtime
from ..text.fmt import timeout_of
from ..transport import send_bounded
from . import agentinfo
from .deadlines import Deadlines
from .flow import Flow, obs_size, read_size
from .options import BackendConfig
from .trace import TraceWriter

log = logging.getLogger("oh.backend")


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
    streak: repetition.Streak = field(default_factory=repetition.Streak)  # repetition control
    flow: Flow = field(default_factory=Flow)  # in-flight actions and unsent output (backend/flow.py)
    pathmap: Any = None  # protocol.pathmap.PathMap of its share (issue 28): paths in and out rewritten
    worktree: dict[str, str] | None = None  # its own git worktree (issue 37): {"path", "branch", "workspace"}

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
        if self.pathmap:
            obs = self.pathmap.observation_out(obs)
        if binary.is_binary(obs):  # the agent asked for read encoding "binary"
            # Two fragments (header, the editor's content untouched): no join of the content here.
            await send_bounded(self.connection, binary.parts(obs), self.send_timeout, text=False)
            return
        await send_bounded(self.connection, encode(obs), self.send_timeout)


class Progress:
    """The progress frames of one action that asked for them (protocol/progress.py), sent in order and
    before its observation (``flush``). Consecutive output is joined into one frame per send; unsent
    output beyond ``progress.MAX_UNSENT`` is dropped and the next output frame says how much."""

    def __init__(self, agent: Agent, cause: int, events: frozenset[str]) -> None:
        self.agent = agent
        self.cause = cause
        self.events = events  # the ones the action asked for
        self.queue: list[dict[str, Any]] = []
        self.unsent = 0
        self.dropped = 0
        self.task: asyncio.Task | None = None
        self.closed = False  # the observation went out: a late report (a command's output) is not sent

    def __call__(self, event: str, **fields: Any) -> None:
        if self.closed or event not in self.events:
            return
        if event == progress.OUTPUT:
            text = progress.terminal_safe(fields.get("text") or "")
            if not text:
                return
            if self.unsent + len(text) > progress.MAX_UNSENT:
                self.dropped += len(text)
                return
            self.unsent += len(text)
            last = self.queue[-1] if self.queue else None
            if last is not None and last["event"] == progress.OUTPUT:
                last["text"] += text
            else:
                self.queue.append(progress.frame(self.cause, event, text=text))
        else:
            self.queue.append(progress.frame(self.cause, event, **fields))
        if self.task is None:
            self.task = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        try:
            while self.queue:
                frame = self.queue.pop(0)
                if frame["event"] == progress.OUTPUT:
                    self.unsent -= len(frame["text"])
                    if self.dropped:
                        frame["dropped"], self.dropped = self.dropped, 0
                if not await send_bounded(self.agent.connection, encode(frame), self.agent.send_timeout):
                    self.queue.clear()
                    return
        finally:
            self.task = None

    async def flush(self) -> None:
        """Every frame reported so far is sent (the observation follows them)."""
        while self.task is not None:
            await asyncio.shield(self.task)

    def close(self) -> None:
        self.closed = True
        self.queue.clear()
        if self.task is not None:
            self.task.cancel()


class Agents:
    """Connected agents and their actions in flight."""

    def __init__(
        self,
        config: BackendConfig,
        workspace: str,
        runtime: Runtime,
        trace: TraceWriter,
        emit: Callable[..., None],
        stopping: Callable[[], bool],
    ) -> None:
        self.config = config
        self.workspace = workspace
        self.runtime = runtime
        self.trace = trace
        self._emit = emit
        self._stopping = stopping
        self.agents: dict[str, Agent] = {}
        self.correlator: Correlator[None] = Correlator()
        self.deadlines = Deadlines()
        self.stats = {"done": 0, "errors": 0}
        self._ids = itertools.count(1)
        self.pumps: dict[int, Progress] = {}  # leg id -> the progress frames of an action that asked for them
        self._worktree_lock = asyncio.Lock()  # issue 37: worktrees are found or made one at a time

    def describe(self) -> list[dict[str, Any]]:
        """The agents as `oh status` lists them."""
        return [
            {
                "agent_id": a.agent_id,
                "name": a.name,
                "workdir": a.workdir,
                "shell": a.context.shell_key,
                "pending": len(a.tasks),
                "done": a.done,
                **({"worktree": a.worktree} if a.worktree else {}),
            }
            for a in self.agents.values()
        ]

    def owner_of(self, leg_id: int) -> str | None:
        """The agent whose action has the executor leg id ``leg_id`` (while it is in flight)."""
        entry = self.correlator.get(leg_id)
        return str(entry.agent) if entry is not None else None  # agents are keyed by their id (a str)

    async def cancel_all(self) -> None:
        """Shutdown: cancel every action in flight (each still answers INTERRUPTED), at most 3 s."""
        tasks = [t for a in self.agents.values() for t in a.tasks]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=3)

    async def serve(self, connection: ServerConnection) -> None:
        headers = getattr(connection, "oh_agent", None) or agentinfo.AgentHeaders("agent", self.workspace, None)
        name = headers.name
        agent = Agent(
            f"a{next(self._ids)}",
            name,
            connection,
            send_timeout=self.config.send_timeout,
            workdir=headers.workdir,
            shell=headers.shell,
            flow=Flow(self.config.max_in_flight, self.config.max_output),
            pathmap=headers.share.pathmap if headers.share is not None else None,
        )
        if headers.isolate and not await self._isolate(agent):
            return
        self.agents[agent.agent_id] = agent
        self._emit(
            "agent_connected",
            agent_id=agent.agent_id,
            name=name,
            workdir=agent.workdir,
            shell=agent.context.shell_key,
            **({"share_id": headers.share.share_id, "where": headers.share.where} if headers.share is not None else {}),
            **({"worktree": agent.worktree} if agent.worktree else {}),
        )
        try:
            async for message in connection:
                try:
                    frame = decode_frame(message)
                    action = parse_action(agent.pathmap.action_in(frame) if agent.pathmap else frame)
                    del message  # not kept (a 40 MiB write's frame) until the next one arrives
                    if self.correlator.in_flight(agent.agent_id, action.id):
                        raise ProtocolError(
                            ErrorId.BAD_REQUEST,
                            f"Action id {action.id} is already in flight on this connection; use a new id.",
                            action.id,
                        )
                    if self._stopping():
                        raise ProtocolError(ErrorId.INTERRUPTED, "The backend is shutting down.", action.id)
                    if agent.flow.full():
                        raise ProtocolError(
                            ErrorId.BUSY,
                            (
                                f"This connection already has {agent.flow.max_in_flight} actions in flight (the limit "
                                "per connection); this one was not executed. Wait for some answers, then send it "
                                "again."
                            ),
                            action.id,
                        )
                except ProtocolError as exc:
                    self.stats["errors"] += 1
                    self.trace.record(
                        "error",
                        agent=agent.agent_id,
                        agent_name=agent.name,
                        error_id=str(exc.error_id),
                        message=exc.message[:200],
                        cause=exc.cause,
                    )
                    await agent.send(error_from(exc))
                    continue
                entry = self.correlator.start(agent.agent_id, action.id, action.kind, time.monotonic())
                # The task leaves agent.tasks itself, when _execute ends (no done callback).
                agent.flow.started()
                agent.tasks.add(asyncio.create_task(self._execute(agent, action, entry.leg_id)))
                if not agent.flow.admits_frames():
                    await agent.flow.wait_for_room()  # backpressure: this agent's next frames wait in its socket
        finally:
            self.agents.pop(agent.agent_id, None)
            for task in list(agent.tasks):
                task.cancel()
            if agent.tasks:
                await asyncio.wait(list(agent.tasks), timeout=3)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.runtime.agent_closed(agent.context), 5)
            self._emit("agent_disconnected", agent_id=agent.agent_id, name=name)

    async def _isolate(self, agent: Agent) -> bool:
        """Give ``agent`` a git worktree of its own (issue 37, docs/protocol.md §3.19): a new branch checked out
        under the worktree root (an allowed root), its working directory and every path it sends mapped from
        the workspace into it and back (as a share's path map does). False (the connection closed with the
        reason) when git cannot make one."""
        from .. import gitrepo
        from ..protocol.pathmap import MapError, PathMap

        slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in agent.name.lower()).strip("-")[:40]
        try:
            top = await asyncio.to_thread(gitrepo.toplevel, self.workspace)
            async with self._worktree_lock:  # two connections of one agent at once: one worktree, made once
                path, branch = await asyncio.to_thread(
                    gitrepo.add_worktree, self.workspace, str(self.config.worktree_root), slug or "agent"
                )
            mapped = os.path.normpath(os.path.join(path, os.path.relpath(self.workspace, top)))
            into = PathMap([(self.workspace, mapped)])
            pairs = [(self.workspace, mapped)]
            if agent.pathmap:  # a share's agent: its prefixes now lead into the worktree
                pairs = [(a, into.to_host(h)) for a, h in agent.pathmap.pairs] + pairs
            agent.pathmap = PathMap(pairs)
        except (gitrepo.GitError, MapError) as exc:
            log.warning("no worktree for agent %s: %s", agent.name, exc)
            reason = f"oh: no worktree: {exc}".encode()[:120].decode("utf-8", "ignore")  # a close reason: ≤ 123 bytes
            with contextlib.suppress(Exception):
                await agent.connection.close(1011, reason)
            return False
        agent.workdir = into.to_host(agent.workdir or self.workspace)
        agent.worktree = {"path": path, "branch": branch, "workspace": mapped}
        return True

    def _deadline(self, action: Action) -> float:
        c = self.config
        return budget.action_deadline(
            action.timeout,
            c.action_timeout,
            runtime_allowance=self.runtime.deadline_allowance(action),
            review_time=c.review_timeout if c.review and review.is_proposal(action.kind, action.args) else 0.0,
            grace=c.deadline_grace,
        )

    async def _execute(self, agent: Agent, action: Action, leg_id: int) -> None:
        """Run one action; always ends with exactly one observation to the agent (if it is still there)."""
        task = asyncio.current_task()
        assert task is not None
        reserved = 0  # output bytes this action holds (backend/flow.py)
        # Progress frames (protocol/progress.py) when the agent asked: runtimes report through the leg's
        # ``Action.on_progress`` (``runtimes.base.report``), set here only.
        events = progress.wanted(action.raw)
        pump = Progress(agent, action.id, events) if events else None
        if pump is not None:
            self.pumps[leg_id] = pump
        try:
            started = time.monotonic()
            summary, extra = self._announce(agent, action, leg_id)
            obs, cancelled, reserved = await self._run_leg(agent, action, leg_id, task, pump)
            obs["cause"] = action.id  # map the executor leg's id back to the agent's
            self._record_end(agent, action, leg_id, obs, summary, extra, started)
            if pump is not None:
                if cancelled:
                    pump.close()
                else:
                    with contextlib.suppress(Exception):
                        await pump.flush()  # its frames come before the observation
                    pump.closed = True
            if cancelled and not self._stopping():
                return  # the agent is gone; nobody to tell
            if cancelled:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(agent.send(obs), 1)
                return
            size = obs_size(obs)
            if reserved:
                agent.flow.add(max(size - reserved, 0))
                reserved = max(size, reserved)
            else:
                if not agent.flow.try_reserve(size):
                    await agent.flow.reserve(size)  # waits (holding only this observation) while the output is full
                reserved = size
            await agent.send(obs)
        finally:
            agent.tasks.discard(task)  # here rather than a done callback: one scheduled callback less per action
            if pump is not None:
                pump.close()
                self.pumps.pop(leg_id, None)
            agent.flow.release(reserved)
            agent.flow.finished()

    def _announce(self, agent: Agent, action: Action, leg_id: int) -> tuple[str, dict[str, Any]]:
        """``action_started`` to monitors and the trace's request line: (the summary, the trace's extra fields)."""
        summary = summarize(action, COMMAND_SUMMARY_LIMIT)
        risk = action.security_risk
        # env values are secrets: monitors and the trace get the variable names only.
        env_names = sorted(action.env) if action.kind == "run" and action.env else None
        # Always emitted, also with no monitor connected: the history keeps it for a view that subscribes later.
        self._emit("action_started", **_event_head(agent, action, leg_id, summary), security_risk=risk)
        extra = {k: v for k, v in (("security_risk", risk), ("env_names", env_names)) if v}
        self.trace.record("request", **_trace_head(agent, action, leg_id, summary), **extra)
        return summary, extra

    async def _run_leg(
        self, agent: Agent, action: Action, leg_id: int, task: asyncio.Task, pump: Progress | None
    ) -> tuple[dict[str, Any], bool, int]:
        """The runtime's answer under the action's deadline: (observation, cancelled, output bytes reserved)."""
        # The leg shares the agent's frame (``raw``; no copy here): runtimes read it, and the vscode
        # runtime's forward copies it with the leg id (``with_id``) anyway.
        leg = Action(leg_id, action.kind, action.args, action.timeout, action.raw, on_progress=pump)
        cancelled, reserved = False, 0
        repeat_note = repetition.step(agent.streak, action, self.config.repeat_limit or 0, self.config.repeat_action)
        deadline = self._deadline(action)
        # The deadline through the shared wheel (backend/deadlines.py), not asyncio.timeout: no timer
        # per action (measured: docs/benchmarks.md §10). It cancels this task at the deadline.
        self.deadlines.add(leg_id, task.get_loop().time() + deadline, task)
        try:
            if repeat_note is not None and self.config.repeat_action == "skip":
                obs = error_observation(leg_id, ErrorId.REPEATED, repeat_note)
            else:
                # A read's size before it runs, when others of this connection are in flight too (alone,
                # its answer is reserved after it ran, as any other's): a stat, ~2 % of an action's CPU.
                if (
                    action.kind == "read"
                    and agent.flow.in_flight > 1
                    and (est := read_size(leg, agent.workdir or self.workspace))
                ):
                    if not agent.flow.try_reserve(est):
                        await agent.flow.reserve(est)  # its wait counts toward the action's deadline
                    reserved = est
                obs = await self.runtime.execute(leg, agent.context)
                if repeat_note is not None and obs.get("observation") == "run":
                    md = obs["extras"]["metadata"]
                    md["suffix"] = (md.get("suffix") or "") + "\n" + repeat_note
        except asyncio.CancelledError:
            # Our deadline's cancellation, unless someone else (agent gone, shutdown) cancelled too:
            # the same rule as asyncio.timeout's.
            if self.deadlines.expired(leg_id) and task.uncancel() == 0:
                obs = error_observation(
                    leg_id, ErrorId.TIMEOUT, f"No observation within {deadline:g} s; the action was cancelled."
                )
            else:
                cancelled = True
                stopping = self._stopping()
                why = (
                    "The backend is shutting down; the action was interrupted."
                    if stopping
                    else "The action was cancelled."
                )
                obs = error_observation(leg_id, ErrorId.INTERRUPTED, why)
        except Exception as exc:  # noqa: BLE001 - a runtime bug becomes SERVER_ERROR, never a hang
            log.exception("runtime failed on action %s", leg_id)
            obs = error_observation(
                leg_id,
                ErrorId.SERVER_ERROR,
                f"Internal error while executing the action ({type(exc).__name__}); see `oh logs`.",
            )
        else:
            if self.deadlines.expired(leg_id):
                task.uncancel()  # the runtime answered anyway: our cancellation is spent
        finally:
            self.deadlines.remove(leg_id)
            self.correlator.finish(leg_id)
        return obs, cancelled, reserved

    def _record_end(
        self,
        agent: Agent,
        action: Action,
        leg_id: int,
        obs: dict[str, Any],
        summary: str,
        extra: dict[str, Any],
        started: float,
    ) -> None:
        """The counts, the trace's result line and ``action_finished`` to monitors."""
        duration_ms = round((time.monotonic() - started) * 1000, 1)
        outcome = outcome_of(obs)
        exit_code = exit_code_of(obs)
        self.stats["done"] += 1
        if outcome != "ok":
            self.stats["errors"] += 1
        agent.done += 1
        job_id = _job_id_of(action, obs)
        # blind: a write/edit of a file this agent never read (§3.18), marked in the trace and the live view
        blind = outcome == "ok" and bool((obs.get("extras") or {}).get("blind"))
        changed = (obs.get("extras") or {}).get("changed")  # a run's +N −M in K files (history, §3.15)
        ended = {
            k: v
            for k, v in (("job_id", job_id), ("timed_out", timeout_of(obs)), ("blind", blind), ("changed", changed))
            if v
        }
        self.trace.record(
            "result" if outcome == "ok" else "error",
            **_trace_head(agent, action, leg_id, summary),
            outcome=outcome,
            exit_code=exit_code,
            duration_ms=duration_ms,
            **extra,
            **ended,
        )
        self._emit(
            "action_finished",
            **_event_head(agent, action, leg_id, summary),
            outcome=outcome,
            exit_code=exit_code,
            duration_ms=duration_ms,
            security_risk=extra.get("security_risk"),
            **ended,
        )


def _trace_head(agent: Agent, action: Action, leg_id: int, summary: str) -> dict[str, Any]:
    """The fields that open an action's request and result lines in the trace: who, which action, what."""
    return {
        "agent": agent.agent_id,
        "agent_name": agent.name,
        "action_id": leg_id,
        "agent_action_id": action.id,
        "action": action.kind,
        "summary": summary,
    }


def _event_head(agent: Agent, action: Action, leg_id: int, summary: str) -> dict[str, Any]:
    """The fields that open ``action_started`` and ``action_finished`` to monitors."""
    return {"agent_id": agent.agent_id, "action_id": leg_id, "kind": action.kind, "summary": summary}


def _job_id_of(action: Action, obs: dict[str, Any]) -> str | None:
    """The job an action concerned (for the trace): a job action's, or a run observation's."""
    if action.kind == "job":
        return action.args.get("job_id")
    if obs.get("observation") == "run":
        jid = (obs.get("extras", {}).get("metadata") or {}).get("job_id")
        return jid if isinstance(jid, str) else None
    return None
