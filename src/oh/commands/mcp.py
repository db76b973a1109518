"""``oh mcp`` (serve MCP on stdio) and ``oh mcp install CLIENT``. Thin: the work is in ``oh.mcp``.

The ``mcp`` SDK (~1 s to import, ~15 MB with its web stack) is an optional extra, imported only when
the server starts; ``oh mcp install`` works without it and says when it is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..protocol import runtimenames
from ._common import ERROR, USAGE, complete_instances, complete_runtimes, die
from ._io import Streams

# What each client asks of the user before it starts a project-scope server (seen with the real clients:
# tests/mcp/test_real_clients.py); without it the tools silently do not appear.
_PROJECT_STEP = {
    "claude": "Claude Code starts a project's .mcp.json server only once you approve it: run `claude` in this folder, "
    "trust the folder and approve `oh` (or check with `claude mcp list`).",
    "gemini": "Gemini CLI starts no server in a folder you have not trusted: trust this folder in `gemini` "
    "(`gemini mcp list` then shows `oh` connected).",
    "codex": "Codex reads .codex/config.toml only in a trusted project: trust this folder in `codex`; "
    "for `codex exec`, add `required = true` to the entry so it waits for the server.",
}


def _install_hint() -> str:
    import sys

    # Name this interpreter: the packages must land in the environment `oh` runs from.
    return (
        f"The MCP server needs the `mcp` package in oh's environment: {sys.executable} -m pip install 'mcp>=2.3,<3' "
        "tomlkit (the `mcp` extra; with pipx: pipx inject oh-editor-runtime 'mcp>=2.3,<3' tomlkit)."
    )


CLIENT_HELP = "claude, codex, gemini, vscode or cursor."

app = typer.Typer(
    help=(
        "Serve oh's tools (run, read, write, edit) to MCP clients over stdio; `oh mcp install CLIENT` sets a client up."
    ),
    epilog=(
        "Exit codes: 0 ok · 1 the server could not start (the `mcp` package is missing) or a config could not be "
        "written · 2 bad flag. Tool failures are tool results with isError, not exit codes."
    ),
    invoke_without_command=True,
)


def _complete_clients(incomplete: str):
    return [c for c in ("claude", "codex", "gemini", "vscode", "cursor") if c.startswith(incomplete)]


@app.callback()
def serve(
    ctx: typer.Context,
    workspace: Optional[str] = typer.Option(
        None, "--workspace", "-C", help="Act through the backend serving this directory (default: cwd)."
    ),
    instance: Optional[str] = typer.Option(
        None,
        "--instance",
        "-i",
        help="Act through this backend (instance id or unique prefix).",
        autocompletion=complete_instances,
    ),
    start: bool = typer.Option(
        False,
        "--start",
        help="When no backend serves the directory, start one (detached; it keeps running: `oh stop`).",
    ),
    runtime: Optional[str] = typer.Option(
        None,
        "--runtime",
        "-r",
        help="Runtime for --start (default: config `runtime`).",
        autocompletion=complete_runtimes,
    ),
) -> None:
    """Serve oh's tools over stdio (MCP). An MCP client starts this; it connects to the backend on the first tool call.

    Example (Claude Code): claude mcp add oh -- oh mcp
    """
    if ctx.invoked_subcommand is not None:
        return
    if runtime is not None and runtime not in runtimenames.NAMES:
        die(f"--runtime must be {' or '.join(runtimenames.NAMES)}, not {runtime!r}.", USAGE)
    try:
        from ..mcp import server
    except ImportError as exc:
        if getattr(exc, "name", "") and not str(exc.name).startswith(("mcp", "mcp_types")):
            raise
        die(f"cannot start the MCP server: {exc}.", ERROR, _install_hint())
    server.main(workspace=workspace, instance=instance, start=start, runtime=runtime)


@app.command()
def install(
    client: str = typer.Argument(..., help="The MCP client: " + CLIENT_HELP, autocompletion=_complete_clients),
    scope: str = typer.Option(
        "user",
        "--scope",
        "-s",
        help="user: every project (the client's user config). project: this directory's config file.",
    ),
    name: str = typer.Option(
        "oh", "--name", help="The server's name in the client (its tools appear as e.g. mcp__oh__run)."
    ),
    start: bool = typer.Option(False, "--start", help="Configure `oh mcp --start` (start a backend when none runs)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would change (a diff); write nothing."),
    print_: bool = typer.Option(
        False, "--print", help="Print the client's own one-liner (or the entry to paste) instead of writing."
    ),
) -> None:
    """Add oh's MCP server to a client's config (merged: other entries and settings stay; running it twice changes \
nothing).

    Example: oh mcp install claude --scope project
    """
    raise typer.Exit(
        run_install(
            Streams.system(), client=client, scope=scope, name=name, start=start, dry_run=dry_run, print_=print_
        )
    )


def run_install(
    io: Streams,
    *,
    client: str,
    scope: str = "user",
    name: str = "oh",
    start: bool = False,
    dry_run: bool = False,
    print_: bool = False,
    project: Optional[Path] = None,
) -> int:
    """``oh mcp install``'s behaviour; ``project`` is the directory of a project-scope config (default: cwd)."""

    from ..mcp import install as inst

    extra = ["--start"] if start else []
    try:
        if print_:
            io.print(inst.one_liner(client, scope, name=name, extra_args=extra))
            return 0
        plan = inst.plan(client, scope, name=name, project=project or Path.cwd(), extra_args=extra)
    except inst.InstallError as exc:
        die(str(exc), USAGE if client not in inst.CLIENTS or scope not in inst.SCOPES else ERROR)
    if dry_run:
        io.out.write(inst.diff(plan) if plan.changed else f"{plan.path}: already up to date, nothing to change.\n")
        io.out.flush()
        return 0
    if not plan.changed:
        io.print(f"{plan.path}: `{name}` is already configured; nothing changed.")
    else:
        try:
            inst.apply(plan)
        except OSError as exc:
            die(f"cannot write {plan.written}: {exc.strerror or exc}", ERROR)
        where = f"{plan.written} (the target of the symlink {plan.path})" if plan.target else f"{plan.path}"
        io.print(f"{where}: added the MCP server `{name}` ({plan.entry['command']} {' '.join(plan.entry['args'])}).")
        io.print(f"Restart {client} (or reload its MCP servers) to pick it up.")
        if scope == "project" and client in _PROJECT_STEP:
            io.print(_PROJECT_STEP[client])
        if client == "claude" and scope == "user":
            # Claude Code keeps ~/.claude.json in memory and rewrites it: its own CLI is the safe path while it runs.
            io.print(
                "If Claude Code is running, it may rewrite ~/.claude.json; its own command does the same safely: "
                + inst.one_liner(client, scope, name=name, extra_args=extra)
            )
    try:
        import mcp  # noqa: F401
    except ImportError:
        io.note(_install_hint())
    return 0
