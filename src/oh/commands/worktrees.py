"""``oh worktrees`` and ``oh merge AGENT|BRANCH``: the agents' git worktrees (issue 37, docs/protocol.md §3.19).

No backend is needed: both read the workspace's repository (``git worktree list``) and the worktrees in oh's
worktrees directory (never the repository). ``oh merge`` commits what the agent left uncommitted in its worktree,
shows the diff summary, merges its branch into the user's checked-out branch (a fast-forward, else a merge commit)
and removes the worktree and its branch (``--keep`` keeps them). A conflict stops before anything is changed,
naming the files. Every git call on these agent-writable repositories runs no hook, fsmonitor, filter or driver
(docs/security.md §13.1).
"""

from __future__ import annotations

import os
from typing import Any

import typer

from ._common import ERROR, USAGE, die
from ._io import Streams

_WORKSPACE = typer.Option(".", "--workspace", "-C", help="The workspace (default: cwd).")
_JSON = typer.Option(False, "--json", help="Machine-readable output.")


def _list(workspace: str) -> list[dict[str, Any]]:
    from .. import gitrepo
    from ..config import paths

    real = os.path.realpath(workspace)
    if not os.path.isdir(real):
        die(f"workspace {workspace} is not a directory.", USAGE)
    try:
        return gitrepo.list_worktrees(real, str(paths.worktrees_dir(real)))
    except gitrepo.GitError as exc:
        die(str(exc), ERROR)


def worktrees(workspace: str = _WORKSPACE, json_: bool = _JSON) -> None:
    """List the agents' worktrees of this workspace: agent, branch, commits ahead, uncommitted files, path."""
    raise typer.Exit(run_worktrees(Streams.system(), workspace=workspace, json_=json_))


def run_worktrees(io: Streams, *, workspace: str = ".", json_: bool = False) -> int:
    found = _list(workspace)
    if json_:
        io.json({"worktrees": found})
        return 0
    if not found:
        io.out.write("No agent worktrees (start with `oh start --isolate worktree`).\n")
        return 0
    from ..text.sanitize import visible

    for wt in found:
        io.out.write(
            f"{visible(wt['agent'])}  {visible(wt['branch'])}  {wt['ahead']} commit(s) ahead, "
            f"{wt['uncommitted']} file(s) uncommitted  {visible(wt['path'])}\n"
        )
    return 0


def merge(
    target: str = typer.Argument(
        ..., metavar="AGENT|BRANCH", help="An agent (as `oh worktrees` names it) or its branch."
    ),
    keep: bool = typer.Option(False, "--keep", help="Keep the worktree and its branch after the merge."),
    workspace: str = _WORKSPACE,
    json_: bool = _JSON,
) -> None:
    """Bring an agent's worktree back: its changes merged into your branch (a conflict changes nothing)."""
    raise typer.Exit(run_merge(Streams.system(), target=target, keep=keep, workspace=workspace, json_=json_))


def run_merge(io: Streams, *, target: str, keep: bool = False, workspace: str = ".", json_: bool = False) -> int:
    from .. import gitrepo
    from ..text.sanitize import visible

    found = [wt for wt in _list(workspace) if target in (wt["agent"], wt["branch"])]
    if not found:
        die(f"no agent worktree named {visible(target)}.", USAGE, "`oh worktrees` lists them.")
    wt = found[0]
    try:
        done = gitrepo.merge_worktree(os.path.realpath(workspace), wt, keep=keep)
    except gitrepo.MergeConflict as exc:
        if json_:
            io.json({"merged": False, "branch": wt["branch"], "conflicts": exc.files})
            return ERROR
        names = "\n".join(f"  {visible(f)}" for f in exc.files)
        die(
            f"{visible(wt['branch'])} does not merge cleanly; nothing was changed. Conflicting files:\n{names}",
            ERROR,
            f"Resolve it by hand (`git merge {wt['branch']}`), or have the agent rebase its worktree "
            f"({visible(wt['path'])}); the worktree is kept.",
        )
    except gitrepo.GitError as exc:
        die(visible(str(exc)), ERROR, "Nothing was merged; the worktree is kept.")
    if json_:
        io.json({"merged": True, **done})
        return 0
    summary = "".join(visible(line) + "\n" for line in done["summary"].splitlines())
    io.out.write(summary or "(no file changes)\n")
    tail = "" if keep else "; worktree and branch removed"
    io.out.write(f"Merged {visible(done['branch'])} ({done['how']}){tail}.\n")
    return 0
