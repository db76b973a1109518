"""Shared by the command modules: exit codes, failures (``die``), session selection, completion helpers.

Import-light on purpose (stdlib only): every typer-path ``oh`` invocation imports this.
"""

from __future__ import annotations

import os

from ..fastpath.exits import (  # noqa: E402,F401
    ACTION_FAILED,
    AUTH,
    ERROR,
    INTERRUPTED,
    NO_EDITOR,
    NOT_RUNNING,
    OK,
    TIMEOUT,
    UNREACHABLE,
    USAGE,
    OhError,
)
from ..protocol import runtimenames

# Exit codes: one definition in oh.fastpath.exits (the fast path cannot import this module).
from ._io import Streams

TYPE_CHECKING = False  # typing costs ~20 ms to import; these names serve annotations (and mypy) only
if TYPE_CHECKING:
    from typing import Any, NoReturn

EXIT_CODES_HELP = (
    "Exit codes: 0 ok · 1 failed · 2 usage or bad setting · 3 no running backend · 4 token refused · "
    "5 backend unreachable · 6 action failed (error observation) · 7 no editor connected (`oh vscode`: no "
    "editor CLI found) · 124 timed out."
)


def err(message: str) -> None:
    Streams.system().note(message)


def die(message: str, code: int = ERROR, hint: str | None = None) -> NoReturn:
    """Fail the command: ``oh.cli.main`` prints ``message`` and ``hint`` and exits with ``code``."""
    raise OhError(message, code, hint)


# For a command still writing to the process's streams; a converted command writes to its `Streams`.
def print_json(obj: Any) -> None:
    Streams.system().json(obj)


def print_ndjson(obj: Any) -> None:
    Streams.system().ndjson(obj)


def load_settings(flags: dict[str, Any] | None = None):
    from ..config.settings import Settings

    # A bad setting raises SettingError: oh.cli.main reports it (exit 2, USAGE).
    return Settings.load({k: v for k, v in (flags or {}).items() if v is not None})


def pick_session(workspace: str | None, instance: str | None, *, to_stop: bool = False):
    """The session a command acts on: ``--instance`` prefix, else the one whose workspace contains
    ``--workspace`` (default: cwd; the deepest match wins). Exits 3 when there is none (``to_stop``:
    for `oh stop`, whose user wants none running: no advice to start one)."""
    from .. import sessions
    from ..fastpath.connect import ConnectError

    if instance:
        found = sessions.find(instance)
        if not found:
            die(f"no running backend with instance id {instance!r}.", NOT_RUNNING, "List them with `oh status`.")
        if len(found) > 1:
            ids = ", ".join(s.instance_id for s in found)
            die(f"instance id {instance!r} is ambiguous ({ids}).", USAGE, "Give more characters.")
        return found[0]
    target = os.path.realpath(workspace or os.getcwd())
    try:  # agents elsewhere (issue 28): OH_URL, else a local backend, else a connect file
        s = sessions.elsewhere_or(sessions.for_workspace(target)) if not to_stop else sessions.for_workspace(target)
    except ConnectError as exc:
        die(f"{exc}.", NOT_RUNNING, "See `oh share --help` on the machine that runs the backend.")
    if s is None:
        running = sessions.list_sessions()
        if not os.path.isdir(target):  # a typo in -C: starting a backend there would fail too (issue 41)
            die(f"{target} is not a directory.", USAGE, "Give an existing directory (-C / --workspace).")
        if to_stop:
            ids = ", ".join(r.instance_id for r in running)
            die(
                f"nothing to stop: no running backend serves {target}.",
                NOT_RUNNING,
                f"Running elsewhere: {ids} (stop one with `oh stop ID`, or all with `oh stop --all`)."
                if running
                else "No backend is running (`oh status`).",
            )
        hint = f"Start one with `oh start --detach --workspace {target}`"
        if running:
            hint += " or pick a running one with --instance (see `oh status`)"
        die(f"no running backend serves {target}.", NOT_RUNNING, hint + ".")
    return s


# ---------------------------------------------------------------- dynamic shell completion
def complete_instances(incomplete: str):
    try:
        from .. import sessions

        return [
            (s.instance_id, f"{s.runtime} {s.workspace}")
            for s in sessions.list_sessions()
            if s.instance_id.startswith(incomplete)
        ]
    except Exception:  # noqa: BLE001 - completion must never print a traceback
        return []


def target_options():
    """The --workspace/-C and --instance/-i options every command talking to one backend takes (typer
    imported here, not at module level: the fast path's error mapping imports this module)."""
    import typer

    workspace = typer.Option(
        None, "--workspace", "-C", metavar="DIR", help="Use the backend serving this directory (default: cwd)."
    )
    instance = typer.Option(
        None,
        "--instance",
        "-i",
        metavar="ID",
        help="Use this backend (instance id or unique prefix).",
        autocompletion=complete_instances,
    )
    return workspace, instance


def complete_runtimes(incomplete: str):
    level = _sandbox_level()
    return [
        (t.name, runtimenames.describe(t.name, level))
        for t in runtimenames.TRAITS.values()
        if t.name.startswith(incomplete)
    ]


def _sandbox_level() -> str:
    """The settings' sandbox level for a description (a broken config: the default, TAB must not fail)."""
    from ..config.settings import Settings
    from ..errors import OhBaseError

    try:
        return str(Settings.load().get("sandbox"))
    except (OhBaseError, OSError, ValueError):
        return "workspace-write"


def complete_keys(incomplete: str):
    from ..config.settings import KEYS

    return [(k.name, k.allowed) for k in KEYS.values() if k.name.startswith(incomplete)]


def complete_shells(incomplete: str):
    return [s for s in ("bash", "zsh", "fish", "powershell") if s.startswith(incomplete)]


def distrust_sandbox(s: Any, workspace: str, roots: tuple[str, ...] = ()) -> None:
    """The programs this command runs itself (git for branch mode, bwrap's probe, ssh) are never found where the
    agent's sandbox can write: the workspace, the roots, the writable caches (docs/security.md §11.2)."""
    from .. import programs

    level = getattr(s, "sandbox", "workspace-write") if s is not None else "workspace-write"
    writable = list(getattr(s, "sandbox_writable", ()) or ()) if level == "workspace-write" else []
    programs.distrust(os.path.realpath(workspace), *roots, *(os.path.expanduser(w) for w in writable))
