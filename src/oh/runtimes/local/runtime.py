"""``LocalRuntime``: executes actions on this machine. There is no sandbox: the agent's shell commands
run as this user; only the file actions are confined to the allowed roots."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Hashable, Mapping, Sequence

from ...protocol.errors import ErrorId, ToolError
from ...protocol.events import Action, edit_observation, error_observation, read_observation, write_observation
from ..base import AgentContext, Runtime, as_context
from ...protocol.knowledge import KNOWLEDGE_KINDS
from . import knowledge
from .editor import FileEditor
from .files import read_file, write_file
from .paths import PathPolicy
from .shell import SOURCE_FILE_TEXT
from .terminal import Terminal

log = logging.getLogger("oh.runtimes.local")

NO_CHANGE_TIMEOUT = 30.0  # OpenHands' soft timeout: no new output for this long
MAX_WAIT = 240.0  # a run without timeout returns by then (the backend's default deadline is 300 s)
INLINE_BYTES = 1 << 20  # smaller files are read/written on the event loop; bigger ones in a thread
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
    ) -> None:
        self.paths = PathPolicy(workspace, allowed_roots)
        self.workspace = self.paths.workspace
        self.max_output_chars = max_output_chars
        # None: OpenHands' rule (return after 30 s without new output); a number: that many seconds.
        self.no_change_timeout = NO_CHANGE_TIMEOUT if default_run_timeout is None else float(default_run_timeout)
        self.max_wait = MAX_WAIT
        self.env = shell_environment(env)
        self.editor = FileEditor(max_output_chars)
        self._terminals: dict[Hashable, Terminal] = {}
        # Shells being torn down (an agent left). close() waits for them too, so a backend stop never
        # returns while a departed agent's processes are still being killed.
        self._closing: set[asyncio.Task] = set()
        self._scratch: str | None = None

    # ------------------------------------------------------------------ plumbing
    def _scratch_dir(self) -> str:
        if self._scratch is None or not os.path.isdir(self._scratch):
            self._scratch = tempfile.mkdtemp(prefix="oh-local-")
        src = os.path.join(self._scratch, "run.sh")
        if not os.path.exists(src):
            with open(src, "w") as f:
                f.write(SOURCE_FILE_TEXT)
        return self._scratch

    def workdir_of(self, ctx: AgentContext) -> str:
        """The agent's working directory if it is (still) an allowed directory, else the workspace."""
        if ctx.workdir:
            real = os.path.realpath(ctx.workdir)
            if self.paths.allowed(real) and os.path.isdir(real):
                return real
        return self.workspace

    def _terminal(self, ctx: AgentContext) -> Terminal:
        key = ctx.shell_key
        term = self._terminals.get(key)
        if term is None:
            scratch = self._scratch_dir()
            term = Terminal(
                self.workdir_of(ctx),
                self.env,
                os.path.join(scratch, "run.sh"),
                scratch,
                max_output_chars=self.max_output_chars,
                no_change_timeout=self.no_change_timeout,
                max_wait=self.max_wait,
            )
            self._terminals[key] = term
        return term

    # ------------------------------------------------------------------ Runtime
    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        ctx = as_context(agent)
        try:
            if action.kind == "run":
                return await self._run(action, ctx)
            base = self.workdir_of(ctx)
            if action.kind == "read":
                return await self._read(action, base)
            if action.kind == "write":
                return await self._write(action, base)
            if action.kind == "edit":
                return await self._edit(action, base)
            if action.kind in KNOWLEDGE_KINDS:  # no language server here (§3.6)
                if action.kind == "symbols":
                    return await knowledge.symbols_by_ripgrep(action, self.paths.roots)
                return knowledge.refuse(action)
            return error_observation(action.id, ErrorId.TOOL_UNSUPPORTED, f"The local runtime does not execute {action.kind!r} actions.")
        except ToolError as exc:
            return error_observation(action.id, exc.error_id, exc.message)
        except asyncio.CancelledError:
            raise
        except OSError as exc:
            # The file system refused (permission denied, no space, name too long, read-only, ...):
            # the tool ran and refused -- not a bug of oh.
            what = exc.strerror or type(exc).__name__
            where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
            return error_observation(action.id, ErrorId.TOOL_ERROR, f"{what}{where}. Nothing was changed by this {action.kind} action.")
        except Exception as exc:  # a bug: keep the connection alive, say where to look
            log.exception("local runtime failed on %s action %s", action.kind, action.id)
            return error_observation(
                action.id,
                ErrorId.SERVER_ERROR,
                f"The local runtime failed on this {action.kind} action ({type(exc).__name__}: {str(exc)[:200]}). "
                "See `oh logs` for details.",
            )

    async def _run(self, action: Action, ctx: AgentContext) -> dict[str, Any]:
        cwd = action.args.get("cwd")
        real_cwd = None
        if cwd:
            rp = self.paths.resolve(cwd, self.workdir_of(ctx))
            if not os.path.isdir(rp.real):
                raise ToolError(f"The working directory {rp.shown} does not exist or is not a directory.")
            real_cwd = rp.real
        return await self._terminal(ctx).run(action, real_cwd)

    async def _read(self, action: Action, base: str) -> dict[str, Any]:
        rp = self.paths.resolve(action.path, base)
        args = action.args
        call = (read_file, rp, args.get("start", 0), args.get("end", -1), args.get("view_range"), args.get("encoding") or "auto")
        if self._is_big(rp.real):
            content, extra = await asyncio.to_thread(*call)
        else:
            content, extra = call[0](*call[1:])
        return read_observation(action.id, action.path, content, extra)

    async def _write(self, action: Action, base: str) -> dict[str, Any]:
        rp = self.paths.resolve(action.path, base)
        args = action.args
        content = args["content"]
        call = (write_file, rp, content, args.get("start", 0), args.get("end", -1), args.get("encoding"))
        if len(content) > INLINE_BYTES or self._is_big(rp.real):
            await asyncio.to_thread(*call)
        else:
            call[0](*call[1:])
        return write_observation(action.id, action.path)

    async def _edit(self, action: Action, base: str) -> dict[str, Any]:
        rp = self.paths.resolve(action.path, base)
        if self._is_big(rp.real):
            result = await asyncio.to_thread(self.editor.execute, rp, action.args, self.paths)
        else:
            result = self.editor.execute(rp, action.args, self.paths)
        return edit_observation(
            action.id,
            action.path,
            result["content"],
            prev_exist=result["prev_exist"],
            old_content=result["old_content"],
            new_content=result["new_content"],
            diff=result["diff"],
        )

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
        """Kill one shell and what runs in it (an editor's ``agent_gone``, a cancelled run)."""
        term = self._terminals.pop(key, None)
        if term is not None:
            await self._close_terminals([term])

    async def _close_terminals(self, terms: list[Terminal]) -> None:
        task = asyncio.ensure_future(asyncio.gather(*(t.close() for t in terms), return_exceptions=True))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        await asyncio.shield(task)  # a cancelled caller must not abandon the kill half-way

    async def close(self) -> None:
        terms, self._terminals = list(self._terminals.values()), {}
        await asyncio.gather(self._close_terminals(terms), *list(self._closing), return_exceptions=True)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
