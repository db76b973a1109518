"""Git for branch mode (docs/protocol.md §3.12) without an editor: read a repository's state and carry
out ``protocol.branch.decide``'s steps with the ``git`` command.

Used by the local runtime (before an agent's first change) and by ``oh start`` (to ask about a dirty
tree or a non-git folder before the backend starts). Blocking calls with bounded timeouts: async
callers run them in a thread. Git's own messages are passed on (they say what to fix), but git never
prompts: no terminal, no editor, no pager, no credential helper.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from typing import Any

from .protocol.branch import Decision, RepoState
from . import programs
from .errors import OhBaseError

GIT_TIMEOUT = 30.0  # a stash of a large tree can take a while; never for ever


class GitError(OhBaseError):
    """git is missing, failed or timed out; the message says which and what git said."""


def _env() -> dict[str, str]:
    env = programs.env()  # PATH without a directory the sandbox can write (hooks look there)
    # Never wait for a human: no prompts, no editors, no pagers; stable English messages.
    env.update(GIT_TERMINAL_PROMPT="0", GIT_EDITOR="true", GIT_PAGER="cat", LC_ALL="C", LANG="C")
    return env


def _git(cwd: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    exe = programs.find("git")
    if exe is None:
        raise GitError(
            "git is not installed (or not on PATH); branch mode needs it. Install git, or start without --branch."
        )
    # Output goes to files, not pipes: a hook that leaves a process behind (`ctags -R &` in post-checkout
    # is common) keeps a pipe open long after git exits, and reading a pipe to its end would wait for it.
    # Its own session, so a timeout ends git and its hooks together.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                [exe, *args],
                cwd=cwd,
                env=_env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            raise GitError(f"cannot run git: {exc}") from None
        try:
            code = proc.wait(timeout=GIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise GitError(
                f"`git {' '.join(args)}` did not finish within {GIT_TIMEOUT:g} s (a git hook waiting?)."
            ) from None
        done = subprocess.CompletedProcess([exe, *args], code, _read(out), _read(err))
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise GitError(f"`git {' '.join(args)}` failed: {' '.join(said[-3:])[:500] or f'exit {done.returncode}'}")
    return done


def _read(f: Any) -> str:
    f.seek(0)
    return f.read(16 * 1024 * 1024).decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def inspect(workspace: str) -> RepoState:
    """The repository state of ``workspace`` (is_repo False when it is in no work tree)."""
    inside = _git(
        workspace, "rev-parse", "--is-inside-work-tree", "--is-inside-git-dir", "--is-bare-repository", check=False
    )
    answers = inside.stdout.split()
    if inside.returncode == 0 and len(answers) == 3 and "true" in answers[1:] and answers[0] != "true":
        # A bare repository, or a folder inside a .git directory: there is no work tree to put on a
        # branch, and `git init` here (the --git-init choice) would turn the repository's own files
        # into an untracked work tree (core.bare flipped to false). Refuse, never "initialise".
        raise GitError(
            f"{workspace} is a bare git repository or inside a .git directory: branch mode needs a work tree. "
            "Start oh in a checkout (a clone of it), or without --branch."
        )
    if inside.returncode != 0 or not answers or answers[0] != "true":
        if programs.find("git") is None:
            raise GitError(
                "git is not installed (or not on PATH); branch mode needs it. Install git, or start without --branch."
            )
        return RepoState(is_repo=False)
    head = _git(workspace, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    branch = head.stdout.strip() if head.returncode == 0 else None
    dirty = _git(workspace, "status", "--porcelain", "--untracked-files=normal").stdout.strip() != ""
    listed = _git(workspace, "for-each-ref", "--format=%(refname:short)", "refs/heads").stdout.split()
    return RepoState(is_repo=True, branch=branch, dirty=dirty, branches=frozenset(listed))


def _target(decision: Decision) -> str:
    """The branch a create/switch step goes to (a decision with those steps always names one)."""
    if decision.target is None:
        raise GitError("no branch to switch to")
    return decision.target


def apply(workspace: str, state: RepoState, decision: Decision) -> dict[str, Any]:
    """Carry out ``decision``'s steps; the ``branch`` observation's extras (§3.12). Raises GitError,
    having changed nothing more than the steps that succeeded (git's own operations are atomic)."""
    result: dict[str, Any] = {
        "branch": decision.target,
        "previous": state.branch,
        "created": False,
        "switched": False,
        "stashed": False,
        "carried": False,
        "initialized": False,
    }
    for step in decision.steps:
        if step == "init":
            _git(workspace, "init", "--quiet")
            result["initialized"] = True
            result["previous"] = None
        elif step == "stash":
            _git(
                workspace,
                "stash",
                "push",
                "--include-untracked",
                "--quiet",
                "--message",
                f"oh: before switching to {decision.target}",
            )
            result["stashed"] = True
        elif step == "create":
            # checkout -b keeps uncommitted changes (what "carry" means) and works on an unborn HEAD.
            _git(workspace, "checkout", "--quiet", "-b", _target(decision))
            result["created"] = result["switched"] = True
        elif step == "switch":
            _git(workspace, "checkout", "--quiet", _target(decision), "--")
            result["switched"] = True
    result["carried"] = state.dirty and not result["stashed"] and not result["initialized"]
    return result
