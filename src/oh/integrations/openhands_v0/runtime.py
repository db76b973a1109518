"""``VsCodeRuntime``: an ``openhands.runtime.base.Runtime`` whose run/read/write/edit go to the oh backend
serving the workspace (VS Code with ``oh start --runtime vscode``, or oh's local runtime).

Actions are encoded with OpenHands' own ``event_to_dict`` and observations decoded with its own
``event_from_dict``: oh speaks that format on the wire, so nothing is re-modelled here. What oh has no
action for (IPython, browsing, MCP) answers with an ErrorObservation that says so.
"""

from __future__ import annotations

import mimetypes
import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from openhands.core.config.mcp_config import MCPConfig, MCPStdioServerConfig
from openhands.core.exceptions import AgentRuntimeDisconnectedError, AgentRuntimeUnavailableError
from openhands.events.action import (
    BrowseInteractiveAction,
    BrowseURLAction,
    CmdRunAction,
    FileEditAction,
    FileReadAction,
    FileWriteAction,
    IPythonRunCellAction,
)
from openhands.events.action.mcp import MCPAction
from openhands.events.event import FileReadSource
from openhands.events.observation import ErrorObservation, FileReadObservation, Observation
from openhands.events.observation.reject import UserRejectObservation
from openhands.events.serialization import event_from_dict, event_to_dict
from openhands.runtime.base import Runtime
from openhands.runtime.runtime_status import RuntimeStatus

from ...client import OhClientError, SyncClient
from ...client import actions as oh_actions
from ...sessions import Session
from ..discovery import find_session

CLIENT_NAME = "openhands-v0"
_RISK_LABELS = {-1: "UNKNOWN", 0: "LOW", 1: "MEDIUM", 2: "HIGH"}
_IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp"}
_WAIT_SLACK = 60.0
_DEFAULT_WAIT = 300.0


def _unsupported(what: str, instead: str) -> ErrorObservation:
    return ErrorObservation(f"{what} is not supported by the oh VS Code runtime. {instead}")


_OH_EXTRAS = frozenset({"version", "blind", "stale_base", "seen_version", "changed_by", "changed_at", "claim"})


class VsCodeRuntime(Runtime):
    """Executes an OpenHands V0 agent's actions through the oh backend serving ``config.workspace_base``
    (default: the current directory): in VS Code when that backend is ``oh start --runtime vscode``."""

    def __init__(
        self,
        config,
        event_stream,
        llm_registry,
        sid: str = "default",
        plugins=None,
        env_vars=None,
        status_callback=None,
        attach_to_existing: bool = False,
        headless_mode: bool = True,
        user_id=None,
        git_provider_tokens=None,
    ) -> None:
        # headless_mode=True always: the base class would otherwise add a VS Code *server* plugin, and this
        # runtime already is VS Code.
        super().__init__(
            config,
            event_stream,
            llm_registry,
            sid=sid,
            plugins=plugins,
            env_vars=env_vars,
            status_callback=status_callback,
            attach_to_existing=attach_to_existing,
            headless_mode=True,
            user_id=user_id,
            git_provider_tokens=git_provider_tokens,
        )
        self._workspace = os.path.realpath(getattr(config, "workspace_base", None) or os.getcwd())
        self._client: SyncClient | None = None
        # Several agents (docs/protocol.md §3.18): the version of each file this runtime last read or wrote, sent
        # as a write/edit's if_version (the backend's own memory ends with its connection; this one does not).
        self._versions: dict[str, str] = {}
        self._session: Session | None = None
        self._runtime_initialized = False

    # ---- lifecycle -------------------------------------------------------------------------------
    async def connect(self) -> None:
        self.set_runtime_status(RuntimeStatus.STARTING_RUNTIME)
        self._connect()
        if not self.attach_to_existing:
            import asyncio

            await asyncio.to_thread(self.setup_initial_env)
        self._runtime_initialized = True
        self.set_runtime_status(RuntimeStatus.RUNTIME_STARTED)

    def _connect(self) -> SyncClient:
        if self._client is not None and not self._client.closed:
            return self._client
        session = find_session(self._workspace)
        if session is None:
            raise AgentRuntimeUnavailableError(
                f"No oh backend serves {self._workspace}. Start one there with `oh start --runtime vscode` "
                "(or `--runtime local`), then retry."
            )
        try:
            self._client = SyncClient.connect(session.url, session.token, name=CLIENT_NAME, workdir=self._workspace)
        except OhClientError as exc:
            raise AgentRuntimeUnavailableError(
                f"Cannot connect to the oh backend for {self._workspace}: {exc}"
            ) from None
        self._session = session
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        self._runtime_initialized = False
        super().close()

    @property
    def workspace_root(self) -> Path:
        return Path(self._workspace)

    @property
    def allowed_roots(self) -> list[str]:
        roots = list(getattr(self._session, "allowed_roots", None) or [])
        return [os.path.realpath(r) for r in ([self._workspace] + roots)]

    def _setup_git_config(self) -> None:
        # The user's own machine and git identity: never rewrite their global git config.
        return

    def maybe_run_setup_script(self) -> None:
        # The oh backend runs the workspace's .openhands/setup.sh (or .oh/setup.sh) itself, once per backend,
        # as a job before the first action (docs/protocol.md §3.14): sourcing it here as well would run it twice.
        return

    def add_env_vars(self, env_vars: dict[str, Any]) -> None:
        # Exported in the agent's oh shell only (args.env, kept out of oh's trace); never written to ~/.bashrc.
        if not env_vars:
            return
        env = {str(k).upper(): str(v) for k, v in env_vars.items()}
        obs = self._send(oh_actions.run(":", env=env), None)
        if obs.get("observation") != "run":
            raise RuntimeError(f"Failed to add env vars {sorted(env)}: {obs.get('content')}")

    # ---- the wire --------------------------------------------------------------------------------
    def _send(self, frame: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        client = self._connect()
        frame = dict(frame)
        frame["id"] = client.next_id()  # ours, unique on this connection (event-stream ids may be unset)
        try:
            return client.send(frame, timeout=(timeout or _DEFAULT_WAIT) + _WAIT_SLACK + self._review_wait(frame))
        except OhClientError as exc:
            self._client = None
            raise AgentRuntimeDisconnectedError(f"Lost the oh backend: {exc}") from None
        except TimeoutError:
            return {
                "observation": "error",
                "content": "The oh backend did not answer in time; check it with `oh status`.",
                "extras": {"error_id": "TIMEOUT"},
            }

    def _review_wait(self, frame: dict[str, Any]) -> float:
        """Review mode: a write/edit also waits for the user's decision (the backend's deadline grows by as much);
        consent (issue 19): any action may wait for the user's yes, up to the backend's approval_timeout."""
        wait = float(getattr(self._session, "approval_timeout", 0.0) or 0.0)
        kind = frame.get("action")
        if kind == "write" or kind == "edit" and (frame.get("args") or {}).get("command") != "view":
            wait += float(getattr(self._session, "review_timeout", 0.0) or 0.0)
        return wait

    def _frame(self, action) -> dict[str, Any]:
        d = event_to_dict(action)
        for k in ("id", "timestamp", "source", "message", "tool_call_metadata", "llm_metrics"):
            d.pop(k, None)
        risk = (d.get("args") or {}).get("security_risk")
        if isinstance(risk, int) and risk in _RISK_LABELS and risk != -1:
            d["security_risk"] = _RISK_LABELS[risk]
        return d

    @staticmethod
    def _decode(obs: dict[str, Any]) -> Observation:
        # The event stream numbers observations itself (it refuses an event that already has an id).
        if obs.get("observation") == "error" and (obs.get("extras") or {}).get("error_id") == "REJECTED":
            # The user (or a consent rule, or nobody in time) refused: NOT executed. OpenHands' own shape for
            # a user's rejection, which its agents already handle (confirmation mode).
            return UserRejectObservation(content=str(obs.get("content") or "The user rejected this action."))
        clean = {k: v for k, v in obs.items() if k not in ("id", "cause", "timestamp", "source")}
        if isinstance(clean.get("extras"), dict):
            # oh's own extras (§3.18: version, blind, stale_base; the STALE details): OpenHands' deserializer
            # refuses keys its observation classes do not have.
            clean["extras"] = {k: v for k, v in clean["extras"].items() if k not in _OH_EXTRAS}
        return event_from_dict(clean)  # type: ignore[return-value]

    def _do(self, action) -> Observation:
        frame = self._frame(action)
        args = frame.get("args") or {}
        path = args.get("path") if frame.get("action") in ("read", "write", "edit") else None
        changes = frame.get("action") == "write" or (frame.get("action") == "edit" and args.get("command") != "view")
        if changes and isinstance(path, str) and path in self._versions:
            args["if_version"] = self._versions[path]
        obs = self._send(frame, getattr(action, "timeout", None))
        self._note_version(path, obs)
        return self._decode(obs)

    def _note_version(self, path: Any, obs: dict[str, Any]) -> None:
        version = (obs.get("extras") or {}).get("version")
        if isinstance(path, str) and isinstance(version, str) and obs.get("observation") != "error":
            self._versions[path] = version

    # ---- actions ---------------------------------------------------------------------------------
    def run(self, action: CmdRunAction) -> Observation:
        return self._do(action)

    def read(self, action: FileReadAction) -> Observation:
        if action.impl_source == FileReadSource.OH_ACI:
            # The agent's editor `view`: the editor's numbered view / directory listing, not raw text.
            frame = oh_actions.edit(action.path, "view", view_range=action.view_range)
            obs = self._send(frame, None)
            self._note_version(action.path, obs)
            if obs.get("observation") == "error":
                return self._decode(obs)
            return FileReadObservation(
                content=obs.get("content") or "",
                path=(obs.get("extras") or {}).get("path") or action.path,
                impl_source=FileReadSource.OH_ACI,
            )
        if Path(action.path).suffix.lower() in _IMAGE_EXTENSIONS:
            # As OpenHands' own runtime does: an image is read as a data URL the agent can show.
            obs = self._send(oh_actions.read(action.path, encoding="base64"), None)
            if obs.get("observation") != "read":
                return self._decode(obs)
            mime = (obs.get("extras") or {}).get("mime_type") or mimetypes.guess_type(action.path)[0] or "image/png"
            return FileReadObservation(content=f"data:{mime};base64,{obs.get('content') or ''}", path=action.path)
        return self._do(action)

    def write(self, action: FileWriteAction) -> Observation:
        return self._do(action)

    def edit(self, action: FileEditAction) -> Observation:
        if action.impl_source != FileReadSource.OH_ACI:
            return _unsupported("The LLM-based file editor", "Use the str_replace editor (impl_source oh_aci).")
        return self._do(action)

    def run_ipython(self, action: IPythonRunCellAction) -> Observation:
        return _unsupported("IPython", "Run `python -c ...` or a script with a run action instead.")

    def browse(self, action: BrowseURLAction) -> Observation:
        return _unsupported("Browsing", "Fetch pages with a run action (e.g. curl) instead.")

    def browse_interactive(self, action: BrowseInteractiveAction) -> Observation:
        return _unsupported("Interactive browsing", "Fetch pages with a run action (e.g. curl) instead.")

    async def call_tool_mcp(self, action: MCPAction) -> Observation:
        return _unsupported("MCP tools", "Use run/read/write/edit actions.")

    def get_mcp_config(self, extra_stdio_servers: list[MCPStdioServerConfig] | None = None) -> MCPConfig:
        return MCPConfig(sse_servers=[], stdio_servers=[], shttp_servers=[])

    # ---- files (confined to the backend's allowed roots) ----------------------------------------
    def _confined(self, path: str) -> str:
        full = os.path.realpath(path if os.path.isabs(path) else os.path.join(self._workspace, path))
        if not any(full == r or full.startswith(r.rstrip(os.sep) + os.sep) for r in self.allowed_roots):
            raise PermissionError(
                f"{path} is outside the oh backend's allowed roots ({', '.join(self.allowed_roots)}); "
                "add a root with `oh start --allow DIR`."
            )
        return full

    def copy_to(self, host_src: str, sandbox_dest: str, recursive: bool = False) -> None:
        if not os.path.exists(host_src):
            raise FileNotFoundError(f"Source path '{host_src}' does not exist.")
        dest = self._confined(sandbox_dest)
        if os.path.isdir(host_src):
            if not recursive:
                raise IsADirectoryError(f"{host_src} is a directory; pass recursive=True to copy it.")
            shutil.copytree(host_src, os.path.join(dest, os.path.basename(host_src.rstrip(os.sep))), dirs_exist_ok=True)
        elif (
            os.path.isdir(dest)
            or sandbox_dest.endswith(("/", os.sep))
            or (not os.path.exists(dest) and "." not in os.path.basename(dest))
        ):
            # A directory (existing, spelled with a trailing slash, or a new extension-less name): copy into it,
            # as OpenHands' own runtimes do.
            os.makedirs(dest, exist_ok=True)
            shutil.copy2(host_src, os.path.join(dest, os.path.basename(host_src)))
        else:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(host_src, dest)

    def list_files(self, path: str | None = None) -> list[str]:
        full = self._confined(path or self._workspace)
        if not os.path.isdir(full):
            return []
        entries = os.listdir(full)
        dirs = sorted((e + "/" for e in entries if os.path.isdir(os.path.join(full, e))), key=str.lower)
        files = sorted((e for e in entries if not os.path.isdir(os.path.join(full, e))), key=str.lower)
        return dirs + files

    def copy_from(self, path: str) -> Path:
        source = self._confined(path)
        if not os.path.exists(source):
            raise FileNotFoundError(f"Path not found: {path}")
        fd, name = tempfile.mkstemp(suffix=".zip")
        os.close(fd)
        with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as zf:
            if os.path.isdir(source):
                for root, _dirs, files in os.walk(source):
                    for f in files:
                        p = os.path.join(root, f)
                        zf.write(p, os.path.relpath(p, source))
            else:
                zf.write(source, os.path.basename(source))
        return Path(name)
