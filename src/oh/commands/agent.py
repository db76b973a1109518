"""Agent verbs through the running backend: ``oh run``, ``oh read``, ``oh write``, ``oh edit``.

The backend is the one whose workspace contains ``--workspace`` (default: cwd), or ``--instance``.
Relative paths (and the command's working directory) are taken from your cwd when it is inside
that workspace, else from the workspace root, and always sent explicitly. The token comes from the
session file. The work is done by ``oh.fastpath.verbs``, which the fast entry (no typer) also
calls: these typer commands serve ``--help``, completion and the cases the fast entry declines.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import typer

from ..fastpath import verbs  # the verbs' one implementation (stdlib only: cheap to import)
from ._common import EXIT_CODES_HELP, pick_session, target_options
from ._io import Streams

EPILOG = (
    EXIT_CODES_HELP
    + " `oh run` otherwise exits with the command's own exit code (6 when it was refused: another command still runs)."
)
# read, write, edit: only the codes a file action can end with (the help of each command teaches its own).
FILE_EPILOG = (
    "Exit codes: 0 ok · 1 failed · 2 usage · 3 no running backend · 4 token refused · 5 backend unreachable · "
    "6 the action failed (no such file, a path outside the workspace, no unique match, …; the message says which) · "
    "7 no editor connected · 124 timed out."
)

_WORKSPACE, _INSTANCE = target_options()
_JSON = typer.Option(False, "--json", help="Print the observation as JSON (OpenHands shape).")
_QUIET = typer.Option(
    False, "--quiet", "-q", help="Print only the result and errors: no notes, confirmations or snippets."
)
# several agents (docs/protocol.md §3.18)
_IF_VERSION = typer.Option(
    None,
    "--if-version",
    metavar="VERSION",
    help="Refuse (STALE, exit 1) unless the file is still at VERSION (extras.version of `oh read --json`).",
)
_FORCE = typer.Option(False, "--force", help="Write even if the file changed since you read it (no STALE check).")


def _call(io: Streams, verb: Callable[..., int], workspace: Optional[str], instance: Optional[str], **kw) -> int:
    """Run ``verb`` (a function of oh.fastpath.verbs, the one implementation) on the session the full CLI picked."""

    session = pick_session(workspace, instance).to_dict()
    return verb(io, session, **kw)


_UNSANDBOXED = typer.Option(
    None,
    "--unsandboxed",
    metavar="REASON",
    help=(
        "Ask to run COMMAND outside the agent shell's sandbox (network, writes outside the workspace), saying "
        "why. The user is asked at every consent level (`oh approvals` lists it, `oh approve ID` allows it; "
        "the live view, VS Code) unless an `unsandboxed:` rule allows it; it waits for the answer. Only COMMAND "
        "leaves: the shell stays sandboxed. With --background the job starts once allowed (`oh jobs` follows it). "
        'Example: oh run --unsandboxed "npm ci needs the network" -- npm ci'
    ),
)


_COMMAND = typer.Argument(
    None,
    metavar="COMMAND",
    help="The command; several words are shell-quoted and joined, one word is used as a shell command line.",
    show_default=False,
)

_NETWORK = typer.Option(
    None,
    "--network",
    metavar="REASON",
    help=(
        "Ask to run COMMAND with the network on, saying why; it stays in the sandbox otherwise (no writes outside "
        "the workspace). Asked like --unsandboxed, or allowed by a `network:` rule. "
        'Example: oh run --network "pip needs the package index" -- pip install -e .'
    ),
)


def _mode(*pairs, default=None, what: str) -> str:
    return verbs.pick_mode(*pairs, default=default, what=what)


def run(
    command: Optional[List[str]] = _COMMAND,
    timeout: Optional[float] = typer.Option(
        None, "--timeout", "-t", min=0.001, metavar="SECONDS", help="Kill the command after SECONDS (exit 124)."
    ),
    cwd: Optional[str] = typer.Option(
        None,
        "--cwd",
        metavar="DIR",
        help="Working directory (default: your cwd when inside the workspace, else the workspace root).",
    ),
    input_: Optional[str] = typer.Option(
        None,
        "--input",
        metavar="TEXT",
        help="Send TEXT and a newline to the command still running in the `oh run` shell.",
    ),
    interrupt: bool = typer.Option(
        False, "--interrupt", help="Interrupt (Ctrl-C) the command still running in the `oh run` shell."
    ),
    wait: bool = typer.Option(
        False, "--wait", help="Wait for more output of the command still running in the `oh run` shell."
    ),
    reset: bool = typer.Option(
        False,
        "--reset",
        help="Kill what runs in the `oh run` shell and start a fresh one (then run COMMAND, if given).",
    ),
    max_output: Optional[int] = typer.Option(
        None,
        "--max-output",
        min=0,
        metavar="CHARS",
        help="Keep at most CHARS characters of output (0 = all; the backend's default is 30000).",
    ),
    background: bool = typer.Option(
        False, "--background", "-b", help="Start COMMAND as a background job and print its id at once (see `oh jobs`)."
    ),
    force: bool = typer.Option(
        False, "--force", help="With --background: start another job even if the same one is running."
    ),
    unsandboxed: Optional[str] = _UNSANDBOXED,
    network: Optional[str] = _NETWORK,
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
    quiet: bool = _QUIET,
) -> None:
    """Run a shell command through the backend; print its output; exit with its exit code.

    Every `oh run` shares one shell (one VS Code terminal): a command still running when `oh run`
    returns keeps running there; --wait, --input, --interrupt and --reset act on it.

    Example: oh run -- pytest -q tests/
    """
    raise typer.Exit(
        run_run(
            Streams.system(),
            command=list(command or []),
            timeout=timeout,
            cwd=cwd,
            input_=input_,
            interrupt=interrupt,
            wait=wait,
            reset=reset,
            max_output=max_output,
            background=background,
            force=force,
            unsandboxed=unsandboxed,
            network=network,
            workspace=workspace,
            instance=instance,
            json_=json_,
            quiet=quiet,
        )
    )


def run_run(
    io: Streams,
    *,
    command: list[str],
    timeout: Optional[float] = None,
    cwd: Optional[str] = None,
    input_: Optional[str] = None,
    interrupt: bool = False,
    wait: bool = False,
    reset: bool = False,
    max_output: Optional[int] = None,
    background: bool = False,
    force: bool = False,
    unsandboxed: Optional[str] = None,
    network: Optional[str] = None,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    quiet: bool = False,
) -> int:
    """``oh run``'s behaviour: the command's own exit code, or oh's (`oh --help`)."""
    if background:  # the job verbs live in commands/jobs.py
        from .jobs import start_background

        also = tuple(
            flag
            for flag, given in (
                ("--timeout", timeout is not None),
                ("--input", input_ is not None),
                ("--interrupt", interrupt),
                ("--wait", wait),
                ("--reset", reset),
                ("--max-output", max_output is not None),
            )
            if given
        )
        return start_background(
            io,
            command,
            cwd,
            workspace,
            instance,
            force=force,
            json_=json_,
            also=also,
            unsandboxed=unsandboxed,
            network=network,
        )
    mode = _mode(
        ("input", input_ is not None),
        ("interrupt", interrupt),
        ("wait", wait),
        ("reset", reset),
        default="command",
        what="--input, --interrupt, --wait, --reset",
    )
    return _call(
        io,
        verbs.run,
        workspace,
        instance,
        command=command,
        mode=mode,
        text=input_,
        timeout=timeout,
        cwd=cwd,
        max_output=max_output,
        unsandboxed=unsandboxed,
        network=network,
        json_=json_,
        quiet=quiet,
    )


def read(
    path: str = typer.Argument(..., metavar="PATH", help="File to read (relative to your cwd inside the workspace)."),
    start: int = typer.Option(
        1, "--start", metavar="LINE", help="First line to show (1 = the first line, as in an editor)."
    ),
    end: int = typer.Option(-1, "--end", metavar="LINE", help="Last line to show, included (-1 = end of file)."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
    quiet: bool = _QUIET,
) -> None:
    """Read a file through the backend (the editor's view of it for runtime vscode)."""
    raise typer.Exit(
        run_read(
            Streams.system(),
            path=path,
            start=start,
            end=end,
            workspace=workspace,
            instance=instance,
            json_=json_,
            quiet=quiet,
        )
    )


def run_read(
    io: Streams,
    *,
    path: str,
    start: int = 1,
    end: int = -1,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    quiet: bool = False,
) -> int:
    """``oh read``'s behaviour."""
    return _call(io, verbs.read, workspace, instance, path=path, start=start, end=end, json_=json_, quiet=quiet)


def write(
    path: str = typer.Argument(..., metavar="PATH", help="File to write (created or replaced)."),
    content: Optional[str] = typer.Option(
        None, "--content", metavar="TEXT", help="The new content; without it, stdin is read."
    ),
    append: bool = typer.Option(False, "--append", help="Add the content at the end of the file (created if absent)."),
    create: bool = typer.Option(
        False, "--create", help="Create the file only if it does not exist (else: no change, and says so)."
    ),
    if_version: Optional[str] = _IF_VERSION,
    force: bool = _FORCE,
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
    quiet: bool = _QUIET,
) -> None:
    """Write a file through the backend (atomic)."""
    raise typer.Exit(
        run_write(
            Streams.system(),
            path=path,
            content=content,
            append=append,
            create=create,
            if_version=if_version,
            force=force,
            workspace=workspace,
            instance=instance,
            json_=json_,
            quiet=quiet,
        )
    )


def run_write(
    io: Streams,
    *,
    path: str,
    content: Optional[str] = None,
    append: bool = False,
    create: bool = False,
    if_version: Optional[str] = None,
    force: bool = False,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    quiet: bool = False,
) -> int:
    """``oh write``'s behaviour: the content from ``content``, else from ``io.inp``."""
    text = verbs.content_or_stdin(io, content)
    guard: dict[str, Any] = {"if_version": if_version, "force": force}
    if append or create:  # write modes (commands/jobs.py)
        from .jobs import write_mode

        mode = _mode(("append", append), ("create", create), what="--append, --create")
        return write_mode(io, path, text, mode, workspace, instance, json_=json_, quiet=quiet, **guard)
    return _call(io, verbs.write, workspace, instance, path=path, content=text, json_=json_, quiet=quiet, **guard)


def edit(
    path: str = typer.Argument(..., metavar="PATH", help="File to edit."),
    create: Optional[str] = typer.Option(
        None, "--create", metavar="TEXT", help="Create the file with TEXT (fails if it exists)."
    ),
    replace: Optional[Tuple[str, str]] = typer.Option(
        None, "--replace", help="Replace OLD (must occur exactly once) with NEW.", metavar="OLD NEW"
    ),
    insert: Optional[Tuple[int, str]] = typer.Option(
        None, "--insert", help="Insert TEXT after line LINE (0 = top).", metavar="LINE TEXT"
    ),
    undo: bool = typer.Option(False, "--undo", help="Revert the last edit made through oh to this file."),
    view: bool = typer.Option(False, "--view", help="Show the file with line numbers (or a directory listing)."),
    if_version: Optional[str] = _IF_VERSION,
    force: bool = _FORCE,
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
    quiet: bool = _QUIET,
) -> None:
    """Edit a file through the backend with OpenHands' editor commands (exactly one mode)."""
    raise typer.Exit(
        run_edit(
            Streams.system(),
            path=path,
            create=create,
            replace=replace,
            insert=insert,
            undo=undo,
            view=view,
            if_version=if_version,
            force=force,
            workspace=workspace,
            instance=instance,
            json_=json_,
            quiet=quiet,
        )
    )


def run_edit(
    io: Streams,
    *,
    path: str,
    create: Optional[str] = None,
    replace: Optional[Tuple[str, str]] = None,
    insert: Optional[Tuple[int, str]] = None,
    undo: bool = False,
    view: bool = False,
    if_version: Optional[str] = None,
    force: bool = False,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    quiet: bool = False,
) -> int:
    """``oh edit``'s behaviour (exactly one mode)."""
    mode = _mode(
        ("create", create is not None),
        ("replace", replace is not None),
        ("insert", insert is not None),
        ("undo", undo),
        ("view", view),
        what="--create, --replace, --insert, --undo, --view",
    )
    return _call(
        io,
        verbs.edit,
        workspace,
        instance,
        path=path,
        mode=mode,
        create=create,
        replace=replace,
        insert=insert,
        if_version=if_version,
        force=force,
        json_=json_,
        quiet=quiet,
    )
