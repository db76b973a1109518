"""Editor knowledge from the command line: ``oh diagnostics``, ``oh open``, ``oh editors``,
``oh symbols``, ``oh definition``, ``oh references`` (docs/protocol.md §3.6).

Each sends one action through the backend (``oh.fastpath.verbs.exchange``, the agent verbs' wire
code) and prints the observation's text, or with ``--json`` the observation itself. They need
``--runtime vscode`` (an editor's language services); the local runtime refuses all but ``symbols``,
which it answers with ripgrep text matches and says so.
"""

from __future__ import annotations

import re
from typing import Optional

import typer

from ..protocol import actions
from ._common import EXIT_CODES_HELP, USAGE, OhError, pick_session, target_options
from ._io import Streams

EPILOG = (
    EXIT_CODES_HELP + " These commands need a backend started with `oh start --runtime vscode` and VS Code connected."
)
# `oh symbols` is answered by the local runtime too (a text search with ripgrep, no language server).
SYMBOLS_EPILOG = EXIT_CODES_HELP + (
    " With `--runtime vscode` VS Code's language servers answer; the local runtime answers with a "
    "text search of the workspace (ripgrep)."
)

_WORKSPACE, _INSTANCE = target_options()
_JSON = typer.Option(False, "--json", help="Print the observation as JSON (content + structured extras).")

_LOCATION = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+))?(?::(?P<col>\d+))?$")


def parse_location(text: str, *, need_position: bool) -> tuple[str, int | None, int | None]:
    """``PATH[:LINE[:COL]]`` -> (path, line, col); lines and columns are 1-based. Raises ValueError."""
    m = _LOCATION.match(text)
    if not m or not m.group("path"):
        raise ValueError(f"cannot read {text!r} as PATH:LINE:COL")
    line = int(m.group("line")) if m.group("line") else None
    col = int(m.group("col")) if m.group("col") else None
    if (line is not None and line < 1) or (col is not None and col < 1):
        raise ValueError(f"{text!r}: lines and columns count from 1")
    if need_position and (line is None or col is None):
        raise ValueError(f"{text!r} needs a position: PATH:LINE:COL (1-based, e.g. src/app.ts:12:5)")
    return m.group("path"), line, col


def _send(
    io: Streams,
    workspace: Optional[str],
    instance: Optional[str],
    action: dict,
    json_: bool,
    *,
    resolve_path: bool = True,
) -> int:

    from ..fastpath import verbs

    session = pick_session(workspace, instance).to_dict()
    args = action["args"]
    if resolve_path and args.get("path"):
        args["path"] = verbs.resolve(args["path"], session)
    obs = verbs.exchange(io, session, action, announce=not json_)
    code = verbs.finish(io, obs, json_)
    if code is None and action["action"] == "diagnostics":
        # Like a compiler: exit 1 when there are errors, so `oh diagnostics && next-step` works.
        extras = obs.get("extras") or {}
        if any(d.get("severity") == "error" for d in extras.get("diagnostics") or []):
            code = 1
    return code or 0


def _location(text: str, need_position: bool) -> tuple[str, int | None, int | None]:
    try:
        return parse_location(text, need_position=need_position)
    except ValueError as exc:
        raise OhError(f"{exc}.", USAGE) from None


def diagnostics(
    path: Optional[str] = typer.Argument(
        None, metavar="PATH", help="A file (default: every file the language servers report on in the workspace)."
    ),
    severity: str = typer.Option(
        "warning", "--severity", metavar="LEVEL", help="Least severe level to show: error, warning, info or hint."
    ),
    wait: Optional[float] = typer.Option(
        None,
        "--wait",
        min=0,
        max=60,
        metavar="SECONDS",
        help="Wait at most this long for the language servers to settle (default: the editor's, a few seconds).",
    ),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Language-server errors and warnings (VS Code's Problems), after they settle; exit 1 if there are errors.

    Example: oh diagnostics src/app.ts
    """
    raise typer.Exit(
        run_diagnostics(
            Streams.system(),
            path=path,
            severity=severity,
            wait=wait,
            workspace=workspace,
            instance=instance,
            json_=json_,
        )
    )


def run_diagnostics(
    io: Streams,
    *,
    path: Optional[str] = None,
    severity: str = "warning",
    wait: Optional[float] = None,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
) -> int:
    """``oh diagnostics``'s behaviour: 1 when an error is reported."""
    if severity not in ("error", "warning", "info", "hint"):
        raise OhError(f"--severity must be error, warning, info or hint (got {severity!r}).", USAGE)
    return _send(io, workspace, instance, actions.diagnostics(path or None, severity=severity, wait=wait), json_)


def open_(
    location: str = typer.Argument(
        ..., metavar="PATH[:LINE[:COL]]", help="The file, optionally a 1-based line and column."
    ),
    end: Optional[str] = typer.Option(None, "--to", metavar="LINE[:COL]", help="Select up to this line (and column)."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Show a file to the user in VS Code, at a line (and select a range with --to).

    Example: oh open src/app.ts:42
    """
    raise typer.Exit(
        run_open(Streams.system(), location=location, end=end, workspace=workspace, instance=instance, json_=json_)
    )


def run_open(
    io: Streams,
    *,
    location: str,
    end: Optional[str] = None,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
) -> int:
    """``oh open``'s behaviour."""
    path, line, col = _location(location, False)
    end_line = end_col = None
    if end:
        _, end_line, end_col = _location("x:" + end, False)
        if line is None or end_line is None:
            raise OhError("--to needs a line in PATH:LINE and a LINE[:COL] after --to.", USAGE)
    frame = actions.open_file(path, line=line, column=col, end_line=end_line, end_column=end_col)
    return _send(io, workspace, instance, frame, json_)


def editors(
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """The files open in VS Code: the active one, the selection, unsaved (dirty) state."""
    raise typer.Exit(run_editors(Streams.system(), workspace=workspace, instance=instance, json_=json_))


def run_editors(
    io: Streams, *, workspace: Optional[str] = None, instance: Optional[str] = None, json_: bool = False
) -> int:
    """``oh editors``'s behaviour."""
    return _send(io, workspace, instance, actions.editors(), json_)


def symbols(
    query: str = typer.Argument(..., metavar="QUERY", help="Part of a symbol name (functions, classes, ...)."),
    limit: int = typer.Option(100, "--limit", min=1, max=1000, metavar="N", help="Show at most N symbols."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Workspace symbol search through the language servers (VS Code's Ctrl+T).

    Example: oh symbols parseConfig
    """
    raise typer.Exit(
        run_symbols(Streams.system(), query=query, limit=limit, workspace=workspace, instance=instance, json_=json_)
    )


def run_symbols(
    io: Streams,
    *,
    query: str,
    limit: int = 100,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
) -> int:
    """``oh symbols``'s behaviour."""
    return _send(io, workspace, instance, actions.symbols(query, limit=limit), json_)


def definition(
    location: str = typer.Argument(
        ..., metavar="PATH:LINE:COL", help="Where the name is used (1-based line and column)."
    ),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Where the symbol at PATH:LINE:COL is defined (VS Code's Go to Definition).

    Example: oh definition src/app.ts:12:5
    """
    raise typer.Exit(
        run_at_position(Streams.system(), "definition", location, workspace=workspace, instance=instance, json_=json_)
    )


def references(
    location: str = typer.Argument(..., metavar="PATH:LINE:COL", help="The symbol (1-based line and column)."),
    no_declaration: bool = typer.Option(False, "--no-declaration", help="Leave out the declaration itself."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Every reference to the symbol at PATH:LINE:COL (VS Code's Find All References).

    Example: oh references src/app.ts:12:5
    """
    raise typer.Exit(
        run_at_position(
            Streams.system(),
            "references",
            location,
            workspace=workspace,
            instance=instance,
            json_=json_,
            include_declaration=not no_declaration,
        )
    )


def run_at_position(
    io: Streams,
    kind: str,
    location: str,
    *,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    **extra,
) -> int:
    """``oh definition`` / ``oh references``: action ``kind`` at ``PATH:LINE:COL`` (plus ``extra`` args)."""
    path, line, col = _location(location, True)
    frame = actions.knowledge(kind, {"path": path, "line": line, "column": col, **extra})
    return _send(io, workspace, instance, frame, json_)


def register(app: typer.Typer) -> None:
    for fn, name in (
        (diagnostics, "diagnostics"),
        (open_, "open"),
        (editors, "editors"),
        (symbols, "symbols"),
        (definition, "definition"),
        (references, "references"),
    ):
        app.command(name=name, epilog=SYMBOLS_EPILOG if name == "symbols" else EPILOG)(fn)
