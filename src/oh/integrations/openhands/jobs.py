"""``background_jobs``: an SDK tool for oh's background jobs (docs/protocol.md §3.8).

The SDK's terminal has one shell and a soft timeout; a server, a watcher or a 20-minute test run fits
it badly. This tool starts such a command as a job in the conversation's oh shell and follows it:
list, poll, wait (exit code), output from a byte offset (nothing lost to truncation), cancel. The
jobs belong to the conversation's connection, the one its ``terminal`` uses, so ``list`` also shows
a terminal command still running after a soft timeout. Secrets the command names are exported as
for the terminal and masked in what comes back.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from openhands.sdk.tool import Action, Observation, ToolDefinition, ToolExecutor
from pydantic import Field

from ...client import jobs as job_actions
from ...protocol import joblist
from .common import mask, secrets_for, security_risk_of
from .executor import LinkedExecutor, own_tool

if TYPE_CHECKING:
    from openhands.sdk.conversation import LocalConversation
    from openhands.sdk.conversation.state import ConversationState

NAME = "background_jobs"
OUTPUT_PAGE = 30_000  # bytes per `output` call by default: the size of a terminal result
WAIT_DEFAULT = 120.0
WAIT_MAX = 1800.0
_WAIT_CHUNK = 200.0  # one backend `wait` request at most this long (the backend caps one at 240 s)
_SLACK = 30.0  # client-side wait past the backend's own bound

JobOp = Literal["start", "list", "poll", "wait", "output", "cancel"]

DESCRIPTION = """Run long commands (servers, watchers, slow builds or test suites) as background jobs and follow them, \
instead of a terminal command that times out or whose output is cut.

* `start` with `command` (and optional `cwd`): starts it at once and answers with its `job_id` (e.g. "j3"). The same \
command already running in the same directory is not started twice: its job is returned (`force: true` starts another).
* `wait` with `job_id`: blocks until the job ends (at most `timeout` seconds, default 120) and returns its exit code \
and the end of its output. `still running` means wait again or cancel it.
* `output` with `job_id` and `offset` (0 = the start): the job's output from that byte, at most `limit` bytes (default \
30000). The answer gives `next_offset`: pass it as `offset` next time to read on; nothing is lost. With `timeout`, \
first waits that long for new output (follow a server's log).
* `poll` with `job_id`: its state now and the end of its output, without waiting.
* `cancel` with `job_id`: Ctrl-C to the job's process group, killed after 2 s.
* `list`: your jobs and any terminal command still running, with state and exit code.
States: RUNNING, SUCCEEDED (exit 0), FAILED (other exit code), CANCELLED, LOST (its shell or editor went away). \
Finished jobs are kept for an hour. Jobs run in the same environment as your terminal commands (through oh: VS Code's \
terminals or oh's local shells)."""


class BackgroundJobAction(Action):
    """One operation on the conversation's background jobs."""

    op: JobOp = Field(description="start | list | poll | wait | output | cancel")
    command: str | None = Field(default=None, description="start: the shell command to run in the background.")
    cwd: str | None = Field(
        default=None, description="start: the directory to run it in (default: the terminal's current directory)."
    )
    force: bool = Field(
        default=False, description="start: start another even if the same command already runs as a job."
    )
    job_id: str | None = Field(
        default=None, description='poll, wait, output, cancel: the job\'s id from start or list, e.g. "j3".'
    )
    timeout: float | None = Field(
        default=None,
        ge=0,
        description=(
            "wait: seconds to wait at most (default 120, up to 1800). output: seconds to wait for output past "
            "offset (default 0)."
        ),
    )
    offset: int = Field(
        default=0,
        ge=0,
        description="output: the byte to read from (0 = start; next_offset of the previous output call to read on).",
    )
    limit: int | None = Field(
        default=None, ge=1, description=f"output: at most this many bytes (default {OUTPUT_PAGE})."
    )


class BackgroundJobObservation(Observation):
    """What the backend answered, with the job's state as fields (``content`` is what the model reads)."""

    op: str = Field(description="The operation that ran.")
    job_id: str | None = Field(default=None)
    state: str | None = Field(default=None, description="RUNNING | SUCCEEDED | FAILED | CANCELLED | LOST")
    exit_code: int | None = Field(default=None)
    timed_out: bool = Field(default=False, description="wait: the job was still running when the wait ended.")
    offset: int | None = Field(default=None, description="output: where this part starts.")
    next_offset: int | None = Field(default=None, description="output: pass as offset to read on.")
    eof: bool = Field(default=False, description="output: the job ended and everything was read.")
    jobs: list[dict[str, Any]] = Field(default_factory=list, description="list: the job records.")


def _join(text: str, trailer: str) -> str:
    return text + ("" if not text or text.endswith("\n") else "\n") + trailer


class BackgroundJobExecutor(LinkedExecutor, ToolExecutor[BackgroundJobAction, BackgroundJobObservation]):
    def __call__(
        self, action: BackgroundJobAction, conversation: "LocalConversation | None" = None
    ) -> BackgroundJobObservation:
        problem = self._check(action)
        if problem:
            return BackgroundJobObservation.from_text(text=problem, op=action.op, job_id=action.job_id, is_error=True)
        if action.op == "start":
            return self._start(action, conversation)
        if action.op == "wait":
            return self._wait(action, conversation)
        if action.op == "list":
            return self._answer(action, self.send(job_actions.job("list"), timeout=60), conversation)
        if action.op == "poll":
            return self._answer(action, self.send(job_actions.job("poll", action.job_id), timeout=60), conversation)
        if action.op == "cancel":
            return self._answer(action, self.send(job_actions.job("cancel", action.job_id), timeout=60), conversation)
        wait = min(action.timeout or 0.0, 60.0) or None
        frame = job_actions.job(
            "output",
            action.job_id,
            offset=action.offset,
            limit=min(action.limit or OUTPUT_PAGE, 16 * 1024 * 1024),
            wait=wait,
        )
        return self._answer(action, self.send(frame, timeout=(wait or 0) + _SLACK), conversation)

    @staticmethod
    def _check(action: BackgroundJobAction) -> str | None:
        """A clear refusal for a call missing what its op needs (nothing is sent then)."""
        if action.op == "start" and not (action.command or "").strip():
            return "start needs `command`: the shell command to run in the background."
        if action.op not in ("start", "list") and not action.job_id:
            return f"{action.op} needs `job_id` (from start's answer, or from list)."
        return None

    def _start(self, action: BackgroundJobAction, conversation: "LocalConversation | None") -> BackgroundJobObservation:
        command = action.command or ""
        frame = job_actions.run_background(
            command, cwd=action.cwd, force=action.force, env=secrets_for(command, conversation) or None
        )
        risk = security_risk_of(action, conversation)
        if risk is not None:  # shown in the live view and the trace, as for the terminal's commands
            frame["security_risk"] = risk  # top level: oh's label (args.security_risk is OpenHands' int)
        obs = self.send(frame, timeout=60)
        if obs.get("observation") != "run":
            return self._error(action, obs, conversation)
        md = (obs.get("extras") or {}).get("metadata") or {}
        jid = md.get("job_id")
        head, _ = joblist.started(md, where=True)
        text = (
            f"{head}\nFollow it with {NAME}: op wait (until it ends; exit code), op output with offset 0 then "
            "next_offset (its whole output), op poll, op cancel."
        )
        return BackgroundJobObservation.from_text(text=text, op="start", job_id=jid, state="RUNNING")

    def _wait(self, action: BackgroundJobAction, conversation: "LocalConversation | None") -> BackgroundJobObservation:
        # The backend bounds one wait; longer ones are several requests, so a long job never looks hung.
        deadline = time.monotonic() + min(WAIT_DEFAULT if action.timeout is None else action.timeout, WAIT_MAX)
        while True:
            chunk = max(min(_WAIT_CHUNK, deadline - time.monotonic()), 0.001)
            obs = self.send(job_actions.job("wait", action.job_id, timeout=chunk), timeout=chunk + _SLACK)
            state = ((obs.get("extras") or {}).get("job") or {}).get("state")
            if obs.get("observation") != "job" or state != "RUNNING" or time.monotonic() >= deadline:
                return self._answer(action, obs, conversation)

    def _answer(
        self, action: BackgroundJobAction, obs: dict[str, Any], conversation: "LocalConversation | None"
    ) -> BackgroundJobObservation:
        if obs.get("observation") != "job":
            return self._error(action, obs, conversation)
        extras = obs.get("extras") or {}
        content = mask(obs.get("content") or "", conversation)
        if action.op == "list":
            jobs = [dict(r, command=mask(str(r.get("command", "")), conversation)) for r in extras.get("jobs") or []]
            return BackgroundJobObservation.from_text(
                text=mask(obs.get("content") or "", conversation) or "No jobs: nothing runs in the background.",
                op="list",
                jobs=jobs,
            )
        record = extras.get("job") or {}
        jid, state, code = record.get("job_id") or action.job_id, record.get("state"), record.get("exit_code")
        fields: dict[str, Any] = {"op": action.op, "job_id": jid, "state": state, "exit_code": code}
        if action.op == "output":
            fields.update(
                offset=extras.get("offset"), next_offset=extras.get("next_offset"), eof=bool(extras.get("eof"))
            )
            trailer = joblist.output_trailer(jid, state, code, extras)
            if extras.get("dropped"):
                trailer += (
                    f"\n[The oldest {extras['dropped']} bytes of this job's output are no longer kept (it keeps "
                    "the newest 16 MiB).]"
                )
            return BackgroundJobObservation.from_text(text=_join(content, trailer), **fields)
        if action.op == "cancel":
            return BackgroundJobObservation.from_text(text=content or f"Job {jid} {state}.", **fields)
        fields["timed_out"] = bool(extras.get("timed_out")) or state == "RUNNING" and action.op == "wait"
        if state == "RUNNING":
            trailer = (
                f"[job {jid} still RUNNING after the wait: wait again, read its output, or cancel it]"
                if action.op == "wait"
                else f"[job {jid} RUNNING]"
            )
        else:
            trailer = f"[job {jid} {state}, exit code {code}]"
        # A job that did not do its work (failed, cancelled, lost) is something the model must notice.
        return BackgroundJobObservation.from_text(
            text=_join(content, trailer), is_error=state in ("FAILED", "CANCELLED", "LOST"), **fields
        )

    @staticmethod
    def _error(
        action: BackgroundJobAction, obs: dict[str, Any], conversation: "LocalConversation | None"
    ) -> BackgroundJobObservation:
        error_id = (obs.get("extras") or {}).get("error_id") or "ERROR"
        return BackgroundJobObservation.from_text(
            text=f"{error_id}: {mask(obs.get('content') or '', conversation)}",
            op=action.op,
            job_id=action.job_id,
            is_error=True,
        )


class BackgroundJobsTool(ToolDefinition[BackgroundJobAction, BackgroundJobObservation]):
    """oh's background jobs as an SDK tool (``Tool(name="background_jobs")`` after ``install()``)."""

    name = NAME

    @classmethod
    def create(cls, conv_state: "ConversationState") -> Sequence["BackgroundJobsTool"]:  # type: ignore[override]
        return own_tool(
            cls,
            NAME,
            DESCRIPTION,
            BackgroundJobAction,
            BackgroundJobObservation,
            BackgroundJobExecutor(conv_state),
            destructive=True,
            idempotent=False,
            open_world=False,
        )
