"""The ``vscode`` runtime: forward each action to the editor registered for the workspace.

It decides where an action goes and what the backend answers itself (paths outside the roots,
capabilities, jobs of editors that went away); the editor connection itself, both ways, is
``editor_link.EditorLink``'s, which also tells this runtime of editors' job events and disconnects.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import time
from collections import OrderedDict
from typing import Any, Hashable

from ..protocol import binary, budget, frames, joblist, kinds, progress
from ..protocol import sandbox as sandbox_rules
from ..protocol.errors import ErrorId
from ..protocol.events import Action, error_observation, job_observation
from ..protocol.kinds import is_proposal
from ..protocol.paths import within_any
from . import escalation, fspath
from .base import AgentContext, Runtime, Switch, as_context, report
from .editor_link import EditorLink


def _from_base64(obs: dict[str, Any]) -> dict[str, Any]:
    """A base64 read answer turned into the binary one the agent asked for (other answers as they are)."""
    extras = obs.get("extras")
    if obs.get("observation") != "read" or not isinstance(extras, dict) or extras.get("encoding") != "base64":
        return obs
    try:
        data = base64.b64decode(obs.get("content", ""), validate=True)
    except (ValueError, TypeError):
        return error_observation(
            obs.get("cause"), ErrorId.SERVER_ERROR, "The editor's base64 read answer is not valid base64."
        )
    return {**obs, "content": data, "extras": {**extras, "encoding": "binary"}}


class EditorSandbox:
    """The sandbox of the editor's engine terminals, as the backend sent it (its engine host applies it and
    refuses to start a shell unconfined unless the spec's fallback allows it)."""

    def __init__(self, spec: sandbox_rules.Spec) -> None:
        self.spec = spec

    def status(self) -> dict[str, object]:
        return {
            "level": self.spec.level if self.spec.on else "off",
            "network": self.spec.network or not self.spec.on,
            "confined": self.spec.on,
            "summary": self.spec.describe() + (" (in the editor's engine terminals)" if self.spec.on else ""),
        }


class VscodeRuntime(Runtime):
    name = "vscode"

    def __init__(
        self,
        link: EditorLink,
        workspace: str,
        editor_timeout: float = 30.0,
        *,
        allowed_roots: list[str] | None = None,
        job_retention: float = 3600.0,
        review: bool = False,
        sandbox: sandbox_rules.Spec | None = None,
    ) -> None:
        self.link = link
        # The resolved sandbox the backend sends every editor (docs/protocol.md §3.17); None: the editor's default.
        self._sandbox = EditorSandbox(sandbox) if sandbox is not None else None
        self.registry = link.registry
        link.on_job_event = self.editor_job_event
        link.on_editor_gone = self.editor_gone
        # Review mode (§3.11): only an editor that advertised "review" may get write/edit actions, so
        # an editor that would apply them directly (e.g. an older extension) never bypasses the review.
        self.review = review
        self.workspace = os.path.realpath(workspace)
        # The BACKEND's roots (workspace + `oh start --allow`), not the editor window's folders.
        self.roots = [os.path.realpath(r) for r in (allowed_roots or [self.workspace])]
        self._allowed = within_any(self.roots)  # the roots normalised once (per-action check)
        self.editor_timeout = editor_timeout
        self.job_retention = job_retention
        # Commands get backend-wide ids (top-level ``job_id`` on the editor leg) so follow-ups and job
        # operations reach the editor that runs them, and ids never collide across editors.
        self._job_ids = itertools.count(1)
        # job id -> (editor id, shell key, agent id) (bounded)
        self._where: OrderedDict[str, tuple[str, str, str]] = OrderedDict()
        self.jobs: dict[str, dict[str, Any]] = {}  # background jobs' records as the backend knows them
        self._workdirs: dict[str, str] = {}  # agent workdir -> its realpath at first use

    def _workdir(self, ctx: AgentContext) -> str:
        if not ctx.workdir:
            return self.workspace
        # Cached, with its verdict: realpath was ~7 % of the backend's CPU under load
        # (docs/benchmarks.md). Safe to reuse: it is only the base relative paths are joined to; the
        # joined path is resolved and checked against the roots again for every action (_absolute).
        base = self._workdirs.get(ctx.workdir)
        if base is None:
            if len(self._workdirs) >= 1024:
                self._workdirs.clear()
            real = os.path.realpath(ctx.workdir)
            base = self._workdirs[ctx.workdir] = real if self._allowed(real) else self.workspace
        return base

    def _absolute(self, action: Action, ctx: AgentContext) -> dict[str, Any] | str:  # or an error observation
        """The frame for the editor: relative ``path``/``cwd`` made absolute against the agent's
        working directory, the ``agent`` field attached; or the refused path (PATH_DENIED).

        The editor checks too; this is the backend's own line of defence, and it makes relative
        paths mean the same thing whatever folder the editor window has open.
        """
        workdir = self._workdir(ctx)
        args = action.args
        key = "cwd" if action.kind == "run" else "path"
        raw_path = args.get(key) if action.kind == "run" else action.path
        if raw_path:
            # A component of at most 63 characters is at most 252 bytes (4 per character): only
            # longer paths need the byte count.
            if len(raw_path) > 63 and any(len(os.fsencode(part)) > 255 for part in raw_path.split("/")):
                return error_observation(
                    action.id,
                    ErrorId.TOOL_ERROR,
                    f"File name too long: a component of {raw_path[:120]}... is over 255 bytes.",
                )
            expanded = os.path.expanduser(raw_path)
            joined = os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(workdir, expanded))
            real = fspath.realpath(joined)
            if not self._allowed(real):
                return raw_path
            if joined != raw_path:
                args = {**args, key: joined}
        agent = frames.agent_field(ctx.id, ctx.name, workdir, ctx.shell_key)
        frame = action.with_id(action.id, agent=agent)
        frame["args"] = args
        return frame

    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        """Make the action's paths absolute and confined, find the editor that runs it (the job's own
        editor for a job id), refuse what that editor cannot do, forward it, and complete the answer."""
        ctx = as_context(agent)
        escalated = escalation.requested(action)
        if escalated:
            refused = _escalation_refusal(action)
            if refused is not None:
                return refused
        frame = self._absolute(action, ctx)
        if isinstance(frame, str):
            what = "The working directory" if action.kind == "run" else "Path"
            return error_observation(
                action.id,
                ErrorId.PATH_DENIED,
                f"{what} {frame} is outside the allowed roots ({', '.join(self.roots)}); nothing was done.",
            )
        if frame.get("observation") == "error":
            return frame
        # Only the consent gate's verdict (Action.unsandboxed) lets the editor leave its sandbox: the field an
        # agent may have put in its own frame never reaches the editor (docs/protocol.md §3.17).
        frame.pop("escalation", None)
        if escalated:
            reason = sandbox_rules.check_escalation(action.args)  # checked above: the reason, trimmed
            frame["escalation"] = frames.escalation_field(action.args[sandbox_rules.ESCALATE_ARG], reason)
        jid = action.args.get("job_id")
        routed = self._job_editor(action, ctx, jid) if jid else None
        if isinstance(routed, dict):
            return routed  # the job's editor is gone: what the backend knows, or a refusal
        new_command = action.kind == "run" and not action.is_input and action.command.strip() != ""
        if new_command:
            frame["job_id"] = f"j{next(self._job_ids)}"
        editor = routed or self.registry.pick(self.workspace)
        if editor is None and action.kind == "job":
            # `job list` with no editor: what the backend knows (jobs of editors that went away),
            # at once rather than after the editor timeout.
            return self._local_list(action, ctx)
        if editor is None:
            editor = await self._wait_for_editor(action, frame)
        refused = self._refusal(action, editor)
        if refused is not None:
            return refused
        if new_command:
            self._remember(frame["job_id"], editor.editor_id, ctx)
            if not action.args.get("background"):
                report(action, progress.STARTED, job_id=frame["job_id"])  # an interrupting client names it
        obs = await self._forward(action, frame, editor)
        return self._completed(action, ctx, editor, obs)

    async def _wait_for_editor(self, action: Action, frame: dict[str, Any]):
        """Wait for an editor within the action's own timeout too; the editor gets what is left of it."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        editor = await self.registry.wait_for(self.workspace, budget.editor_wait(self.editor_timeout, action.timeout))
        left = budget.after_editor_wait(action.timeout, loop.time() - started)
        if editor is not None and left is not None and left != action.timeout:
            frame["timeout"] = round(left, 3)
        return editor

    def _job_editor(self, action: Action, ctx: AgentContext, jid: str):
        """The editor running job ``jid`` (of this agent's shell); else the answer to give at once."""
        self._purge()
        record = self.jobs.get(jid)
        if record is not None and record.get("shell") != ctx.shell_key:
            record = None  # another agent's shell: not visible
        routed = self._editor_for(jid)
        if routed is not None:
            return routed
        if record is not None and action.kind == "job":
            return self._local_job_answer(action, record)  # its editor is gone: what we know
        if action.kind == "job":
            return error_observation(
                action.id,
                ErrorId.NO_JOB,
                f"No job {jid} in this agent's shell: the id is unknown, or the job ended more than job_retention "
                f"({self.job_retention:g} s) ago. List the jobs with the job action op list.",
            )
        return error_observation(
            action.id, ErrorId.NO_COMMAND, f"No running command {jid} (its editor is gone, or the id is unknown)."
        )

    def _refusal(self, action: Action, editor) -> dict[str, Any] | None:
        """Why ``editor`` will not be asked: none connected, or it cannot do this action (kind, an option,
        review mode without the editor's 'review' capability); None when it can."""
        if editor is None:
            return error_observation(
                action.id,
                ErrorId.NO_EDITOR,
                f"No editor is connected for {self.workspace} (waited "
                f"{budget.editor_wait(self.editor_timeout, action.timeout):g} s). "
                "Open the folder in VS Code with the oh extension installed, or run `oh attach`.",
            )
        capabilities = editor.registration.capabilities
        name = editor.registration.editor_name
        entry = kinds.get(action.kind)  # the capability the kind table names; None: not an editor's to execute
        if entry is None or entry.capability is None or entry.capability not in capabilities:
            return error_observation(
                action.id, ErrorId.TOOL_UNSUPPORTED, f"The editor {name} cannot execute '{action.kind}'."
            )
        if self.review and "review" not in capabilities and is_proposal(action.kind, action.args):
            return error_observation(
                action.id,
                ErrorId.TOOL_UNSUPPORTED,
                (
                    f"This backend runs in review mode (--review), and the editor {name} cannot show proposals (it "
                    "did not advertise the 'review' capability); nothing was changed. Use VS Code with the oh "
                    "extension, or `oh start --runtime local --review` and `oh review`."
                ),
            )
        if escalation.requested(action) and frames.ESCALATE_CAPABILITY not in capabilities:
            return error_observation(
                action.id,
                ErrorId.TOOL_UNSUPPORTED,
                (
                    f"The editor {name} cannot run a command outside its sandbox or with the network (it did not "
                    f"advertise the {frames.ESCALATE_CAPABILITY!r} capability: an oh extension older than this oh); "
                    "nothing ran. Update it (`oh vscode install`, then reload the window), or run the command "
                    "inside the sandbox."
                ),
            )
        missing = _missing_capability(action, capabilities)
        if missing is not None:
            return error_observation(
                action.id,
                ErrorId.TOOL_UNSUPPORTED,
                (
                    f"The editor {name} does not support {missing[1]} (it did not advertise the "
                    f"{missing[0]!r} capability); nothing was done. Use the local runtime (`oh start --runtime "
                    "local`) or `oh attach` for it."
                ),
            )
        return None

    def _completed(self, action: Action, ctx: AgentContext, editor, obs: dict[str, Any]) -> dict[str, Any]:
        """The editor's answer with what the backend adds: a started job remembered, the jobs of editors
        that went away in a `job list`, a job whose editor dropped mid-request answered as LOST."""
        if action.kind == "run" and action.args.get("background") and obs.get("observation") == "run":
            self._started(obs, editor, ctx, action)
        if action.kind == "job" and action.args["op"] == "list" and obs.get("observation") == "job":
            self._purge()
            listed = obs["extras"].get("jobs")
            if isinstance(listed, list):
                known = {j.get("job_id") for j in listed if isinstance(j, dict)}
                gone = [  # ended jobs of editors that are gone
                    r
                    for r in self.jobs.values()
                    if r["shell"] == ctx.shell_key and r["job_id"] not in known and r["state"] != "RUNNING"
                ]
                if gone:
                    listed.extend(_public(r) for r in gone)
                    obs["content"] = joblist.merge(obs.get("content"), gone)
        jid = action.args.get("job_id")
        if jid and obs.get("observation") == "error" and obs["extras"].get("error_id") == "EDITOR_DISCONNECTED":
            record = self.jobs.get(jid)
            if record is not None and action.kind == "job":
                return self._local_job_answer(action, record)  # LOST: its editor went away meanwhile
        return obs

    def deadline_allowance(self, action: Action) -> float:
        """Waiting for an editor (up to ``editor_timeout``, never beyond the action's timeout) is part of
        every action's time."""
        return budget.editor_wait(self.editor_timeout, action.timeout)

    def review_elsewhere(self) -> str | None:
        if not self.review:
            return None
        return (
            "This backend's proposals are reviewed in VS Code (the diff editor and its Accept / Reject), not with "
            "`oh review`."
        )

    def branch_switch(self) -> Switch:
        return self.branch

    def sandbox_view(self) -> "EditorSandbox | None":
        return self._sandbox

    async def branch(self, args: dict[str, Any], ctx: AgentContext, leg_id: int) -> dict[str, Any]:
        """Branch mode's switch (docs/protocol.md §3.12): a ``branch`` frame to the editor, which uses
        VS Code's Git extension (and asks the user about a dirty tree or a non-git folder). Sent
        with the id of the agent's action it precedes; that action is forwarded only afterwards."""
        editor = self.registry.pick(self.workspace) or await self.registry.wait_for(self.workspace, self.editor_timeout)
        if editor is None:
            return error_observation(
                leg_id,
                ErrorId.NO_EDITOR,
                (
                    f"No editor is connected for {self.workspace} (waited {self.editor_timeout:g} s) to switch "
                    "the git branch."
                ),
            )
        if "branch" not in editor.registration.capabilities:
            return error_observation(
                leg_id,
                ErrorId.BRANCH_FAILED,
                (
                    f"The editor {editor.registration.editor_name} cannot switch git branches (it did not advertise "
                    "the 'branch' capability; update the oh extension), so the action was not executed. Start "
                    "without --branch, or with --runtime local."
                ),
            )
        agent = frames.agent_field(ctx.id, ctx.name, self._workdir(ctx), ctx.shell_key)
        leg_args = {**args, "workspace": self.workspace}
        frame = {"action": "branch", "id": leg_id, "args": leg_args, "agent": agent}
        return await self._forward(Action(leg_id, "branch", leg_args, None, frame), frame, editor)

    async def _forward(self, action: Action, frame: dict[str, Any], editor) -> dict[str, Any]:
        wants_binary = action.kind == "read" and action.args.get("encoding") == "binary"
        if wants_binary and "binary" not in editor.registration.capabilities:
            # An editor without binary frames (e.g. an older extension) is asked for base64; the
            # agent still gets one binary frame (_from_base64).
            frame = {**frame, "args": {**frame["args"], "encoding": "base64"}}
        obs = await self.link.forward(editor, action.id, frame)
        if binary.is_binary(obs) and not wants_binary:
            return error_observation(
                action.id,
                ErrorId.SERVER_ERROR,
                (
                    f"The editor {editor.registration.editor_name} answered with a binary frame to an action that "
                    "did not ask for one."
                ),
            )
        if wants_binary and not binary.is_binary(obs):
            return _from_base64(obs)
        return obs

    async def agent_closed(self, agent: Hashable) -> None:
        """An agent with a private shell left: tell the editors to kill what runs there and dispose
        of its terminal (shared X-OH-Shell terminals stay until the backend stops)."""
        ctx = as_context(agent)
        if ctx.shared:
            return
        frame = frames.agent_gone(ctx.shell_key)
        for editor in self.registry.all():
            if editor.serves(self.workspace):
                await self.link.tell(editor, frame)

    # ------------------------------------------------------------------ jobs on the editor leg
    def _remember(self, jid: str, editor_id: str, ctx: AgentContext) -> None:
        self._where[jid] = (editor_id, ctx.shell_key, ctx.id)
        while len(self._where) > 10000:
            self._where.popitem(last=False)

    def _editor_for(self, jid: str):
        editor_id = (self._where.get(jid) or (None,))[0]
        if editor_id is None:
            return None
        return next((e for e in self.registry.all() if e.editor_id == editor_id), None)

    def _started(self, obs: dict[str, Any], editor, ctx: AgentContext, action: Action) -> None:
        md = obs.get("extras", {}).get("metadata") or {}
        jid = md.get("job_id")
        if not isinstance(jid, str) or jid in self.jobs:
            return  # not started (refused), or de-duplicated onto a job we know already
        self._remember(jid, editor.editor_id, ctx)
        self.jobs[jid] = {
            "job_id": jid,
            "command": action.command,
            "cwd": md.get("working_dir"),
            "state": "RUNNING",
            "exit_code": None,
            "pid": md.get("pid", -1),
            "background": True,
            "started_at": None,
            "finished_at": None,
            "duration_s": 0.0,
            "output_bytes": 0,
            "env_names": sorted(action.env),
            "shell": ctx.shell_key,
            "agent_id": ctx.id,
            "editor_id": editor.editor_id,
            "_t0": time.monotonic(),
            "_done": None,
        }

    def editor_job_event(self, editor, name: str, job: dict[str, Any]) -> None:
        """An editor reported a job event: update our record, tell monitors."""
        record = self.jobs.get(job["job_id"])
        where = self._where.get(job["job_id"])
        if record is None and name == "job_started" and where is not None and where[0] == editor.editor_id:
            # The editor's event usually arrives before the run observation that started the job.
            record = self.jobs[job["job_id"]] = {
                **{k: v for k, v in job.items() if isinstance(k, str) and not k.startswith("_")},
                "state": "RUNNING",
                "shell": where[1],
                "agent_id": where[2],
                "editor_id": editor.editor_id,
                "_t0": time.monotonic(),
                "_done": None,
            }
        if record is None or record.get("editor_id") != editor.editor_id:
            return
        if name == "job_finished" and record["state"] == "RUNNING":
            for key in ("state", "exit_code", "finished_at", "duration_s", "output_bytes"):
                if key in job:
                    record[key] = job[key]
            record["_done"] = time.monotonic()
        if self.on_job_event is not None:
            self.on_job_event(name, {**job, "shell": record["shell"], "agent_id": record["agent_id"]})

    def editor_gone(self, editor) -> None:
        """Its running jobs are LOST: nobody can reach them any more (a wait on them answers at once)."""
        for record in self.jobs.values():
            if record.get("editor_id") == editor.editor_id and record["state"] == "RUNNING":
                record["state"] = "LOST"
                record["duration_s"] = round(time.monotonic() - record["_t0"], 3)
                record["_done"] = time.monotonic()
                if self.on_job_event is not None:
                    self.on_job_event("job_finished", dict(record))

    def _purge(self) -> None:
        now = time.monotonic()
        for jid in [
            j for j, r in self.jobs.items() if r["_done"] is not None and now - r["_done"] > self.job_retention
        ]:
            del self.jobs[jid]

    def _local_list(self, action: Action, ctx: AgentContext) -> dict[str, Any]:
        self._purge()
        records = [_public(r) for r in self.jobs.values() if r["shell"] == ctx.shell_key]
        return job_observation(
            action.id,
            "list",
            joblist.listing(records) + "\n(No editor is connected: only jobs of editors that went away are listed.)",
            {"jobs": records},
        )

    def _local_job_answer(self, action: Action, record: dict[str, Any]) -> dict[str, Any]:
        """A job op answered by the backend itself: the job ended and its editor may be gone."""
        op = action.args["op"]
        rec = _public(record)
        note = f"Job {rec['job_id']} is {rec['state']}" + (
            ": its editor disconnected; its output is not available." if rec["state"] == "LOST" else "."
        )
        extras: dict[str, Any] = {"job": rec}
        if op == "wait":
            extras["timed_out"] = False
        elif op == "output":
            extras.update(offset=0, next_offset=0, size=0, dropped=0, eof=True)
        return job_observation(action.id, op, note, extras)


def _escalation_refusal(action: Action) -> dict[str, Any] | None:
    """A request to leave the editor's sandbox that must not reach the editor: a bad one (BAD_REQUEST), or one
    the consent gate did not allow (REJECTED: a backend without a gate has nobody to ask); None: forward it."""
    try:
        sandbox_rules.check_escalation(action.args)
    except sandbox_rules.SandboxError as exc:
        return error_observation(action.id, ErrorId.BAD_REQUEST, str(exc))
    if action.unsandboxed:
        return None
    what = "with the network" if escalation.network_only(action) else "outside the sandbox"
    return error_observation(
        action.id,
        ErrorId.REJECTED,
        f"Running a command {what} needs the user's consent, and this backend has no consent gate to ask it. "
        "Nothing ran. Run it inside the sandbox, or ask the user to run it.",
    )


def _missing_capability(action: Action, caps: list[str]) -> tuple[str, str] | None:
    """(capability, what) an action needs beyond its kind's, when the editor did not advertise it."""
    args = action.args
    if action.kind == "run":
        if args.get("background") and "job" not in caps:
            return "job", "background commands (args.background)"
        if args.get("job_id") and "job" not in caps:
            return "job", "naming a command with args.job_id"
    if action.kind == "write" and (args.get("mode") or "overwrite") != "overwrite" and "write_modes" not in caps:
        return "write_modes", f"write mode {args.get('mode')!r}"
    return None


def _public(record: dict[str, Any]) -> dict[str, Any]:
    """A job record as agents see it (without the backend's routing fields)."""
    return {k: v for k, v in record.items() if not k.startswith("_") and k not in ("shell", "agent_id", "editor_id")}
