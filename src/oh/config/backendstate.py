"""Where a backend process keeps its state, and what follows from its settings (issue 38 item 3): one function
both the launcher (``launcher/backendconfig.py``) and a hand-started ``python -m oh.backend`` apply to a
``BackendConfig``, so the two never differ. Nothing here reads the environment but oh's own directories
(``OH_HOME``, through ``paths``)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

from ..protocol.backendconfig import BackendConfig
from ..protocol.consent import Policy
from ..protocol.sandbox import Spec
from . import paths

SANDBOXED_RUNTIMES = ("local", "vscode")  # both apply the spec (the local runtime's shells, an engine host's)


def oh_dirs() -> tuple[str, ...]:
    """oh's own directories: consent asks before a command touches them; the sandbox hides them."""
    return tuple(str(p) for p in dict.fromkeys((paths.state_dir(), paths.config_dir(), paths.sessions_dir())))


def workspace_key(workspace: str) -> str:
    return hashlib.sha256(os.path.realpath(workspace).encode("utf-8", "surrogateescape")).hexdigest()[:24]


def share_book(workspace: str) -> Path:
    """The shares on disk (backend/sharestore.py): they outlive `oh stop; oh start`."""
    return paths.state_dir() / "sharebook" / f"{workspace_key(workspace)}.json"


def history_dir(workspace: str) -> str:
    """One timeline per workspace under the state dir (0700), never in the workspace or its .git."""
    return str(paths.ensure_private_dir(paths.state_dir() / "history" / workspace_key(workspace)))


def finish(config: BackendConfig, *, trace: bool, history: bool, socket: bool = True) -> BackendConfig:
    """``config`` with the process's state paths (trace, job spools, history, shares), oh's hidden directories,
    the sandbox made explicit (None: the settings' default, never the environment's) and the consent gate a
    sandboxed shell needs even at level never (a run asking to leave the sandbox is always asked)."""
    workspace = os.path.realpath(config.workspace)
    hidden = oh_dirs()
    sandbox = config.sandbox if config.sandbox is not None else Spec()
    gated = sandbox.on and config.runtime in SANDBOXED_RUNTIMES
    consent = config.consent
    if consent is not None and consent.level == "never" and not consent.rules and not gated:
        consent = None  # asks for nothing: no guard at all
    elif consent is None and gated:
        consent = Policy("never", (), workspace, os.path.expanduser("~"), hidden)
    elif consent is not None:
        consent = dataclasses.replace(consent, workspace=workspace, protected=hidden)
    worktrees = config.worktree_root
    roots = config.allowed_roots
    if config.isolate != "off":  # the agents' worktrees (issue 37): outside the repository and the state dir
        worktrees = worktrees or str(paths.ensure_worktrees_dir(workspace))
        roots = [*(roots or []), worktrees] if worktrees not in (roots or []) else roots
    return dataclasses.replace(
        config,
        workspace=workspace,
        worktree_root=worktrees,
        allowed_roots=roots,
        trace_path=paths.traces_dir() / f"{config.instance_id}.jsonl" if trace else None,
        spool_dir=str(paths.state_dir() / "jobs"),
        history_dir=history_dir(workspace) if history else None,
        sandbox=sandbox,
        sandbox_hidden=hidden,
        consent=consent,
        review=config.review or (consent is not None and consent.level in ("changes", "all")),
        unix_socket=socket,
        share_book=str(share_book(workspace)),
    )
