"""``LocalRuntime``: executes actions on this machine. The agent's shell runs in a bubblewrap sandbox
(sandbox.py; level ``workspace-write`` by default, ``off`` runs it as this user); the file actions are
confined to the allowed roots by ``PathPolicy``."""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Awaitable, Callable, ClassVar, Hashable, Mapping, Sequence

from ... import beneath, programs
from ...protocol import kinds, shellqueue
from ...protocol import sandbox as sandbox_rules
from ...protocol.argcheck import JOB_ID
from ...protocol.errors import ErrorId, ToolError
from ...protocol.events import (
    Action,
    edit_observation,
    error_observation,
    read_observation,
    stat_observation,
    write_observation,
)
from ..base import AgentContext, Runtime, Switch, as_context
from . import knowledge
from . import oneshot as oneshot_files
from .editor import FileEditor
from .engine import STARTUP_TIMEOUT, PtyShell
from .files import read_file, stat_path, write_file
from .gitswitch import local_switch
from .group import ShellGroup
from .jobs import SPOOL_CAP
from .paths import PathPolicy, escape_error
from .ptyproc import WrapArgv
from .review import PathLocks, Proposal, ProposalQueue, ProposingEditor, Recorder, file_bytes, text_of
from .sandbox import Sandbox, check
from .terminal import Terminal

log = logging.getLogger("oh.runtimes.local")

NO_CHANGE_TIMEOUT = 30.0  # OpenHands' soft timeout: no new output for this long
MAX_WAIT = 240.0  # a run without timeout returns by then (the backend's default deadline is 300 s)
INLINE_BYTES = 1 << 20  # smaller files are read/written on the event loop; bigger ones in a thread
# Edits (other than view) and proposals always run in a worker thread (issue 18): their diff is worse
# than linear (bounded by protocol.udiff.WORK_BUDGET, still ~1-2 s), and no agent may stall the loop.
_SECRET_ENV = re.compile(r"^OH_.*(TOKEN|SECRET)|^OH_TOKEN$")


def shell_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """The agent shell's environment: no ``oh`` token, no BASH_ENV, pagers that never wait."""
    base = dict(os.environ if env is None else env)
    for key in list(base):
        if _SECRET_ENV.match(key):
            del base[key]
    base.pop("BASH_ENV", None)
    base.pop("ENV", None)
    base.setdefault("PAGER", "cat")
    base.setdefault("GIT_PAGER", "cat")
    base.setdefault("PYTHONUNBUFFERED", "1")
    base.setdefault("TERM", "dumb")
    return base


ESCALATE = sandbox_rules.ESCALATE_ARG


def _prefix(obs: dict[str, Any], line: str) -> None:
    md = obs.get("extras", {}).get("metadata") if obs.get("observation") == "run" else None
    if isinstance(md, dict):
        md["prefix"] = line + "\n" + (md.get("prefix") or "")


def _edit_result(action: Action, result: dict[str, Any]) -> dict[str, Any]:
    """The edit observation of one OpenHands editor call's result."""
    return edit_observation(
        action.id,
        action.path,
        result["content"],
        prev_exist=result["prev_exist"],
        old_content=result["old_content"],
        new_content=result["new_content"],
        diff=result["diff"],
    )


class LocalRuntime(Runtime):
    name = "local"

    def __init__(
        self,
        workspace: str | Path,
        allowed_roots: Sequence[str | Path] | None = None,
        *,
        max_output_chars: int = 30000,
        default_run_timeout: float | None = None,
        env: dict[str, str] | None = None,
        max_shells: int = 8,
        job_retention: float = 3600.0,
        spool_dir: str | Path | None = None,
        spool_cap: int = SPOOL_CAP,
        review: bool = False,
        review_timeout: float = 600.0,
        user_shell: bool | None = None,
        shell_startup_timeout: float | None = None,
        sandbox: sandbox_rules.Spec | None = None,
        sandbox_hidden: Sequence[str] = (),
    ) -> None:
        self.paths = PathPolicy(workspace, allowed_roots)
        self.workspace = self.paths.workspace
        self.max_output_chars = max_output_chars
        # None: OpenHands' rule (return after 30 s without new output); a number: that many seconds.
        self.no_change_timeout = NO_CHANGE_TIMEOUT if default_run_timeout is None else float(default_run_timeout)
        self.max_wait = MAX_WAIT
        self.env = shell_environment(env)
        # The agent's shell (docs/protocol.md §3.4.1): the user's bash/zsh with their rc files on a pty,
        # or the clean shell (bash, no rc files). None: OH_USER_SHELL / OH_SHELL_STARTUP_TIMEOUT, else on / 5 s.
        source = os.environ if env is None else env
        if user_shell is None:
            user_shell = source.get("OH_USER_SHELL", "1").strip().lower() not in ("0", "false", "no", "off")
        if shell_startup_timeout is None:
            try:
                shell_startup_timeout = float(source.get("OH_SHELL_STARTUP_TIMEOUT", "") or STARTUP_TIMEOUT)
            except ValueError:
                shell_startup_timeout = STARTUP_TIMEOUT
        self.user_shell = bool(user_shell)
        self.shell_startup_timeout = max(0.1, float(shell_startup_timeout))
        # A sandbox's prefix for every agent shell's argv (ptyproc.spawn); None: the shell runs as is.
        self.wrap_argv: WrapArgv | None = None
        # Told each engine note (the clean-shell fallback, a fix to the rc's settings) when first said.
        self.on_shell_note: Callable[[str], None] | None = None
        self._notes_shown: set[str] = set()  # engine notes the live view was told (once per runtime)
        # The agent's shells' sandbox (README "Sandbox"). None: OH_SANDBOX* from the environment, else the default.
        if sandbox is None:
            sandbox = sandbox_rules.spec_from(
                {k.lower()[3:]: v for k, v in source.items() if k.startswith("OH_SANDBOX")}
            )
        self.sandbox = Sandbox(
            sandbox, workspace=self.workspace, roots=tuple(self.paths.roots), hidden=tuple(sandbox_hidden)
        )
        self.editor = FileEditor(max_output_chars)
        self._terminals: dict[Hashable, ShellGroup] = {}  # shell key -> its shells and jobs
        self.max_shells = max(1, int(max_shells))  # per shell key, the main shell included
        self.queue_limit = shellqueue.QUEUE_LIMIT  # runs per shell key waiting for a free shell (then BUSY)
        self.job_retention = float(job_retention)
        self.spool_cap = spool_cap
        self._spool_root = Path(spool_dir) if spool_dir is not None else None
        self._spool_dir: Path | None = None
        self._job_ids = itertools.count(1)
        # True in the headless editor: the backend names commands (top-level job_id); agents talking
        # to a local backend directly do not get to pick ids.
        self.backend_names_jobs = False
        # Called with ("job_started" | "job_finished", job record + shell + agent_id): the backend
        # tells monitors and the trace; the headless editor tells the backend.
        self.on_job_event: Callable[[str, dict[str, Any]], None] | None = None
        # Shells being torn down (an agent left). close() waits for them too, so a backend stop never
        # returns while a departed agent's processes are still being killed.
        self._closing: set[asyncio.Future] = set()
        self._scratch: str | None = None
        # Review mode (§3.11): write/edit wait here as proposals until `oh review` decides.
        self.proposals: ProposalQueue | None = ProposalQueue(review_timeout) if review else None
        # Edits, threaded writes and accepted proposals of one file take turns (issue 18).
        self._file_locks = self.proposals.locks if self.proposals is not None else PathLocks()

    # ------------------------------------------------------------------ plumbing
    def _scratch_root(self) -> str | None:
        """Where this runtime's scratch directories go: under oh's own state directory when the backend named it
        (``sandbox_hidden``), which every sandbox hides, so no agent reads another runtime's run files and
        exported values through the host's /tmp (visible read-only inside since issue 41.1); else /tmp."""
        hidden = self.sandbox.hidden
        if not hidden:
            return None
        root = os.path.join(hidden[0], "scratch")
        try:
            os.makedirs(root, mode=0o700, exist_ok=True)
        except OSError:
            return None
        return root

    def _scratch_dir(self) -> str:
        if self._scratch is None or not os.path.isdir(self._scratch):
            self._scratch = tempfile.mkdtemp(prefix="oh-local-", dir=self._scratch_root())
            programs.distrust(self._scratch)  # the agent's shells write their run files there
        return self._scratch

    def _shell_note(self, note: str) -> None:
        # each agent's first observation carries the notes (issue 41: a second agent got no `[Sandbox: …]`);
        # the live view shows each once
        if note not in self._notes_shown:
            self._notes_shown.add(note)
            if self.on_shell_note is not None:
                self.on_shell_note(note)

    def sandbox_view(self) -> Sandbox:
        return self.sandbox

    def branch_switch(self) -> Switch:
        """Branch mode here runs git itself (nobody can be asked: a question becomes BRANCH_FAILED)."""
        return local_switch(self.workspace)

    def workdir_of(self, ctx: AgentContext) -> str:
        """The agent's working directory if it is (still) an allowed directory, else the workspace."""
        if ctx.workdir:
            real = os.path.realpath(ctx.workdir)
            if self.paths.allowed(real) and os.path.isdir(real):
                return real
        return self.workspace

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
    ) -> Terminal:
        """``notes_said``: the engine notes this agent was told already (its shell group's; a new set: a
        new agent). ``sandboxed`` False only for a run the consent gate allowed to leave the sandbox
        (``Action.unsandboxed``, runtimes/escalation.py; only one-shot shells are made then: extra shells and
        jobs); ``network`` True: the same sandbox with the network on (the gate allowed the network alone,
        ``args.sandbox`` "network")."""
        sandbox = self.sandbox if sandboxed else None
        if sandbox is not None and network:
            sandbox = sandbox.with_network()
        # An approved one-shot (``oneshot``, oneshot.py): a private directory of its own, bound into no other
        # sandbox, and a clean environment; never the scratch directory every agent shell can write.
        scratch = oneshot_files.private_dir(self._scratch_root()) if oneshot else self._scratch_dir()
        return Terminal(
            cwd,
            oneshot_files.base_env(self.env) if oneshot else self.env,
            os.path.join(scratch, "run.sh"),
            scratch,
            oneshot=oneshot,
            max_output_chars=self.max_output_chars,
            no_change_timeout=self.no_change_timeout,
            max_wait=self.max_wait,
            env_snapshot=env_snapshot,
            init_script=init_script,
            wrap_argv=self.wrap_argv,
            on_note=self._shell_note,
            user_shell=self.user_shell and not oneshot,
            startup_timeout=self.shell_startup_timeout,
            notes_said=notes_said if notes_said is not None else set(),
            sandbox=sandbox,
        )

    def watched_shell(self, action: Action, agent: Hashable) -> str | None:
        """A command in the agent's own sandbox (not one the consent gate let out, nor a network one-shot): all it
        can change, it changes from its shells' pid namespaces, which ``sandbox_roots`` names."""
        sandbox = self.sandbox
        if action.kind != "run" or ESCALATE in action.args or sandbox is None or not sandbox.active:
            return None
        return as_context(agent).shell_key if check(sandbox.spec.bwrap).ok else None

    def sandbox_roots(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for key, group in list(self._terminals.items()):
            terms = [group.main, *list(group.extras.values())]
            shells = [s for t in terms for s in (t.shell, t._starting) if isinstance(s, PtyShell)]
            out[str(key)] = [s.pid for s in shells if s.sandbox is not None and s.pid > 0]
        return out

    def shell_cwd(self, ctx: AgentContext) -> str | None:
        """The current directory of the agent's main shell (consent resolves relative paths from it)."""
        group = self._terminals.get(ctx.shell_key)
        return group.main._cwd() if group is not None else None

    def _group(self, ctx: AgentContext) -> ShellGroup:
        key = ctx.shell_key
        group = self._terminals.get(key)
        if group is None:
            scratch = self._scratch_dir()
            # The main shell's exports land here after each command (0600 in the 0700 scratch dir:
            # values may be secrets); extra shells start from it.
            snap = os.path.join(scratch, f"env-{next(self._job_ids)}")
            os.close(os.open(snap, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600))
            main = self.new_terminal(self.workdir_of(ctx), env_snapshot=snap, sandboxed=True)  # always confined
            group = ShellGroup(self, str(key), main)
            self._terminals[key] = group
        return group

    def new_job_id(self, action: Action | None = None) -> str:
        """A fresh command id; on the editor leg the backend names it (top-level ``job_id``) so ids
        stay unique across editors (docs/protocol.md §4)."""
        given = action.raw.get("job_id") if action is not None and self.backend_names_jobs else None
        if (
            isinstance(given, str)
            and JOB_ID.match(given)
            and not any(given in g.jobs or given in g.extras for g in self._terminals.values())
        ):
            return given
        return f"j{next(self._job_ids)}"

    def spool_path(self, job_id: str) -> str:
        if self._spool_dir is None or not self._spool_dir.is_dir():
            # The caller names the root (the backend: the state dir's jobs/); without one, a private
            # temporary directory. 0700 either way: job output may hold secrets.
            if self._spool_root is None:
                self._spool_dir = Path(tempfile.mkdtemp(prefix="oh-jobs-"))
            else:
                os.makedirs(self._spool_root, mode=0o700, exist_ok=True)
                os.chmod(self._spool_root, 0o700)
                self._spool_dir = self._spool_root / f"{os.getpid()}-{os.urandom(4).hex()}"
                self._spool_dir.mkdir(mode=0o700)
        return str(self._spool_dir / f"{job_id}.out")

    def job_event(self, name: str, job: Any) -> None:
        if self.on_job_event is not None:
            try:
                self.on_job_event(name, {**job.record(), "shell": job.shell, "agent_id": job.agent_id})
            except Exception:  # noqa: BLE001 - a listener's bug must not break the job
                log.exception("job event listener failed")

    # ------------------------------------------------------------------ Runtime
    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        ctx = as_context(agent)
        handler = self.HANDLERS.get(action.kind)
        try:
            if handler is not None:
                return await handler(self, action, ctx)
            entry = kinds.get(action.kind)
            if entry is not None and entry.knowledge:  # no language server here (§3.6)
                return knowledge.refuse(action)
            return error_observation(
                action.id, ErrorId.TOOL_UNSUPPORTED, f"The local runtime does not execute {action.kind!r} actions."
            )
        except ToolError as exc:
            return error_observation(action.id, exc.error_id, exc.message)
        except asyncio.CancelledError:
            raise
        except beneath.Escape as exc:  # a symlink swapped in after the check leads out of the root (issue 36)
            err = escape_error(exc)
            return error_observation(action.id, err.error_id, err.message)
        except OSError as exc:
            # The file system refused (permission denied, no space, name too long, read-only, ...):
            # the tool ran and refused -- not a bug of oh.
            what = exc.strerror or type(exc).__name__
            where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
            return error_observation(
                action.id, ErrorId.TOOL_ERROR, f"{what}{where}. Nothing was changed by this {action.kind} action."
            )
        except Exception as exc:  # a bug: keep the connection alive, say where to look
            log.exception("local runtime failed on %s action %s", action.kind, action.id)
            return error_observation(
                action.id,
                ErrorId.SERVER_ERROR,
                f"The local runtime failed on this {action.kind} action ({type(exc).__name__}: {str(exc)[:200]}). "
                "See `oh logs` for details.",
            )

    async def _job(self, action: Action, ctx: AgentContext) -> dict[str, Any]:
        return await self._group(ctx).job_op(action)

    async def _stat_at(self, action: Action, ctx: AgentContext) -> dict[str, Any]:
        return self._stat(action, self.workdir_of(ctx))

    async def _read_at(self, action: Action, ctx: AgentContext) -> dict[str, Any]:
        return await self._read(action, self.workdir_of(ctx))

    async def _change(self, action: Action, ctx: AgentContext) -> dict[str, Any]:
        """write / edit: a proposal in review mode, unless consent allowed this change already (an allow
        rule or the user: ``action.consented``, set only by the consent wrapper, never from a frame)."""
        base = self.workdir_of(ctx)
        if self.proposals is not None and kinds.is_proposal(action.kind, action.args) and not action.consented:
            return await self._propose(action, ctx, base)
        if action.kind == "write":
            return await self._write(action, base)
        return await self._edit(action, base)

    async def _symbols(self, action: Action, ctx: AgentContext) -> dict[str, Any]:
        return await knowledge.symbols_by_ripgrep(action, self.paths.roots)

    # By kind, as the extension's Dispatcher routes to its executors (protocol/kinds.py names the kinds);
    # a kind not here is refused by ``execute``.
    HANDLERS: ClassVar[dict[str, Callable[[Any, Action, AgentContext], Awaitable[dict[str, Any]]]]] = {
        "run": lambda self, action, ctx: self._run(action, ctx),
        "job": _job,
        "stat": _stat_at,
        "read": _read_at,
        "write": _change,
        "edit": _change,
        "symbols": _symbols,
    }

    async def _run(self, action: Action, ctx: AgentContext) -> dict[str, Any]:
        cwd = action.args.get("cwd")
        real_cwd = None
        if cwd:
            rp = self.paths.resolve(cwd, self.workdir_of(ctx))
            if not os.path.isdir(rp.real):
                raise ToolError(f"The working directory {rp.shown} does not exist or is not a directory.")
            real_cwd = rp.real
        if ESCALATE in action.args:
            return await self._run_unsandboxed(action, ctx, real_cwd)
        return await self._group(ctx).run(action, real_cwd, ctx)

    async def _run_unsandboxed(self, action: Action, ctx: AgentContext, cwd: str | None) -> dict[str, Any]:
        """A run asking to leave the sandbox (README "Sandbox"): only when the consent gate allowed this very
        action, in a one-shot shell of its own (an extra shell, or a background job's), never the agent's
        main shell: nothing the agent sends later reaches an unconfined shell."""
        try:
            reason = sandbox_rules.check_escalation(action.args)
        except sandbox_rules.SandboxError as exc:
            return error_observation(action.id, ErrorId.BAD_REQUEST, str(exc))
        group = self._group(ctx)
        network = sandbox_rules.network_only(action.args)
        if not self.sandbox.active or self.sandbox.unconfined or (network and self.sandbox.spec.network):
            obs = await group.run(action, cwd, ctx)
            has = (
                "has the network already" if self.sandbox.active and not self.sandbox.unconfined else "is not sandboxed"
            )
            _prefix(obs, f"[The agent's shell {has}: the command ran as usual.]")
            return obs
        if network:
            return await self._run_with_network(action, ctx, cwd, reason)
        if not action.unsandboxed:
            return error_observation(
                action.id,
                ErrorId.REJECTED,
                "Running a command outside the sandbox needs the user's consent, and this backend has no consent "
                "gate to ask it. Nothing ran. Run it inside the sandbox, or ask the user to run it.",
            )
        if action.args.get("background"):
            obs = await group._start_job(action, cwd, ctx)
        else:
            obs = await group._run_extra(action, cwd, why="it ran outside the sandbox", agent_id=ctx.id)
        ran = "runs" if action.args.get("background") else "ran"  # a job: started, not over
        _prefix(
            obs, f"[This command {ran} OUTSIDE the sandbox, as the user, in a shell of its own (reason: {reason}).]"
        )
        return obs

    async def _run_with_network(
        self, action: Action, ctx: AgentContext, cwd: str | None, reason: str
    ) -> dict[str, Any]:
        """A run allowed the network alone: a one-shot shell in the same sandbox with the network on."""
        if not action.unsandboxed:
            return error_observation(
                action.id,
                ErrorId.REJECTED,
                "Running a command with the network needs the user's consent, and this backend has no consent "
                "gate to ask it. Nothing ran. Run it without the network, or ask the user to run it.",
            )
        group = self._group(ctx)
        if action.args.get("background"):
            obs = await group._start_job(action, cwd, ctx)
        else:
            obs = await group._run_extra(action, cwd, why="it ran with the network", agent_id=ctx.id)
        ran = "runs" if action.args.get("background") else "ran"
        _prefix(obs, f"[This command {ran} in the sandbox WITH THE NETWORK, in a shell of its own (reason: {reason}).]")
        return obs

    async def _read(self, action: Action, base: str) -> dict[str, Any]:
        rp = self.paths.resolve(action.path, base)
        args = action.args
        call = functools.partial(
            read_file,
            rp,
            args.get("start", 0),
            args.get("end", -1),
            args.get("view_range"),
            args.get("encoding") or "auto",
        )
        if self._is_big(rp.real):
            content, extra = await asyncio.to_thread(call)
        else:
            content, extra = call()
        return read_observation(action.id, action.path, content, extra)

    async def _write(self, action: Action, base: str) -> dict[str, Any]:
        rp = self.paths.resolve(action.path, base)
        args = action.args
        content = args["content"]
        call = functools.partial(
            write_file,
            rp,
            content,
            args.get("start", 0),
            args.get("end", -1),
            args.get("encoding"),
            args.get("mode") or "overwrite",
        )
        if len(content) > INLINE_BYTES or self._is_big(rp.real):
            async with self._file_locks.hold(rp.real):  # a threaded edit of the same file must not interleave
                note = await asyncio.to_thread(call)
        else:
            note = call()
        return write_observation(action.id, action.path, note or "")

    def _stat(self, action: Action, base: str) -> dict[str, Any]:
        rp = self.paths.resolve(action.path, base)
        content, info = stat_path(rp)
        return stat_observation(action.id, action.path, content, info)

    async def _edit(self, action: Action, base: str) -> dict[str, Any]:
        rp = self.paths.resolve(action.path, base)
        if action.args.get("command") != "view" or self._is_big(rp.real):
            # One edit of a file at a time (read, change, write back, undo history), in a thread.
            async with self._file_locks.hold(rp.real):
                result = await asyncio.to_thread(self._editor_call, rp, action.args)
        else:
            result = self.editor.execute(rp, action.args, self.paths)
        return _edit_result(action, result)

    def _editor_call(self, rp, args: dict[str, Any]) -> dict[str, Any]:
        return self.editor.execute(rp, args, self.paths)  # its undo history takes its own lock

    async def _propose(self, action: Action, ctx: AgentContext, base: str) -> dict[str, Any]:
        """Review mode: compute the change as it would be made (in a thread: it reads the file and diffs
        it), then wait for the user's decision."""
        assert self.proposals is not None
        rp = self.paths.resolve(action.path, base)
        self.proposals.check_room()  # refuse at once when the pending proposals hold too much already
        async with self._file_locks.hold(rp.real):
            made = await asyncio.to_thread(self._compute_proposal, action, rp)
        if isinstance(made, dict):
            return made  # nothing would change: nothing to review
        before, after, replace, command, obs, on_accept, later = made
        # The proposal holds the new bytes: the action's own copy of them is not kept while it waits
        # (issue 18: a 40 MiB write proposal held the text and the bytes). Nothing reads them again.
        for key in ("content", "file_text", "old_str", "new_str"):
            if isinstance(action.args.get(key), str) and len(action.args[key]) > 4096:
                action.args[key] = ""
        proposal = Proposal(
            self.proposals.new_id(),
            action.id,
            ctx.id,
            ctx.name,
            action.kind,
            command,
            rp.shown,
            rp.real,
            before,
            after,
            replace,
            obs,
            on_accept,
            texts_later=later,
            root=rp.root,
        )
        return await self.proposals.wait(proposal, action)

    def _compute_proposal(self, action: Action, rp) -> dict[str, Any] | tuple:
        """The proposal's parts (worker thread), or the observation when nothing would change."""
        before = file_bytes(rp.real, rp.root)
        args = action.args
        on_accept = None
        if action.kind == "write":
            rec = Recorder()
            mode = args.get("mode") or "overwrite"
            note = write_file(
                rp, args["content"], args.get("start", 0), args.get("end", -1), args.get("encoding"), mode, sink=rec
            )
            obs = write_observation(action.id, action.path, note or "")
            after, replace, command = rec.data, rec.replace, mode
        else:
            editor = ProposingEditor(self.editor.history)
            result = editor.execute(rp, args, self.paths)
            obs = _edit_result(action, result)
            after, command = editor.recorded, str(args.get("command"))
            replace = command != "create"
            history = self.editor.history
            if command == "undo_edit":
                on_accept = lambda: history.pop(rp.real)  # noqa: E731
            elif command in ("str_replace", "insert"):
                old_text = result["old_content"]
                on_accept = lambda: history.push(rp.real, old_text)  # noqa: E731
        if after is None or after == before:
            return obs  # nothing would change (e.g. mode create on an existing file): nothing to review
        # The whole-file texts are not kept while the proposal waits (the bytes are): they are decoded
        # again on accept (issue 18 item 2: a 40 MiB proposal held four copies), when that gives them exactly.
        extras = obs["extras"]
        later = action.kind == "edit" and (
            (
                before is None
                and extras.get("old_content") is None
                or before is not None
                and text_of(before) == extras.get("old_content")
            )
            and text_of(after) == extras.get("new_content")
        )
        if later:
            extras["old_content"] = extras["new_content"] = None
        return before, after, replace, command, obs, on_accept, later

    @staticmethod
    def _is_big(real: str) -> bool:
        try:
            return os.stat(real).st_size > INLINE_BYTES
        except OSError:
            return False

    async def agent_closed(self, agent: Hashable) -> None:
        """A private shell dies with its agent; a shared (X-OH-Shell) one lives until close()."""
        ctx = as_context(agent)
        if not ctx.shared:
            await self.close_shell(ctx.shell_key)

    async def close_shell(self, key: str) -> None:
        """Kill one shell key's shells and jobs (an editor's ``agent_gone``, a cancelled run)."""
        term = self._terminals.pop(key, None)
        if term is not None:
            await self._close_terminals([term])

    async def _close_terminals(self, terms: list[ShellGroup]) -> None:
        task = asyncio.ensure_future(asyncio.gather(*(t.close() for t in terms), return_exceptions=True))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        await asyncio.shield(task)  # a cancelled caller must not abandon the kill half-way

    async def close(self) -> None:
        self.sandbox.close()  # its repository watch (an inotify instance: a per-user limit)
        if self.proposals is not None:
            self.proposals.close()
        terms, self._terminals = list(self._terminals.values()), {}
        await asyncio.gather(self._close_terminals(terms), *list(self._closing), return_exceptions=True)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        if self._spool_dir is not None:
            shutil.rmtree(self._spool_dir, ignore_errors=True)
            self._spool_dir = None
