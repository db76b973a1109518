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

from . import programs
from .errors import OhBaseError
from .protocol.branch import Decision, RepoState

GIT_TIMEOUT = 30.0  # a stash of a large tree can take a while; never for ever
CHECKOUT_TIMEOUT = 600.0  # a worktree's checkout, a merge's and a worktree's removal write the whole tree


class GitError(OhBaseError):
    """git is missing, failed or timed out; the message says which and what git said."""


def _env() -> dict[str, str]:
    env = programs.env()  # PATH without a directory the sandbox can write (hooks look there)
    # Never wait for a human: no prompts, no editors, no pagers; stable English messages.
    env.update(GIT_TERMINAL_PROMPT="0", GIT_EDITOR="true", GIT_PAGER="cat", LC_ALL="C", LANG="C")
    return env


def _git(cwd: str, *args: str, check: bool = True, timeout: float = GIT_TIMEOUT) -> subprocess.CompletedProcess:
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
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise GitError(
                f"`git {' '.join(args)}` did not finish within {timeout:g} s (a git hook waiting?)."
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


# ---- Worktrees per agent (issue 37 item 3, docs/protocol.md §3.19, docs/security.md §13.1) ----
#
# The repository oh runs git on here is agent-writable (the agents' worktrees, and the workspace itself), so each
# of these git calls switches off everything that would run a program the agent could have planted (issue 36's
# lesson: outside never trusts inside): hooks, the fsmonitor, external diff, textconv, signing, and the
# commands named by any filter or merge driver the configuration defines (emptied one by one: git treats an
# empty command as no filter) when the repository's own configuration defines them (the user's global and system
# configuration is the user's, and git-lfs's filter lives there). They come from `git config --get-regexp`, which
# only reads files.

WORKTREE_PREFIX = "oh/wt/"  # the branches of agents' worktrees
_FIXED = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "diff.external=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "merge.verifySignatures=false",
    "core.sshCommand=false",
    "credential.helper=",
    "submodule.recurse=false",
    "protocol.allow=never",
)
_DRIVER_KEYS = r"^(filter|merge|diff)\..+\.(clean|smudge|process|driver|command|textconv)$"


def _neutral(cwd: str) -> list[str]:
    """`-c` options that leave no program of the repository's configuration to run."""
    out: list[str] = []
    for pair in _FIXED:
        out += ["-c", pair]
    found = _git(cwd, *out, "config", "--null", "--show-scope", "--get-regexp", _DRIVER_KEYS, check=False)
    items = found.stdout.split("\0")
    # Only the repository's own configuration (and the files it includes): the agent may have written it. The
    # user's global and system configuration stays in force (git-lfs's filter lives there, and is needed).
    keys = {entry.split("\n", 1)[0] for scope, entry in zip(items[::2], items[1::2]) if scope in ("local", "worktree")}
    for key in sorted(keys):
        out += ["-c", f"{key}=" if not key.endswith(".driver") else f"{key}=false"]
    return out


def safe_git(cwd: str, *args: str, check: bool = True, timeout: float = GIT_TIMEOUT) -> subprocess.CompletedProcess:
    """git in a repository an agent may have written to: no hook, fsmonitor, filter or driver of its config runs."""
    return _git(cwd, *_neutral(cwd), *args, check=check, timeout=timeout)


def toplevel(workspace: str) -> str:
    """The work tree's root containing ``workspace``; GitError naming the fix when it is in none."""
    done = _git(workspace, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise GitError(
            f"{workspace} is not in a git repository: a worktree per agent needs one. Run `git init` and commit, "
            "or start without --isolate."
        )
    return os.path.realpath(done.stdout.strip())


def add_worktree(workspace: str, root: str, slug: str) -> tuple[str, str]:
    """The worktree of agent ``slug`` (branch ``oh/wt/<slug>``): the existing one (a reconnection, the next `oh run`
    of the same agent); else its branch checked out again when it is left without a worktree (its directory
    deleted: its earlier work comes back); else a new branch from HEAD. The directory is ``root/<slug>`` (oh's
    worktrees directory, never the repository), ``<slug>.2``, ``.3``… when something else is in the way.
    Returns (its path, its branch)."""
    top = toplevel(workspace)
    branch = WORKTREE_PREFIX + slug
    for wt in list_worktrees(top, root, details=False):
        if wt["branch"] == branch:
            return wt["path"], branch
    head = _git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    if head.returncode != 0:
        raise GitError(f"{top} has no commit yet: a worktree starts from one. Commit first (`git commit`).")
    safe_git(top, "worktree", "prune")  # forget worktrees whose directories are gone (their branches stay)
    path, n = os.path.join(root, slug), 1
    while os.path.lexists(path):
        n += 1
        path = os.path.join(root, f"{slug}.{n}")
    known = _git(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode == 0
    new = () if known else ("-b", branch)
    safe_git(top, "worktree", "add", "--quiet", *new, path, branch if known else "HEAD", timeout=CHECKOUT_TIMEOUT)
    return os.path.realpath(path), branch


def list_worktrees(workspace: str, root: str, details: bool = True) -> list[dict[str, Any]]:
    """oh's worktrees of ``workspace``'s repository (those under ``root``): path, branch, agent and, with
    ``details``, commits ahead of the user's HEAD and files changed and not yet committed."""
    top = toplevel(workspace)
    text = _git(top, "worktree", "list", "--porcelain").stdout
    out = []
    real_root = os.path.realpath(root)
    for block in text.split("\n\n"):
        fields = dict(line.split(" ", 1) for line in block.splitlines() if " " in line)
        path, ref = fields.get("worktree", ""), fields.get("branch", "")
        if not path.startswith(real_root + os.sep) or not ref.startswith("refs/heads/" + WORKTREE_PREFIX):
            continue
        branch = ref[len("refs/heads/") :]
        wt: dict[str, Any] = {"path": path, "branch": branch, "agent": branch[len(WORKTREE_PREFIX) :]}
        if details:
            ahead = _git(top, "rev-list", "--count", f"HEAD..{branch}", check=False).stdout.strip()
            status = ("status", "--porcelain", "--untracked-files=all")
            dirty = safe_git(path, *status, check=False, timeout=CHECKOUT_TIMEOUT).stdout.splitlines()
            wt.update(ahead=int(ahead or 0), uncommitted=len(dirty))
        out.append(wt)
    return out


class MergeConflict(GitError):
    """The agent's branch does not merge cleanly; ``files`` are the conflicting paths. Nothing was changed."""

    def __init__(self, message: str, files: list[str]) -> None:
        super().__init__(message)
        self.files = files


def _identity(cwd: str) -> list[str]:
    """A committer for oh's commit of an agent's work when the user has configured none (git refuses then)."""
    if _git(cwd, "config", "user.email", check=False).stdout.strip():
        return []
    return ["-c", "user.name=oh", "-c", "user.email=oh@localhost"]


def commit_worktree(wt: dict[str, Any], message: str) -> bool:
    """Commit what the agent left uncommitted in its worktree (oh's commit, no hook). True when there was some."""
    path = wt["path"]
    safe_git(path, "add", "--all", timeout=CHECKOUT_TIMEOUT)
    if safe_git(path, "diff", "--cached", "--quiet", "--no-ext-diff", check=False).returncode == 0:
        return False
    safe_git(path, *_identity(path), "commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", message)
    return True


def merge_worktree(workspace: str, wt: dict[str, Any], keep: bool = False) -> dict[str, Any]:
    """Bring an agent's worktree back into the workspace's checkout: its uncommitted work committed on its
    branch, then a fast-forward or a real merge of the branch into the user's HEAD. A conflict (found first with
    ``git merge-tree``, which writes no file) raises MergeConflict naming the files, with the user's tree and
    HEAD untouched; so does git's refusal to overwrite the user's uncommitted changes. On success the worktree
    and its branch are removed unless ``keep``. Returns {branch, committed, summary, how, removed}."""
    top = toplevel(workspace)
    branch = wt["branch"]
    committed = commit_worktree(wt, f"oh: the work of agent {wt['agent']} (its worktree)")
    summary = safe_git(top, "diff", "--stat", "--no-ext-diff", "--no-textconv", f"HEAD...{branch}").stdout
    ahead = int(_git(top, "rev-list", "--count", f"HEAD..{branch}").stdout.strip() or 0)
    how = "nothing to merge"
    if ahead:
        probe = safe_git(top, "merge-tree", "--write-tree", "--name-only", "--no-messages", "HEAD", branch, check=False)
        if probe.returncode == 1:
            files = [f for f in probe.stdout.splitlines()[1:] if f]
            raise MergeConflict(f"{branch} conflicts with your branch in: {', '.join(files[:20])}", files)
        if probe.returncode != 0:
            raise GitError(f"git merge-tree failed: {(probe.stderr or probe.stdout).strip()[:300]}")
        behind = int(_git(top, "rev-list", "--count", f"{branch}..HEAD").stdout.strip() or 0)
        args = ["merge", "--quiet", "--no-verify", "--no-gpg-sign", "--no-edit"]
        args += ["--ff-only"] if behind == 0 else ["--no-ff", "-m", f"oh merge {branch}"]
        done = safe_git(top, *_identity(top), *args, branch, check=False, timeout=CHECKOUT_TIMEOUT)
        if done.returncode != 0:
            if _git(top, "rev-parse", "--verify", "--quiet", "MERGE_HEAD", check=False).returncode == 0:
                safe_git(top, "merge", "--abort", check=False)
            said = (done.stderr or done.stdout).strip().splitlines()
            raise GitError(f"git merge of {branch} refused: {' '.join(said[-4:])[:500]}")
        how = "fast-forward" if behind == 0 else "merge commit"
    removed = False
    if not keep:
        safe_git(top, "worktree", "remove", "--force", wt["path"], timeout=CHECKOUT_TIMEOUT)
        safe_git(top, "branch", "-D" if not ahead else "-d", branch)
        removed = True
    return {"branch": branch, "committed": committed, "summary": summary, "how": how, "removed": removed}
