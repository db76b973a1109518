"""Agent verbs through the running backend: ``oh run``, ``oh read``, ``oh write``, ``oh edit``.

The backend is the one whose workspace contains ``--workspace`` (default: cwd), or ``--instance``.
Relative paths (and the command's working directory) are taken from your cwd when it is inside
that workspace, else from the workspace root. The token comes from the session file.
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional, Tuple

import typer

from ._common import (
    ACTION_FAILED,
    AUTH,
    NO_EDITOR,
    TIMEOUT,
    UNREACHABLE,
    USAGE,
    EXIT_CODES_HELP,
    complete_instances,
    die,
    pick_session,
    print_json,
)

EPILOG = EXIT_CODES_HELP + " `oh run` otherwise exits with the command's own exit code."

_WORKSPACE = typer.Option(None, "--workspace", "-C", help="Use the backend serving this directory (default: cwd).")
_INSTANCE = typer.Option(None, "--instance", "-i", help="Use this backend (instance id or unique prefix).", autocompletion=complete_instances)
_JSON = typer.Option(False, "--json", help="Print the observation as JSON (OpenHands shape).")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _resolve(path: str, session) -> str:
    if os.path.isabs(path):
        return path
    cwd = os.path.realpath(os.getcwd())
    return os.path.join(cwd, path) if _inside(cwd, session.workspace) else path


def _send(workspace: Optional[str], instance: Optional[str], call):
    from ..client import AuthError, ConnectionLost, OhClientError, SyncClient

    session = pick_session(workspace, instance)
    try:
        with SyncClient.connect(session.url, session.token, name="oh-cli") as client:
            return session, call(client, session)
    except AuthError as exc:
        die(str(exc), AUTH, "The token in the session file is stale: retry, or see `oh doctor`.")
    except ConnectionLost as exc:
        die(str(exc), UNREACHABLE, "Check the backend with `oh status`; see its log with `oh logs`.")
    except OhClientError as exc:
        die(str(exc), UNREACHABLE, "Check the backend with `oh status`.")


def _error_exit(obs) -> int:
    eid = obs.error_id or ""
    if eid == "TIMEOUT":
        return TIMEOUT
    if eid in ("NO_EDITOR", "EDITOR_DISCONNECTED"):
        return NO_EDITOR
    if eid == "BAD_REQUEST":
        return USAGE
    return ACTION_FAILED


def _finish(obs, json_: bool, *, show_content: bool = True) -> None:
    if json_:
        print_json(dict(obs))
    if obs.kind == "error":
        if not json_:
            typer.echo(f"oh: {obs.error_id}: {obs.content}", err=True)
        raise typer.Exit(_error_exit(obs))
    if not json_ and show_content and obs.content:
        sys.stdout.write(obs.content if obs.content.endswith("\n") else obs.content + "\n")
        sys.stdout.flush()


def run(
    command: List[str] = typer.Argument(..., help="The command; several words are shell-quoted and joined, one word is used as a shell command line."),
    timeout: Optional[float] = typer.Option(None, "--timeout", "-t", min=0.001, help="Kill the command after S seconds (exit 124)."),
    cwd: Optional[str] = typer.Option(None, "--cwd", help="Working directory (default: your cwd when inside the workspace)."),
    background: bool = typer.Option(False, "--background", "-b", help="Start it as a background job; print the job id at once (see `oh jobs`)."),
    force: bool = typer.Option(False, "--force", help="With --background: start a new job even if the same one is running."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Run a shell command through the backend; print its output; exit with its exit code.

    Example: oh run -- pytest -q tests/
    """
    import shlex

    line = command[0] if len(command) == 1 else shlex.join(command)
    if background:
        from .jobs import start_background

        where = cwd
        if where is None:
            here = os.path.realpath(os.getcwd())
            where = here if _inside(here, pick_session(workspace, instance).workspace) else None
        raise typer.Exit(start_background(line, where, workspace, instance, force=force, json_=json_))

    def call(client, session):
        where = cwd
        if where is None:
            here = os.path.realpath(os.getcwd())
            where = here if _inside(here, session.workspace) else None
        elif not os.path.isabs(where):
            where = _resolve(where, session)
        return client.run(line, timeout=timeout, blocking=timeout is not None, cwd=where)

    _, obs = _send(workspace, instance, call)
    _finish(obs, json_)
    code = obs.exit_code
    if code is None or code < 0:
        suffix = ((obs.extras.get("metadata") or {}).get("suffix") or "").strip()
        if not json_:
            typer.echo(f"oh: {suffix or 'the command did not finish'}", err=True)
        raise typer.Exit(TIMEOUT)
    raise typer.Exit(code if 0 <= code <= 255 else 1)


def read(
    path: str = typer.Argument(..., help="File to read (relative to your cwd inside the workspace)."),
    start: int = typer.Option(0, "--start", help="First line (0-based)."),
    end: int = typer.Option(-1, "--end", help="Line to stop at (-1 = end of file)."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Read a file through the backend (the editor's view of it for runtime vscode)."""
    _, obs = _send(workspace, instance, lambda c, s: c.read(_resolve(path, s), start=start, end=end))
    _finish(obs, json_)


def write(
    path: str = typer.Argument(..., help="File to write (created or replaced)."),
    content: Optional[str] = typer.Option(None, "--content", help="The new content; without it, stdin is read."),
    append: bool = typer.Option(False, "--append", help="Add the content at the end of the file (created if absent)."),
    create: bool = typer.Option(False, "--create", help="Create the file only if it does not exist (else: no change)."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Write a file through the backend (atomic)."""
    if content is None:
        if sys.stdin.isatty():
            die("give the content with --content TEXT or on stdin (e.g. `cat f | oh write PATH`).", USAGE)
        content = sys.stdin.read()
    if append and create:
        die("give at most one of --append and --create.", USAGE)
    if append or create:
        from .jobs import write_mode

        raise typer.Exit(write_mode(path, content, "append" if append else "create", workspace, instance, json_=json_))
    _, obs = _send(workspace, instance, lambda c, s: c.write(_resolve(path, s), content))
    _finish(obs, json_, show_content=False)
    if not json_:
        typer.echo(f"wrote {len(content.encode('utf-8'))} bytes to {(obs.extras or {}).get('path') or path}")


def edit(
    path: str = typer.Argument(..., help="File to edit."),
    create: Optional[str] = typer.Option(None, "--create", help="Create the file with TEXT (fails if it exists)."),
    replace: Optional[Tuple[str, str]] = typer.Option(None, "--replace", help="Replace OLD (must occur exactly once) with NEW.", metavar="OLD NEW"),
    insert: Optional[Tuple[int, str]] = typer.Option(None, "--insert", help="Insert TEXT after line LINE (0 = top).", metavar="LINE TEXT"),
    undo: bool = typer.Option(False, "--undo", help="Revert the last edit made through oh to this file."),
    view: bool = typer.Option(False, "--view", help="Show the file with line numbers (or a directory listing)."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Edit a file through the backend with OpenHands' editor commands (exactly one mode)."""
    modes = [m for m, on in (("create", create is not None), ("replace", replace is not None), ("insert", insert is not None), ("undo", undo), ("view", view)) if on]
    if len(modes) != 1:
        die("give exactly one of --create, --replace, --insert, --undo, --view.", USAGE)
    mode = modes[0]

    def call(client, session):
        target = _resolve(path, session)
        if mode == "create":
            return client.edit(target, "create", file_text=create)
        if mode == "replace":
            return client.edit(target, "str_replace", old_str=replace[0], new_str=replace[1])
        if mode == "insert":
            return client.edit(target, "insert", insert_line=insert[0], new_str=insert[1])
        if mode == "undo":
            return client.edit(target, "undo_edit")
        return client.edit(target, "view")

    _, obs = _send(workspace, instance, call)
    _finish(obs, json_)
