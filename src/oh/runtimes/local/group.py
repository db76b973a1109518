"""The shells of one agent shell key: the main shell, extra shells, background jobs (docs/protocol.md §3.8).

- A new command goes to the main shell when it is idle (its ``cd``/exports persist there). When the
  main shell is busy it runs in an **extra shell**, started in the main shell's current directory
  with the main shell's exports (the snapshot it writes after each command), up to ``max_shells``
  shells in all; beyond that it waits, in arrival order, for a shell to come free (a bounded queue;
  the wait counts toward its timeout; ``BUSY`` only when the queue is full: protocol/shellqueue.py).
  An extra shell serves one command and is killed when it ends.
- Every command gets an id (``j<N>``). Observations of a command in an extra shell, of a background
  job, or of a command still running carry it as ``metadata.job_id``. Follow-ups (empty command,
  ``is_input``) name it with ``args.job_id``; without it they go to the most recently started
  foreground command still running (so the SDK's "soft timeout, then empty command" flow continues
  the same command).
- ``args.background``: the command starts in an extra shell and the observation returns at once;
  ``job`` actions (list, poll, wait, output, cancel) follow it (jobs.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
from typing import TYPE_CHECKING, Any, Protocol

from ...protocol import shellqueue
from ...protocol.errors import ErrorId
from ...protocol.events import Action, error_observation, job_observation, run_observation
from ..escalation import network_only
from .command import Command
from .exports import export_script
from .jobs import (
    CANCEL_GRACE,
    CANCELLED,
    FAILED,
    LOST,
    MAX_FINISHED,
    OUTPUT_LIMIT,
    OUTPUT_MAX,
    POLL_TAIL,
    RUNNING,
    SUCCEEDED,
    WAIT_TAIL,
    Job,
    Spool,
    env_fingerprint,
)
from .terminal import Terminal, _identity

if TYPE_CHECKING:
    from ..base import AgentContext


class ShellHost(Protocol):
    """What a shell group needs from the runtime that owns it (``LocalRuntime``): its limits, new
    terminals and job ids, and where job events go. The group does not import the runtime."""

    max_shells: int
    max_wait: float
    queue_limit: int
    job_retention: float
    spool_cap: int

    def new_terminal(
        self,
        cwd: str,
        *,
        sandboxed: bool,
        network: bool = False,
        env_snapshot: str = "",
        init_script: str = "",
        oneshot: bool = False,
        notes_said: set[str] | None = None,
    ) -> Terminal: ...

    def new_job_id(self, action: Action | None = None) -> str: ...

    def spool_path(self, job_id: str) -> str: ...

    def job_event(self, name: str, job: Any) -> None: ...


class ShellGroup:
    def __init__(self, rt: ShellHost, key: str, main: Terminal) -> None:
        self.rt = rt
        self.key = key
        self.main = main
        self.extras: dict[str, Terminal] = {}  # job id -> the extra shell running it
        self.jobs: dict[str, Job] = {}  # background jobs (running and recently finished)
        self._tasks: set[asyncio.Task] = set()
        self.closed = False
        self._queue: list[object] = []  # runs waiting for a free shell, in arrival order
        self._free = asyncio.Event()  # set when a shell may have come free

    def _notify(self) -> None:
        self._free.set()

    async def _notify_when(self, cmd) -> None:
        await cmd.finished.wait()
        self._notify()

    def _watch_main(self) -> None:
        """Tell the queue when the main shell's command ends (now, or later: a soft timeout)."""
        cmd = self.main.running
        if cmd is None:
            self._notify()
        elif self._queue:
            self._spawn(self._notify_when(cmd))

    def _has_room(self) -> bool:
        return self.main.idle or self._shells_in_use() < self.rt.max_shells

    async def _wait_for_shell(self, action: Action) -> tuple[Action, float] | dict[str, Any]:
        """Queue ``action`` until it is first in line and a shell is free: (the action with what is left
        of its timeout, seconds waited), or the TIMEOUT observation when its time ran out first."""
        token = object()
        self._queue.append(token)
        if self.main.running is not None:
            self._spawn(self._notify_when(self.main.running))
        t0 = time.monotonic()
        limit = action.timeout if action.timeout is not None else self.rt.max_wait
        try:
            while not (self._queue[0] is token and self._has_room()):
                remaining = limit - (time.monotonic() - t0)
                if remaining <= 0:
                    return error_observation(
                        action.id,
                        ErrorId.TIMEOUT,
                        shellqueue.waited_out_message(action.command, time.monotonic() - t0, self.rt.max_shells),
                    )
                self._free.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._free.wait(), remaining)
                if self.closed:
                    return error_observation(
                        action.id,
                        ErrorId.INTERRUPTED,
                        "The agent's shells were closed while this command waited for one; it was NOT executed.",
                    )
        finally:
            self._queue.remove(token)
            self._notify()  # the next in line looks again
        waited = time.monotonic() - t0
        # replace, not a new Action: what the backend and the consent gate set (progress, consent) stays
        return dataclasses.replace(action, timeout=shellqueue.left(action.timeout, waited)), waited

    # ------------------------------------------------------------------ helpers
    def _shells_in_use(self) -> int:
        return 1 + len(self.extras)

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _new_extra(self, action: Action) -> Terminal:
        """A shell started where the main one is, for ``action``: its current directory and its exports; outside
        the sandbox only when the consent gate allowed this very action to leave it (``Action.unsandboxed``)."""
        cwd = self.main._cwd()
        if not os.path.isdir(cwd):
            cwd = self.main.workspace
        # Allowed the network alone (args.sandbox "network"): the same sandbox with the network on.
        network = action.unsandboxed and network_only(action)
        if action.unsandboxed:
            # The approved one-shot (oneshot.py): a clean shell oh starts, in files of its own; nothing of the
            # agent's shell (exports, functions, aliases, traps, files it can write) rides along.
            return self.rt.new_terminal(
                cwd, sandboxed=network, network=network, oneshot=True, notes_said=self.main.notes_said
            )
        init = ""
        exports = self.main.shell.exports if self.main.shell is not None else ""
        if exports:
            # Parsed from the main shell's `export -p` snapshot, never run as it is: the confined agent can write
            # that file (sent through the command pipe, never argv; values may be secrets).
            init = export_script(exports, cwd)
        return self.rt.new_terminal(cwd, sandboxed=True, init_script=init, notes_said=self.main.notes_said)

    def _running_foreground(self) -> list[tuple[float, str, Terminal]]:
        found = []
        cmd = self.main.running
        # a foreground command kept as a job (``_keep``: its `oh run` was Ctrl-C'd) is listed once, as the job
        if cmd is not None and not cmd.internal and cmd.job_id and cmd.job_id not in self.jobs:
            found.append((cmd.started, cmd.job_id, self.main))
        for jid, term in self.extras.items():
            cmd = term.running
            if cmd is not None and not cmd.internal and jid not in self.jobs:
                found.append((cmd.started, jid, term))
        return sorted(found)

    def _find_running(self, jid: str) -> Terminal | None:
        cmd = self.main.running
        if cmd is not None and cmd.job_id == jid:
            return self.main
        term = self.extras.get(jid)
        if term is not None and term.running is not None:
            return term
        return None

    @staticmethod
    def _tag(obs: dict[str, Any], jid: str, *, prefix: str = "", suffix: str = "") -> dict[str, Any]:
        if obs.get("observation") != "run":
            return obs
        md = obs["extras"]["metadata"]
        # CmdOutputMetadata (OpenHands) is a pydantic model that ignores unknown keys: still decodable.
        md["job_id"] = jid
        if prefix:
            md["prefix"] = prefix + (md.get("prefix") or "")
        if suffix:
            md["suffix"] = (md.get("suffix") or "") + suffix
        return obs

    def _still_running_note(self, jid: str) -> str:
        return f'\n[This command is {jid}: when several commands run, name it with args.job_id "{jid}" in follow-ups.]'

    # ------------------------------------------------------------------ run
    async def run(self, action: Action, cwd: str | None, ctx: "AgentContext") -> dict[str, Any]:
        args = action.args
        jid = args.get("job_id")
        follow_up = action.is_input or (action.command.strip() == "" and not action.reset)
        if follow_up:
            return await self._follow_up(action, jid)
        if jid:
            return error_observation(
                action.id,
                ErrorId.BAD_REQUEST,
                (
                    "args.job_id names the running command an empty command or is_input belongs to; a new command "
                    "takes none (it gets its own id)."
                ),
            )
        if args.get("background"):
            return await self._start_job(action, cwd, ctx)
        if action.reset or (self.main.idle and not self._queue):
            return await self._run_main(action, cwd, agent_id=ctx.id)
        if args.get("exclusive"):
            return self._main_busy(action)
        verdict = shellqueue.place(self._shells_in_use(), self.rt.max_shells, len(self._queue), self.rt.queue_limit)
        if verdict == "busy":
            return error_observation(
                action.id,
                ErrorId.BUSY,
                shellqueue.queue_full_message(
                    action.command, self._shells_in_use(), self.rt.max_shells, len(self._queue)
                ),
            )
        note = ""
        if verdict == "wait":
            got = await self._wait_for_shell(action)
            if isinstance(got, dict):
                return got
            action, waited = got
            note = (
                f"[This command waited {waited:.1f} s for a free shell: {self.rt.max_shells} (max_shells) were busy.]\n"
            )
            if self.main.idle:
                return await self._run_main(action, cwd, note, agent_id=ctx.id)
        return await self._run_extra(action, cwd, note, agent_id=ctx.id)

    async def _run_main(self, action: Action, cwd: str | None, note: str = "", *, agent_id: str = "") -> dict[str, Any]:
        new_id = self.rt.new_job_id(action)
        try:
            obs = await self.main.run(action, cwd, job_id=new_id)
        except asyncio.CancelledError:
            cmd = self.main.running
            if cmd is not None and cmd.job_id == new_id:
                self._keep(new_id, self.main, cmd, agent_id)
            raise
        finally:
            self._watch_main()
        cmd = self.main.running
        if cmd is not None and cmd.job_id == new_id:
            self._tag(obs, new_id, suffix=self._still_running_note(new_id))
        if note and obs.get("observation") == "run":
            md = obs["extras"]["metadata"]
            md["prefix"] = note + (md.get("prefix") or "")
        return obs

    def _main_busy(self, action: Action) -> dict[str, Any]:
        """``args.exclusive``: the agent wants one shell, as the OpenHands SDK's terminal has (a new command
        while one runs is an error it sees), not an extra shell."""
        return error_observation(
            action.id,
            ErrorId.BUSY,
            (
                f'Your command "{action.command[:200]}" was NOT executed: the previous command is still running. '
                'Wait for it (send an empty command), send it input (is_input), interrupt it (is_input "C-c"), or '
                "reset the shell."
            ),
        )

    def _limit_busy(self, action: Action) -> dict[str, Any]:
        n, m = self._shells_in_use(), self.rt.max_shells
        return error_observation(
            action.id,
            ErrorId.BUSY,
            (
                f'Your command "{action.command[:200]}" was NOT executed: {n} command(s) already run in this '
                "agent's shells "
                f"(the limit is max_shells = {m}). Wait for one to finish (send an empty command, or the job "
                "action op wait), "
                'interrupt one (is_input "C-c" with its args.job_id, or job op cancel), or raise the '
                "max_shells setting."
            ),
        )

    async def _follow_up(self, action: Action, jid: str | None) -> dict[str, Any]:
        if jid:
            term = self._find_running(jid)
            if term is None:
                what = "retrieve logs from" if not action.is_input else "interact with"
                return error_observation(
                    action.id,
                    ErrorId.NO_COMMAND,
                    f"No running command {jid} to {what} (it finished, or the id is unknown).",
                )
        else:
            running = self._running_foreground()
            if not running:
                return await self.main.run(action)  # NO_COMMAND, worded as before
            _, jid, term = running[-1]
        obs = await term.run(action)
        cmd = term.running
        still = cmd is not None and cmd.job_id == jid
        # Tagged also when it ended in the main shell: the live view closes the row that said "still running".
        self._tag(obs, jid, suffix=self._still_running_note(jid) if still else "")
        return obs

    async def _run_extra(
        self,
        action: Action,
        cwd: str | None,
        note: str = "",
        why: str = "the agent's shell was busy",
        *,
        agent_id: str = "",
    ) -> dict[str, Any]:
        jid = self.rt.new_job_id(action)
        term = self._new_extra(action)
        self.extras[jid] = term
        try:
            cmd, _shell, note = await term.start(action, cwd, job_id=jid)
        except BaseException:
            self.extras.pop(jid, None)
            self._notify()
            await term.close()
            raise
        self._spawn(self._reap(jid, term, cmd))
        prefix = note + (
            f"[{why[:1].upper() + why[1:]}: this command ran in an extra shell ({jid}) started in {term.workspace} "
            "with the main shell's exports; its cd and exports do not carry over.]\n"
        )
        try:
            async with term._waiter:
                obs = await term._wait(action, cmd, prefix=note)
        except asyncio.CancelledError:
            if term.running is cmd and not self.closed:
                self._keep(jid, term, cmd, agent_id)  # `_reap` closes its shell once it ended
                raise
            # Agent gone or deadline passed: a one-shot shell has no state worth keeping.
            self.extras.pop(jid, None)
            self._notify()
            await asyncio.shield(term.close())
            raise
        still = term.running is cmd
        return self._tag(obs, jid, prefix=prefix, suffix=self._still_running_note(jid) if still else "")

    async def _reap(self, jid: str, term: Terminal, cmd) -> None:
        """Kill an extra shell once its command ended and no observation is reading it."""
        await cmd.finished.wait()
        async with term._waiter:
            pass
        if self.extras.get(jid) is term:
            del self.extras[jid]
            self._notify()
        await term.close()

    def _keep(self, jid: str, term: Terminal, cmd, agent_id: str) -> None:
        """A foreground command whose action was cancelled (its agent left: `oh run`'s Ctrl-C; a deadline)
        and that still runs goes on as a job of this shell: its output so far and from now on is spooled
        and `job` ops follow it (issue 30 #1), instead of it running on unseen. The action's cancellation
        already sent it C-c, so most end at once, as FAILED (exit 130) with their output kept."""
        if cmd.done or self.closed or jid in self.jobs:
            return
        job = Job(
            jid, self.key, agent_id, cmd.command, term._cwd(), None, Spool(self.rt.spool_path(jid), self.rt.spool_cap)
        )
        text = cmd.buffer.text()
        if text:
            job.on_output(text)
        cmd.sink = job.on_output
        job.cmd, job.term, job.pid = cmd, term, term.shell.pid if term.shell is not None else -1
        self.jobs[jid] = job
        self.rt.job_event("job_started", job)
        self._spawn(self._watch_kept(job, cmd))

    async def _watch_kept(self, job: Job, cmd: Command) -> None:
        try:
            await _settle(job, cmd)
        finally:
            self.rt.job_event("job_finished", job)

    # ------------------------------------------------------------------ background jobs
    async def _start_job(self, action: Action, cwd: str | None, ctx: "AgentContext") -> dict[str, Any]:
        self.purge()
        where = cwd or self.main._cwd()
        sandbox = str(action.args.get("sandbox") or "") if action.unsandboxed else ""
        key = (action.command, where, env_fingerprint(action.env), sandbox)
        if not action.args.get("force"):
            for job in self.jobs.values():
                if job.state == RUNNING and job.fingerprint == key:
                    return self._job_run_obs(
                        action,
                        job,
                        (
                            f"\n[Job {job.job_id} with the same command, directory and environment is already running "
                            f"(pid {job.pid}); it was not started again. Follow it with the job action (op poll, "
                            "wait, output, cancel), or set args.force to start another.]"
                        ),
                    )
        if self._shells_in_use() >= self.rt.max_shells:
            return self._limit_busy(action)
        jid = self.rt.new_job_id(action)
        spool = Spool(self.rt.spool_path(jid), self.rt.spool_cap)
        job = Job(jid, self.key, ctx.id, action.command, where, action.env, spool, sandbox)
        term = self._new_extra(action)
        self.extras[jid] = term
        self.jobs[jid] = job
        try:
            cmd, shell, _note = await term.start(action, cwd, job_id=jid, sink=job.on_output)
        except BaseException:
            self.extras.pop(jid, None)
            self.jobs.pop(jid, None)
            spool.close()
            await term.close()
            raise
        job.cmd, job.term, job.pid = cmd, term, shell.pid
        self.rt.job_event("job_started", job)
        self._spawn(self._watch(job, cmd, term))
        return self._job_run_obs(
            action,
            job,
            (
                f"\n[Started in the background as job {jid} (pid {shell.pid}). Follow it with the job action and "
                "args.job_id "
                f'"{jid}": op poll (state and output tail), wait (until it ends), output (all of it, from an '
                "offset), cancel.]"
            ),
        )

    def _job_run_obs(self, action: Action, job: Job, suffix: str) -> dict[str, Any]:
        user, host = _identity()
        obs = run_observation(
            action.id,
            action.command,
            "",
            -1 if job.exit_code is None else job.exit_code,
            job.cwd,
            pid=job.pid,
            suffix=suffix,
            hidden=bool(action.args.get("hidden", False)),
            username=user,
            hostname=host,
        )
        return self._tag(obs, job.job_id)

    async def _watch(self, job: Job, cmd: Command, term: Terminal) -> None:
        try:
            await _settle(job, cmd)
        finally:
            async with term._waiter:  # a follow-up reading its last output first
                pass
            if self.extras.get(job.job_id) is term:
                del self.extras[job.job_id]
                self._notify()
            await term.close()
            self.rt.job_event("job_finished", job)

    def purge(self) -> None:
        now = time.monotonic()
        finished = [j for j in self.jobs.values() if j.state != RUNNING and j.finished_at is not None]
        finished.sort(key=lambda j: j.finished_at or 0.0)  # (all finished: `or` only for the type checker)
        excess = len(finished) - MAX_FINISHED
        for i, job in enumerate(finished):
            if i < excess or now - (job.finished_at or now) > self.rt.job_retention:
                self.jobs.pop(job.job_id, None)
                job.spool.close()

    # ------------------------------------------------------------------ the job action
    async def job_op(self, action: Action) -> dict[str, Any]:
        self.purge()
        op = action.args["op"]
        if op == "list":
            return self._list(action)
        jid = action.args["job_id"]
        job = self.jobs.get(jid)
        if job is None:
            if self._find_running(jid) is not None:
                return error_observation(
                    action.id,
                    ErrorId.NO_JOB,
                    (
                        f"{jid} is a foreground command, not a background job: follow it with run (an empty "
                        "command, or is_input; "
                        f'"C-c" interrupts it) and args.job_id "{jid}".'
                    ),
                )
            return error_observation(
                action.id,
                ErrorId.NO_JOB,
                f"No job {jid} in this agent's shell: the id is unknown, or the job finished more than job_retention "
                f"({self.rt.job_retention:g} s) ago. List the jobs with the job action op list.",
            )
        if op == "poll":
            tail = action.args.get("tail")
            return self._answer(action, op, job, job.spool.tail(POLL_TAIL if tail is None else tail))
        if op == "wait":
            timeout = action.timeout if action.timeout is not None else self.rt.max_wait
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(job.done.wait()), timeout)
            tail = action.args.get("tail")
            obs = self._answer(action, op, job, job.spool.tail(WAIT_TAIL if tail is None else tail))
            obs["extras"]["timed_out"] = job.state == RUNNING
            return obs
        if op == "output":
            return await self._output(action, job)
        return await self._cancel(action, job)

    def _answer(self, action: Action, op: str, job: Job, content: str, **extra: Any) -> dict[str, Any]:
        return job_observation(action.id, op, content, {"job": job.record(), **extra})

    def _list(self, action: Action) -> dict[str, Any]:
        records = [j.record() for j in self.jobs.values()]
        for started, jid, term in self._running_foreground():
            cmd = term.running
            assert cmd is not None  # running ones only
            records.append(
                {
                    "job_id": jid,
                    "command": cmd.command,
                    "cwd": term._cwd(),
                    "state": RUNNING,
                    "exit_code": None,
                    "pid": term.shell.pid if term.shell else -1,
                    "background": False,
                    "duration_s": round(time.monotonic() - started, 3),
                }
            )
        lines = [
            f"{r['job_id']}  {r['state']}{'' if r['exit_code'] is None else ' exit ' + str(r['exit_code'])}  "
            f"{'background' if r['background'] else 'foreground'}  {r['command'][:120]}"
            for r in records
        ]
        return job_observation(action.id, "list", "\n".join(lines) if lines else "No jobs.", {"jobs": records})

    async def _output(self, action: Action, job: Job) -> dict[str, Any]:
        offset = action.args.get("offset") or 0
        limit = action.args.get("limit")
        limit = OUTPUT_LIMIT if limit is None else min(limit, OUTPUT_MAX)
        wait = action.args.get("wait")
        if wait:
            await job.wait_output(offset, min(float(wait), self.rt.max_wait))
        text, start, nxt = job.spool.read(offset, limit)
        total = job.spool.total
        return self._answer(
            action,
            "output",
            job,
            text,
            offset=start,
            next_offset=nxt,
            size=total,
            dropped=job.spool.base,
            eof=job.state != RUNNING and nxt >= total,
        )

    async def _cancel(self, action: Action, job: Job) -> dict[str, Any]:
        if job.state != RUNNING:
            return self._answer(
                action, "cancel", job, f"Job {job.job_id} already ended ({job.state}); nothing to cancel."
            )
        job.cancelled = True
        term = job.term
        try:
            # C-c first (the program may clean up), twice: a C-c that lands while the shell is still
            # reading the command line (a job cancelled right after it started) is lost.
            for _ in range(2):
                if term is not None and term.shell is not None:
                    term.shell.interrupt()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(job.done.wait()), CANCEL_GRACE / 2)
                if job.done.is_set():
                    break
            if not job.done.is_set():
                raise asyncio.TimeoutError
        except asyncio.TimeoutError:
            if term is self.main:  # a foreground command kept as a job (`_keep`): the main shell starts afresh
                await term.reset()
            elif term is not None:
                await term.close()  # then the whole process group (and descendants found)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(job.done.wait()), 5)
        job.finish(CANCELLED, job.cmd.exit_code if job.cmd is not None else None)
        return self._answer(action, "cancel", job, f"Job {job.job_id} cancelled (exit code {job.exit_code}).")

    # ------------------------------------------------------------------ lifecycle
    async def close(self) -> None:
        self.closed = True
        self._notify()  # queued runs give up
        for job in self.jobs.values():
            job.finish(LOST, None)  # its shell dies with the group (agent gone, backend stopping)
        terms = [self.main, *self.extras.values()]
        self.extras.clear()
        await asyncio.gather(*(t.close() for t in terms), return_exceptions=True)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        for job in self.jobs.values():
            job.spool.close()
        self.jobs.clear()


async def _settle(job: Job, cmd: Command) -> None:
    """Wait for the job's command to end and record how; a wait cut short (the group is closing) leaves it LOST."""
    try:
        await cmd.finished.wait()
        state = CANCELLED if job.cancelled else SUCCEEDED if cmd.exit_code == 0 else FAILED
        job.finish(state, cmd.exit_code)
    finally:
        if job.state == RUNNING:
            job.finish(LOST, None)
