"""``oh attach``: run the headless reference editor against a running backend."""

from __future__ import annotations

import os
from typing import Optional

import typer

from ._common import NOT_RUNNING, complete_instances, die
from ._io import Streams


def attach(
    workspace: Optional[str] = typer.Option(
        None, "--workspace", "-C", help="Attach to the backend serving this directory (default: cwd)."
    ),
    instance: Optional[str] = typer.Option(
        None,
        "--instance",
        "-i",
        help="Attach to this backend (instance id or prefix).",
        autocompletion=complete_instances,
    ),
    once: bool = typer.Option(False, "--once", help="Exit when disconnected instead of reconnecting."),
) -> None:
    """Act as the editor for a backend (headless: actions run on this machine, like the local runtime).

    Useful to try `--runtime vscode` without VS Code, and in tests. Reconnects after a token
    rotation; exits when the backend stops. Exit codes: 0 backend stopped / Ctrl-C · 3 no backend.
    """
    raise typer.Exit(run_attach(Streams.system(), workspace=workspace, instance=instance, once=once))


def run_attach(
    io: Streams, *, workspace: Optional[str] = None, instance: Optional[str] = None, once: bool = False
) -> int:
    """``oh attach``'s behaviour: the editor's events on ``io.err``; 0 when the backend stopped or on Ctrl-C."""
    from .. import sessions
    from ..editor import run_editor
    from ..eventloop import run as run_loop  # uvloop when installed (the [fast] extra)

    target = os.path.realpath(workspace or os.getcwd())
    if instance is not None and not sessions.find(instance):
        die(f"no running backend with instance id {instance!r}.", NOT_RUNNING, "List them with `oh status`.")
    if instance is None and sessions.for_workspace(target) is None:
        die(
            f"no running backend serves {target}.",
            NOT_RUNNING,
            f"Start one with `oh start --runtime vscode --workspace {target}`.",
        )

    def report(kind: str, data) -> None:
        if kind == "registered":
            msg = (
                f"attached as editor {data.get('editor_id')} to instance {data.get('instance_id')} (workspace "
                f"{data.get('workspace')})"
            )
        elif kind == "disconnected":
            msg = f"disconnected ({data.get('code')} {data.get('reason') or ''})".rstrip()
        elif kind == "no_session":
            msg = "the backend's session ended"
        else:
            msg = f"{kind}: {data}"
        print(f"oh attach: {msg}", file=io.err, flush=True)

    try:
        jobs = _job_settings()
        # The local runtime serving this editor reads the agent-shell settings from the environment.
        os.environ["OH_USER_SHELL"] = "1" if jobs.get("user_shell", True) else "0"
        os.environ["OH_SHELL_STARTUP_TIMEOUT"] = f"{jobs.get('shell_startup_timeout') or 5.0:g}"
        for name in ("sandbox", "sandbox_network", "sandbox_writable", "sandbox_fallback", "sandbox_bwrap"):
            value = jobs.get(name)  # the agent shell's sandbox (README "Sandbox"), the same way
            if isinstance(value, bool):
                value = "1" if value else "0"
            elif isinstance(value, list):
                value = os.pathsep.join(value)
            if value:
                os.environ["OH_" + name.upper()] = str(value)
        code = run_loop(
            run_editor(
                target,
                instance=instance,
                reconnect=not once,
                on_event=report,
                max_shells=jobs["max_shells"],
                job_retention=jobs["job_retention"],
            )
        )
    except KeyboardInterrupt:
        code = 0
    return 0 if code == 3 else code  # 3 here: its session ended after we attached


def _job_settings() -> dict:
    """The user's max_shells / job_retention for the editor's shells (defaults when the config is broken)."""
    from ..config.settings import JOB_SETTINGS, KEYS, SettingError, Settings, job_settings

    try:
        return job_settings(Settings.load())
    except (SettingError, OSError):
        return {name: KEYS[name].default for name in JOB_SETTINGS}
