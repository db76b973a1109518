"""Workspace bootstrap around any runtime (docs/protocol.md §3.14): the ``ensure`` action and the
repository's setup script.

``EnsureService`` wraps the runtime the way ``BranchGuard`` does. It answers ``ensure`` itself: it
reads the project directory (input files' hashes, tools on PATH, the environments' health and
stamps), asks ``oh.protocol.ensure.plan`` what to do, and runs each install command as an ordinary
**background ``run``** through the wrapped runtime, under its own shared shell key ``oh-ensure``:
so the command is a job like any other (a terminal of its own in VS Code, a row in the live view, a
consent question when a consent gate sits inside this wrapper), and the agent follows it with the
``job`` action (ops on a job this service started are routed to its shell, whoever asks). Two agents
asking at once share one run (one task per project directory and target). The stamp is written
after the job succeeded and the environment's interpreter/directory exists, and removed before a
run starts: an interrupted install leaves no stamp, so it is redone, never trusted.

The setup script (``.oh/setup.sh``, else ``.openhands/setup.sh``) runs once per backend, as a job,
before the first action (bounded by that action's own time); its failure is told once, in the
observation of the first action that follows it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import shlex
import subprocess
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from .. import programs
from ..protocol import ensure as rules
from ..protocol import progress
from ..protocol.errors import ErrorId
from ..protocol.events import Action, ensure_observation, error_observation, parse_action
from ..protocol.observation import prepend_note
from ..protocol.paths import within_any
from .base import AgentContext, Runtime, Wrapper, as_context, report

log = logging.getLogger("oh.runtimes.ensure")

SHELL_KEY = "oh-ensure"
WAIT_SLICE = 60.0  # seconds per internal `job wait` (a long install is waited for in slices)
MIN_WAIT = 0.5


@dataclass
class Run:
    """One install in flight (or finished) for (project directory, target)."""

    path: str
    step: rules.Step
    agent: str = "agent"  # the name of the agent whose ensure started it
    # Its progress frames (``Action.on_progress``): those of the ensure that started it, as its consent question
    # and job start are that agent's to hear; an agent joining it hears of it from its own ensure.
    on_progress: Callable[..., None] | None = None
    started: float = field(default_factory=time.monotonic)
    job_id: str | None = None
    task: asyncio.Task | None = None
    result: dict[str, Any] | None = None
    # Done once its job id is known (or the run ended without one): what `wait: false` waits for.
    job_known: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    def known(self) -> None:
        if not self.job_known.done():
            self.job_known.set_result(None)


class EnsureService(Wrapper):
    def __init__(
        self,
        inner: Runtime,
        workspace: str,
        roots: list[str] | None = None,
        *,
        new_id: Callable[[], int],
        release_id: Callable[[int], object] = lambda _leg: None,
        default_timeout: float = 300.0,
        setup: bool = True,
        which: Callable[[str], str | None] = programs.find,
    ) -> None:
        self.inner = inner
        self.workspace = os.path.realpath(workspace)
        self.roots = [os.path.realpath(r) for r in (roots or [self.workspace])]
        self._allowed = within_any(self.roots)
        self._new_id, self._release_id = new_id, release_id
        self.default_timeout = default_timeout
        self._which = which
        self.ctx = AgentContext(id=SHELL_KEY, name="oh ensure", workdir=self.workspace, shell=SHELL_KEY)
        self._runs: dict[tuple[str, str], Run] = {}
        self._jobs: set[str] = set()  # job ids this service started (their `job` ops are routed to its shell)
        self._probes: dict[tuple[str, str], asyncio.Future] = {}  # (tool, path) -> (real path, version), once
        # Setup script: None = not started; the task runs it once per backend.
        # Set by the backend when the agent's shell is sandboxed without network: installs ask for the network
        # (the user is asked, or a `network:` rule allows them); the setup script stays inside, offline.
        self.installs_leave_sandbox = False
        self._setup_open = not setup  # True once the script ended (or there is none) and its note was told
        self._setup_task: asyncio.Task | None = None
        self._setup_notes: list[str] = []  # told once each, to the next action's observation
        self._setup_told_running = False
        self.setup_state: dict[str, Any] = {"state": "pending" if setup else "off"}

    async def close(self) -> None:
        tasks = [r.task for r in self._runs.values() if r.task is not None and not r.task.done()]
        if self._setup_task is not None and not self._setup_task.done():
            tasks.append(self._setup_task)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        await self.inner.close()

    # ------------------------------------------------------------------ actions
    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        if action.kind in ("job", "run") and action.args.get("job_id") in self._jobs:
            # An install or setup job: whoever asks may follow, answer (run is_input) or cancel it (it is the
            # workspace's).
            obs = await self.inner.execute(action, self.ctx)
            if action.args.get("op") == "cancel":
                # Answer once the run took note: an ensure sent after this answer never joins the cancelled run.
                ours = [r.task for r in self._runs.values() if r.job_id == action.args["job_id"] and r.task is not None]
                if self._setup_task is not None and self.setup_state.get("job_id") == action.args["job_id"]:
                    ours.append(self._setup_task)
                if ours:
                    await asyncio.wait(ours, timeout=10)
            return obs
        if not self._setup_open and action.kind != "job":
            await self._setup_wait(action)
        if action.kind == "ensure":
            obs = await self._ensure(action, as_context(agent))
        else:
            obs = await self.inner.execute(action, agent)
        if not self._setup_open:
            self._tell_setup(obs)
        return obs

    async def _call(
        self,
        kind: str,
        args: dict[str, Any],
        timeout: float | None = None,
        who: str | None = None,
        on_progress: Callable[..., None] | None = None,
        own_request: bool = False,
    ) -> dict[str, Any]:
        """One ordinary action of ours through the wrapped runtime (and whatever gate it holds), in the
        ``oh-ensure`` shell; ``who``: the name shown for it (consent questions, the live view);
        ``on_progress``: the progress frames of the agent's action it serves (a consent wait is told there);
        ``own_request``: a request to leave the sandbox that is oh's, refused at once when nobody can answer."""
        leg = self._new_id()
        ctx = self.ctx if who is None else AgentContext(id=SHELL_KEY, name=who, workdir=self.workspace, shell=SHELL_KEY)
        try:
            raw: dict[str, Any] = {"id": leg, "action": kind, "args": args}
            if timeout is not None:
                raw["timeout"] = timeout
            action = parse_action(raw)
            action.on_progress = on_progress
            action.own_request = own_request
            return await self.inner.execute(action, ctx)
        finally:
            self._release_id(leg)

    async def _job(
        self,
        command: str,
        cwd: str,
        on_started: Callable[[str], None],
        who: str,
        unsandboxed: str = "",
        on_progress: Callable[..., None] | None = None,
    ) -> tuple[dict[str, Any] | None, str, str]:
        """Run ``command`` as a background job and wait for its end: (job record, output tail, error text).
        ``unsandboxed``: the reason to run it with the network in the agent shell's sandbox (asked, README
        "Sandbox"; oh's own request: refused at once when nobody can answer); ``on_progress``: as for ``_call``."""
        args: dict[str, Any] = {"command": command, "background": True, "cwd": cwd}
        if unsandboxed:  # the network alone: the install stays in the sandbox otherwise (docs/protocol.md §3.17)
            args.update(sandbox="network", reason=unsandboxed)
        obs = await self._call("run", args, who=who, on_progress=on_progress, own_request=bool(unsandboxed))
        md = (obs.get("extras") or {}).get("metadata") or {}
        jid = md.get("job_id") if obs.get("observation") == "run" else None
        if not jid:
            eid = (obs.get("extras") or {}).get("error_id") or obs.get("observation")
            return None, "", f"{eid}: {_cut(str(obs.get('content', '')), 4000)}"
        self._jobs.add(jid)
        on_started(jid)
        while True:
            wait = {"op": "wait", "job_id": jid, "tail": 4000}
            w = await self._call("job", wait, timeout=WAIT_SLICE, on_progress=on_progress)
            if w.get("observation") != "job":
                eid = (w.get("extras") or {}).get("error_id")
                return (
                    {"job_id": jid, "state": "LOST", "exit_code": None},
                    "",
                    f"{eid}: {_cut(str(w.get('content', '')), 1000)}",
                )
            record = (w.get("extras") or {}).get("job") or {}
            if record.get("state") != "RUNNING":
                return record, str(w.get("content") or ""), ""

    # ------------------------------------------------------------------ ensure
    async def _ensure(self, action: Action, agent: AgentContext) -> dict[str, Any]:
        t0 = time.monotonic()
        args = action.args
        base = agent.workdir or self.workspace
        raw_path = args.get("path") or base
        path = os.path.realpath(os.path.join(base, os.path.expanduser(raw_path)))
        if not self._allowed(path):
            return error_observation(
                action.id,
                ErrorId.PATH_DENIED,
                f"{raw_path} is outside the allowed roots ({', '.join(self.roots)}); nothing was done.",
            )
        if not os.path.isdir(path):
            return error_observation(
                action.id, ErrorId.TOOL_ERROR, f"{raw_path} is not a directory: args.path names the project directory."
            )
        targets = tuple(args.get("targets") or rules.TARGETS)
        tools = {t: p for t in rules.TOOLS if (p := self._which(t))}
        python, python_id = await self._probe(
            "python3", ["-c", "import os,sys;print(os.path.realpath(sys.executable));print(sys.version.split()[0])"]
        )
        _node, node_id = await self._probe("node", ["--version"]) if "node" in tools else (None, "")
        # From here to the runs' registration nothing awaits: two agents asking at once share one run.
        try:
            facts = gather(path, tools, python, f"{python} {python_id}" if python else "", node_id)
        except OSError as exc:
            return error_observation(action.id, ErrorId.TOOL_ERROR, f"Could not read {path}: {exc.strerror or exc}.")
        plan = rules.plan(facts, targets=targets, force=bool(args.get("force")))
        runs: list[Run] = []
        results: list[dict[str, Any] | Run] = []
        for step in plan.steps:
            key = (path, step.target)
            run = self._runs.get(key)
            if run is not None and run.task is not None and not run.task.done():
                runs.append(run)
                results.append(run)  # someone else's run of the same target: shared
                continue
            if step.action == "noop":
                results.append(
                    {
                        "target": step.target,
                        "state": "ready",
                        "did": "nothing",
                        "why": step.why,
                        "ready": dict(step.ready),
                    }
                )
            elif step.action == "refuse":
                results.append(
                    {"target": step.target, "state": "refused", "why": step.why, "installer": step.installer}
                )
            else:
                run = Run(path, step, agent.name, on_progress=action.on_progress)
                run.task = asyncio.ensure_future(self._install(run))
                self._runs[key] = run
                runs.append(run)
                results.append(run)
        budget = max((action.timeout if action.timeout is not None else self.default_timeout) - 1.0, MIN_WAIT)
        _report_joined(action, runs)
        if runs and args.get("wait", True):
            await self._wait_reporting(action, runs, budget)
        elif runs:  # no waiting for the install, only for its job id (the background run answers at once)
            await asyncio.wait([r.job_known for r in runs], timeout=budget)
        out = [r if isinstance(r, dict) else self._view(r) for r in results]
        other = [{"file": f, "why": why} for f, why in plan.other]
        took = round(time.monotonic() - t0, 4)
        extras = {
            "path": path,
            "state": rules.overall(out) if out else "nothing",
            "targets": out,
            "other": other,
            "duration_s": took,
        }
        return ensure_observation(action.id, rules.answer_text(path, out, other, took), extras)

    async def _wait_reporting(self, action: Action, runs: list[Run], budget: float) -> None:
        """Wait for the runs (at most ``budget`` s), telling ``action``'s agent of each as it ends (progress
        ``step``)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget
        pending = {r.task: r for r in runs if r.task is not None}
        while pending and (left := deadline - loop.time()) > 0:
            done, _ = await asyncio.wait(list(pending), timeout=left, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                view = self._view(pending.pop(task))
                report(
                    action,
                    progress.STEP,
                    target=view["target"],
                    job_id=view.get("job_id"),
                    text=rules.target_line(view).split("\n", 1)[0],
                )

    def _view(self, run: Run) -> dict[str, Any]:
        if run.result is not None:
            return dict(run.result)
        step = run.step
        return {
            "target": step.target,
            "state": "running",
            "job_id": run.job_id,
            "command": step.command,
            "why": step.why,
            "installer": step.installer,
            "duration_s": round(time.monotonic() - run.started, 3),
        }

    async def _install(self, run: Run) -> None:
        step = run.step
        env_dir = os.path.join(run.path, rules.VENV if step.target == "python" else rules.NODE_MODULES)
        stamp = os.path.join(env_dir, rules.STAMP_NAME)
        base = {
            "target": step.target,
            "command": step.command,
            "why": step.why,
            "installer": step.installer,
            "inputs": list(step.inputs),
        }
        try:
            if os.path.lexists(env_dir) and not self._allowed(os.path.realpath(env_dir)):
                raise ValueError(
                    f"{env_dir} leads outside the allowed roots (a symlink?); remove it and call ensure again"
                )
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stamp)  # from here until success the environment is not trusted

            def started(jid: str) -> None:
                run.job_id = jid
                run.known()
                # What runs, said at once to the agent that asked (issue 30 #8: `oh ensure` was silent for seconds).
                if run.on_progress is not None:
                    run.on_progress(
                        progress.STEP,
                        target=step.target,
                        job_id=jid,
                        text=f"{step.target}: {step.why}: running `{step.command}` as job {jid}",
                    )

            why = (
                f"oh ensure: `{step.command}` installs dependencies and needs the network (the sandbox has none)"
                if self.installs_leave_sandbox
                else ""
            )
            who = f"ensure for {run.agent}"
            record, tail, error = await self._job(step.command, run.path, started, who, why, run.on_progress)
            state = (record or {}).get("state")
            result = {
                **base,
                "job_id": run.job_id,
                "exit_code": (record or {}).get("exit_code"),
                "duration_s": round(time.monotonic() - run.started, 3),
            }
            if state == "SUCCEEDED" and (not step.check or os.path.exists(os.path.join(run.path, step.check))):
                os.makedirs(env_dir, exist_ok=True)  # npm ci of a package without dependencies makes none
                if not self._allowed(os.path.realpath(env_dir)):  # replaced by a link during the install
                    raise ValueError(f"{env_dir} leads outside the allowed roots (a symlink?); no stamp written")
                write_stamp(stamp, step.stamp)
                result.update(state="ready", did="installed", ready=dict(step.ready))
            elif state == "SUCCEEDED":
                result.update(
                    state="failed",
                    error=f"the command succeeded but {step.check} does not exist",
                    output_tail=tail[-2000:],
                )
            else:
                result.update(
                    state={"CANCELLED": "cancelled", "LOST": "lost"}.get(state or "", "failed"),
                    output_tail=tail[-2000:],
                )
                if error:
                    result["error"] = error
        except asyncio.CancelledError:
            run.result = {**base, "state": "lost", "job_id": run.job_id, "error": "the backend is stopping"}
            run.known()
            raise
        except Exception as exc:  # noqa: BLE001 - reported to the agents waiting, never a crash
            log.exception("ensure %s in %s failed", step.target, run.path)
            result = {
                **base,
                "state": "failed",
                "job_id": run.job_id,
                "error": f"{type(exc).__name__}: {str(exc)[:300]}",
            }
        run.result = result
        run.known()

    async def _probe(self, tool: str, argv: list[str]) -> tuple[str | None, str]:
        """(first line, second line or first line) of ``tool argv``: an interpreter's real path and version.
        Once per tool path and backend (concurrent first calls share one probe): a no-op ensure runs no process."""
        path = self._which(tool)
        if path is None:
            return None, ""
        key = (tool, path)
        probe = self._probes.get(key)
        if probe is None:

            def run() -> tuple[str, str]:
                try:
                    out = subprocess.run(
                        [path, *argv],
                        capture_output=True,
                        text=True,
                        timeout=30,
                        stdin=subprocess.DEVNULL,
                        env=programs.env(),
                    ).stdout.split()
                except (OSError, subprocess.SubprocessError):
                    return "", ""
                return (out[0], out[1]) if len(out) >= 2 else (path, out[0]) if out else ("", "")

            probe = self._probes[key] = asyncio.ensure_future(asyncio.to_thread(run))
        hit = await asyncio.shield(probe)  # a done probe answers at once; a running one is bounded by its 30 s
        first, version = hit
        return (first or None), version

    # ------------------------------------------------------------------ setup script
    def find_setup(self) -> str | None:
        for rel in rules.SETUP_SCRIPTS:
            if os.path.isfile(os.path.join(self.workspace, rel)):
                return rel
        return None

    async def _setup_wait(self, action: Action) -> None:
        """Before an action: start the script (once) and wait for it, at most half the action's budget."""
        if self._setup_task is None:
            self._setup_task = asyncio.ensure_future(self._setup(action.on_progress))
        if not self._setup_task.done():
            budget = action.timeout if action.timeout is not None else self.default_timeout
            await asyncio.wait([self._setup_task], timeout=max(budget / 2, MIN_WAIT))
        if not self._setup_task.done() and not self._setup_told_running:
            self._setup_told_running = True
            self._setup_notes.append(
                rules.setup_note(self.setup_state.get("script", ""), {**self.setup_state, "state": "RUNNING"})
            )

    def _tell_setup(self, obs: dict[str, Any]) -> None:
        """The pending notes go into this observation, unless it is a file's content (a read: the note would
        read as part of the file); once the script ended and all was told, actions pass straight through."""
        if self._setup_notes and obs.get("observation") != "read":
            notes, self._setup_notes = self._setup_notes, []
            prepend_note(obs, "\n".join(notes))
        if self._setup_task is not None and self._setup_task.done() and not self._setup_notes:
            self._setup_open = True

    async def _setup(self, on_progress: Callable[..., None] | None) -> None:
        """Run the workspace's setup script once (a job); ``on_progress``: the first action's, which waits for it."""
        script = self.find_setup()
        if script is None:
            self.setup_state = {"state": "none"}
            return
        self.setup_state = {"state": "RUNNING", "script": script}
        try:
            record, tail, error = await self._job(
                f"bash {shlex.quote(script)}",
                self.workspace,
                lambda jid: self.setup_state.update(job_id=jid),
                "workspace setup",
                on_progress=on_progress,
            )
        except Exception as exc:  # noqa: BLE001 - a failed setup is told to the agent, never a crash
            log.exception("setup script failed to run")
            record, tail, error = None, "", f"{type(exc).__name__}: {exc}"
        if record is None:
            self.setup_state = {"state": "ERROR", "script": script, "error": error}
            self._setup_notes.append(rules.setup_note(script, None, error=error))
            return
        self.setup_state = {
            "script": script,
            **{k: record.get(k) for k in ("job_id", "state", "exit_code", "duration_s")},
        }
        self._setup_notes.append(rules.setup_note(script, record, tail if record.get("state") != "SUCCEEDED" else ""))


# --------------------------------------------------------------------------- disk
def gather(path: str, tools: dict[str, str], python: str | None, python_id: str, node_id: str) -> rules.Facts:
    """The facts ``rules.plan`` needs, from the project directory: top-level inputs only (stat + read)."""
    files: dict[str, str] = {}
    pyproject: dict[str, bool] = {}
    with os.scandir(path) as entries:
        for entry in entries:
            if not rules.is_input(entry.name) or not entry.is_file():
                continue
            if entry.name in rules.OTHER_FILES:
                files[entry.name] = ""
                continue
            with open(entry.path, "rb") as fh:
                data = fh.read()
            files[entry.name] = hashlib.sha256(data).hexdigest()
            if entry.name == "pyproject.toml":
                try:
                    doc = tomllib.loads(data.decode("utf-8", "replace"))
                except tomllib.TOMLDecodeError:
                    doc = {}
                pyproject = {
                    "project": "project" in doc,
                    "build": "build-system" in doc,
                    "poetry": "poetry" in (doc.get("tool") or {}),
                }
    venv = os.path.join(path, rules.VENV)
    if (
        os.path.isfile(os.path.join(venv, "bin", "python"))
        and os.access(os.path.join(venv, "bin", "python"), os.X_OK)
        and os.path.isfile(os.path.join(venv, "pyvenv.cfg"))
    ):
        venv_state = "ok"
    else:
        venv_state = "broken" if os.path.lexists(venv) else "missing"
    node_modules = os.path.isdir(os.path.join(path, rules.NODE_MODULES))
    stamps = {
        "python": read_stamp(os.path.join(venv, rules.STAMP_NAME)),
        "node": read_stamp(os.path.join(path, rules.NODE_MODULES, rules.STAMP_NAME)),
    }
    return rules.Facts(
        files=files,
        pyproject=pyproject,
        python=python,
        python_id=python_id,
        node_id=node_id,
        tools=tools,
        venv=venv_state,
        node_modules=node_modules,
        stamps=stamps,
    )


def read_stamp(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read(65536))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_stamp(path: str, stamp: Any) -> None:
    """Atomically (a new temporary file, created exclusively, renamed): a stamp is either whole or absent."""
    fd, tmp = tempfile.mkstemp(prefix=".oh-ensure.", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(dict(stamp), fh)
            fh.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


__all__ = ["EnsureService", "gather", "read_stamp", "write_stamp"]


def _report_joined(action: Action, runs: list[Run]) -> None:
    """Tell ``action``'s agent of each run it joined: another agent's install of the same target (its start was
    said there)."""
    for r in runs:
        if r.job_id is not None:
            report(
                action,
                progress.STEP,
                target=r.step.target,
                job_id=r.job_id,
                text=f"{r.step.target}: waiting for job {r.job_id} (`{r.step.command}`), started by {r.agent}",
            )


def _cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, visibly cut. The whole message fits in the usual case: at 500
    characters a refusal's own fix was cut mid-rule ('network: .venv/bin/python -m pip install ... -r'),
    which a user copied as is."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
