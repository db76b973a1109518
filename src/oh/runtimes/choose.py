"""Which runtime a backend runs, by name: the one place that knows the names (``oh start --runtime``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..protocol import runtimenames
from .base import Runtime
from .editor_link import EditorLink


@dataclass(frozen=True)
class RuntimeSettings:
    """What a runtime is built from: the backend's settings (it reads no configuration itself)."""

    workspace: str
    allowed_roots: list[str]
    editor_timeout: float = 30.0
    max_shells: int = 8
    job_retention: float = 3600.0
    spool_dir: str | None = None
    review: bool = False
    review_timeout: float = 600.0
    env: dict[str, str] | None = None  # the agent shells' environment (None: this process's, cleaned)
    user_shell: bool | None = None  # the agent's shell (docs/protocol.md §3.4.1); None: the local runtime's default
    shell_startup_timeout: float | None = None
    sandbox: Any = None  # protocol.sandbox.Spec; None: the local runtime's default (README "Sandbox")
    sandbox_hidden: tuple[str, ...] = ()  # oh's own directories, hidden in the sandbox


def _local(s: RuntimeSettings, link: EditorLink) -> Runtime:
    from .local import LocalRuntime

    return LocalRuntime(
        s.workspace,
        s.allowed_roots,
        max_shells=s.max_shells,
        job_retention=s.job_retention,
        spool_dir=s.spool_dir,
        review=s.review,
        review_timeout=s.review_timeout,
        env=s.env,
        user_shell=s.user_shell,
        shell_startup_timeout=s.shell_startup_timeout,
        sandbox=s.sandbox,
        sandbox_hidden=s.sandbox_hidden,
    )


def _vscode(s: RuntimeSettings, link: EditorLink) -> Runtime:
    from .vscode import VscodeRuntime

    return VscodeRuntime(
        link,
        s.workspace,
        s.editor_timeout,
        allowed_roots=s.allowed_roots,
        job_retention=s.job_retention,
        review=s.review,
        sandbox=s.sandbox,
    )


RUNTIMES = {"local": _local, "vscode": _vscode}  # the names: protocol/runtimenames.py (a test holds them equal)


def make_runtime(name: str, settings: RuntimeSettings, link: EditorLink) -> Runtime:
    """The runtime called ``name``; ``link`` is the backend's editor connection (the vscode runtime sends through
    it)."""
    make = RUNTIMES.get(name)
    if make is None:
        raise ValueError(runtimenames.unknown(name))
    return make(settings, link)
