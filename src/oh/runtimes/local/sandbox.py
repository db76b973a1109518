"""The agent shell's sandbox on Linux: bubblewrap around the user's shell (README "Sandbox").

``protocol/sandbox.py`` decides what is writable and hidden; this module checks that bubblewrap works here
(once per process and program), finds what exists, and builds the command line. The engine calls
``Sandbox.wrap`` at one place, just before it spawns the shell on its pty: one sandbox per agent shell.

Why these bubblewrap options (each was checked with bwrap 0.8 and a real pty):

- ``--ro-bind / /`` then binds: the system and HOME read-only, the planned paths writable.
- the host's /tmp read-only (under ``--ro-bind / /``): tools and venvs there run; ``--tmpfs /var/tmp`` and
  ``--setenv TMPDIR /var/tmp``: the shell's temporary files go to a private, writable directory. /tmp's Unix
  sockets are covered at every network setting (``unixsocks.py``; docs/security.md §10 "/tmp").
- ``--unshare-pid`` + ``--proc /proc``: a fresh /proc; the backend's pid, environ, fds and memory are not
  there to read. ``--die-with-parent``: the sandbox ends with the backend.
- ``--unshare-net`` (network off): a private loopback only; the host's loopback servers are unreachable.
  A Unix socket at a path needs no network: with the network off, each path-bound socket of a process
  outside that the sandbox would show is covered by ``--ro-bind /dev/null`` (``connect()`` then fails with
  ECONNREFUSED), listed from /proc/net/unix when the shell starts (``unixsocks.py``).
- no ``--new-session``: the shell must keep the pty as its controlling terminal for job control and C-c.
  The pty is the agent's own (its other end is the backend), so a TIOCSTI injection only types into the
  sandboxed shell itself.
- ``--dev /dev``: a minimal /dev (bubblewrap binds the pty in as /dev/console); the host's other
  terminals are not there.
"""

from __future__ import annotations

import dataclasses
import logging
import os

from ... import programs
from ...protocol import sandbox as rules
from ...protocol.errors import ErrorId, ToolError
from ..bwrapcheck import Check, check  # noqa: F401 - re-exported: the runtime, `oh start` and tests ask here
from . import unixsocks
from .command import psutil  # None without it (optional at runtime)
from .gitwatch import Repo, RepoWatch, git_dirs
from .ptyproc import comm

log = logging.getLogger("oh.runtimes.local")

# Inside the workspace, read-only even in workspace-write: VS Code's tasks and settings run code outside the
# sandbox when the folder opens. Every repository in the writable roots (the workspace's own first) gets the
# files of its git directory that git reads to find its config, hooks and object store bound read-only
# (GIT_PROTECTED; docs/security.md §11.3): the user's next `git status` there reads them, outside the sandbox.
PROTECTED_IN_WORKSPACE = (".vscode",)
# gitrepository-layout(5): where git finds its config (config, config.worktree, commondir: another directory's
# config and hooks), its hooks, its object store (objects/info/alternates, http-alternates), other repositories it
# treats as its own (worktrees/*, modules/*: a submodule's git directory, reused by `git submodule update`), and
# info/ (attributes, exclude, grafts, sparse-checkout). tests/sandbox/test_wall_git.py holds the whole layout
# against this list.
GIT_PROTECTED = ("config", "hooks", "info", "commondir", "config.worktree", "objects/info", "worktrees", "modules")
# What stands in for a missing one, so that the agent cannot create it (the directory it lies in stays writable:
# git's own commits need `.git` itself writable for index.lock, HEAD.lock, COMMIT_EDITMSG). Each is what git reads
# as "nothing there": an empty directory, an empty config.worktree, and a commondir of "." (the repository is its
# own common directory: git behaves as without one; an empty commondir would stop git with "failed to read").
GIT_PLACEHOLDERS: dict[str, str | None] = {
    "hooks": None,
    "info": None,
    "objects/info": None,
    "worktrees": None,
    "modules": None,
    "config.worktree": "",
    "commondir": ".\n",
}


class SandboxUnavailable(ToolError):
    """bubblewrap cannot run here and the settings do not allow running unconfined (nothing ran)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorId.SANDBOX_UNAVAILABLE)


def oh_dirs(env: dict[str, str]) -> tuple[str, ...]:
    """oh's own state and config directories, by the rule of config/paths.py (OH_HOME, else the platform's
    dirs): hidden even when the caller (the VS Code engine host) was not told them."""
    home = env.get("OH_HOME")
    if home:
        return (os.path.abspath(os.path.expanduser(home)),)
    try:
        import platformdirs
    except ImportError:  # pragma: no cover - a dependency of oh
        return ()
    return (
        platformdirs.user_state_dir("oh", appauthor=False),
        platformdirs.user_config_dir("oh", appauthor=False),
    )


def _children(pid: int) -> list[int]:
    """The pids of ``pid``'s children: the kernel's list (/proc/PID/task/*/children), else psutil's scan."""
    try:
        found: list[int] = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                found += [int(x) for x in f.read().split()]
        return found
    except (OSError, ValueError):
        pass
    if psutil is None:
        return []
    try:
        return [c.pid for c in psutil.Process(pid).children()]
    except psutil.Error:
        return []


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (which may hold spaces and parentheses); [] when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _ppid(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[1]) if len(fields) > 1 else -1


def writable_dirs(spec: rules.Spec, workspace: str, roots: tuple[str, ...] = (), home: str = "") -> tuple[str, ...]:
    """What an agent's sandbox with ``spec`` may write (or writes unconfined): the workspace and roots at every
    level, the ``sandbox_writable`` entries at workspace-write. oh runs no program of its own from there
    (``programs.distrust``)."""
    home = home or os.path.expanduser("~")
    extra = [rules.expand(p, home) for p in spec.writable] if spec.on and spec.level == "workspace-write" else []
    return (workspace, *roots, *extra)


def _runtime_dir(env: dict[str, str]) -> str:
    given = env.get("XDG_RUNTIME_DIR", "")
    if given and os.path.isdir(given):
        return given
    mine = f"/run/user/{os.getuid()}" if hasattr(os, "getuid") else ""
    return mine if mine and os.path.isdir(mine) else ""


class Sandbox:
    """One agent's sandbox settings, resolved for a workspace; ``wrap`` builds each shell's command line."""

    def __init__(
        self,
        spec: rules.Spec,
        *,
        workspace: str,
        roots: tuple[str, ...] = (),
        hidden: tuple[str, ...] = (),
        repo_watch: RepoWatch | None = None,
    ) -> None:
        self.spec = spec
        self.workspace = os.path.realpath(workspace)
        self.roots = tuple(os.path.realpath(r) for r in roots)
        self.hidden = tuple(hidden)  # oh's directories as the backend knows them (OH_SESSION_DIR too)
        self.said = False  # the unavailable message or the level, said once per sandbox
        self._shells: dict[int, tuple[int, int]] = {}  # bwrap's pid -> (the inner bwrap's, the shell's): shell_pid
        self.unconfined = False  # fell back to running unconfined (sandbox_fallback = unconfined)
        self.wrapped = False  # the last shell started runs inside bubblewrap
        self.sockets = rules.Covers()  # what the last shell started covers (Unix sockets of programs outside)
        # The repositories in the writable roots (workspace-write): started now, so that its first walk (a
        # thread) is usually over when the first shell starts and binds them all.
        self.repo_watch = repo_watch
        # the writable paths (the repositories that matter): the last plan's, the workspace and roots before one
        self._writable: tuple[str, ...] = (self.workspace, *self.roots)
        if repo_watch is None and spec.on and spec.level == "workspace-write":
            self.repo_watch = RepoWatch((self.workspace, *self.roots))
        programs.distrust(*writable_dirs(spec, self.workspace, self.roots))

    @property
    def active(self) -> bool:
        return self.spec.on

    def with_network(self) -> "Sandbox":
        """The same sandbox with the network on: for one command allowed the network alone (``args.sandbox``
        "network"); everything else stays confined."""
        other = Sandbox(
            dataclasses.replace(self.spec, network=True),
            workspace=self.workspace,
            roots=self.roots,
            hidden=self.hidden,
            repo_watch=self.repo_watch,
        )
        other.said = True  # the agent's shell said its sandbox already
        return other

    def close(self) -> None:
        if self.repo_watch is not None:
            self.repo_watch.close()

    def new_repos(self, protected: frozenset[Repo] | None) -> list[str]:
        """Repositories in the writable roots that a shell binding ``protected`` leaves writable: the shell
        must be restarted before its next command (README "Sandbox"). Empty when the watch cannot tell."""
        watch = self.repo_watch
        if protected is None or watch is None:
            return []
        now = watch.repos()
        if now is None:
            return []
        return sorted({path for path, ino in now - protected if self._writable_path(path)})

    def _writable_path(self, path: str) -> bool:
        return any(path == w or path.startswith(w.rstrip("/") + "/") for w in self._writable)

    def status(self) -> dict[str, object]:
        """For `oh status` and the live view."""
        if not self.spec.on:
            return {"level": "off", "network": True, "confined": False, "summary": self.spec.describe()}
        found = check(self.spec.bwrap)
        if not found.ok:
            fallback = self.spec.fallback == "unconfined"
            return {
                "level": self.spec.level,
                "network": self.spec.network,
                "confined": False,
                "summary": ("unconfined (fallback): " if fallback else "unavailable: ") + found.problem,
                "fix": found.fix,
            }
        return {
            "level": self.spec.level,
            "network": self.spec.network,
            "confined": True,
            "summary": self.spec.describe(),
        }

    def wrap(self, argv: list[str], env: dict[str, str], *, cwd: str, scratch: tuple[str, ...]) -> list[str]:
        """``argv`` inside the sandbox (unchanged when the level is off, or unconfined by the fallback
        setting). Raises SandboxUnavailable when bubblewrap cannot run and the settings say refuse."""
        return self.wrap_bound(argv, env, cwd=cwd, scratch=scratch)[0]

    def wrap_bound(
        self, argv: list[str], env: dict[str, str], *, cwd: str, scratch: tuple[str, ...]
    ) -> tuple[list[str], frozenset[Repo] | None]:
        """``wrap``, and the git directories whose hooks and config this shell binds read-only (None: not
        sandboxed, or nothing writable): what ``new_repos`` compares with before the shell's next command."""
        self.wrapped = False
        if not self.spec.on:
            return argv, None
        found = check(self.spec.bwrap)
        if not found.ok:
            if self.spec.fallback == "unconfined":
                self.unconfined = True
                return argv, None
            raise SandboxUnavailable(found.message)
        self.unconfined = False
        self.wrapped = True
        home = env.get("HOME") or os.path.expanduser("~")
        hidden = tuple(dict.fromkeys(self.hidden + oh_dirs(env)))
        plan = rules.plan(
            self.spec,
            home=os.path.realpath(home),
            workspace=self.workspace,
            roots=self.roots,
            scratch=tuple(os.path.realpath(s) for s in scratch),
            oh_dirs=tuple(os.path.realpath(h) for h in hidden),
            runtime_dir=_runtime_dir(env),
        )
        _make_cache_dir(env, home, plan)
        self._cover_sockets(plan, (os.path.realpath(home), os.path.realpath(cwd), self.workspace, *self.roots))
        watch = self.repo_watch
        if watch is None:
            binds = mounts(plan, self.workspace, sockets=self.sockets)
            return [found.bwrap, *binds, "--chdir", cwd, "--", *argv], None
        self._writable = plan.writable
        repos = watch.snapshot() | frozenset(git_dirs(os.path.join(self.workspace, ".git")))
        bound = frozenset(r for r in repos if self._writable_path(r[0]))
        binds = mounts(plan, self.workspace, frozenset(path for path, _ in bound), self.sockets)
        for pointer in sorted(p for p in watch.pointer_files() if self._writable_path(p)):
            binds += ["--ro-bind", pointer, pointer]  # a nested `gitdir:` file: where git finds the rest
        return [found.bwrap, *binds, "--chdir", cwd, "--", *argv], bound

    def _cover_sockets(self, plan: rules.Plan, keep: tuple[str, ...]) -> None:
        """The sockets this shell covers: listed and checked (lstat) now, just before bubblewrap starts,
        so that one deleted since is not a bind target (bubblewrap fails on a missing one)."""
        self.sockets = rules.Covers()
        seen = dataclasses.replace(plan, hidden=tuple(os.path.realpath(h) for h in plan.hidden))
        live = unixsocks.live()
        self.sockets = rules.sockets_to_cover(live, seen, unixsocks.only_sockets(live, rules.COLLAPSE_AT), keep)
        if self.sockets.left:
            log.warning(
                "sandbox: %d Unix sockets of programs outside left reachable (more than %d covers; in "
                "directories holding HOME, the workspace or a bind), e.g. %s",
                len(self.sockets.left),
                rules.MAX_SOCKETS,
                self.sockets.left[0],
            )

    def sockets_vanished(self) -> bool:
        """A socket the last shell's sandbox covers is gone: the shell may have failed to start because of it
        (bubblewrap cannot bind over a missing path); a new start lists them again."""
        return any(not unixsocks.is_socket(p) for p in self.sockets.files) or any(
            not os.path.isdir(d) for d in self.sockets.dirs
        )

    def shell_pid(self, pid: int) -> int:
        """The shell's pid when ``pid`` is the bubblewrap that runs it (its /proc/<pid>/cwd is the shell's
        directory, readable from outside); ``pid`` itself when the shell is not wrapped.

        Asked before every command (consent decides from the shell's directory), so it must not cost a scan of
        every process on the machine (psutil's ``children`` reads /proc/*/stat: 70% of the backend's time per
        `run true` on a busy machine, issue 41). The chain is found once from the kernel's own child lists and
        kept while it holds (a shell's pid never changes; each use checks the two parent links)."""
        if not self.wrapped or pid <= 0:
            return pid
        known = self._shells.get(pid)
        if known is not None and _ppid(known[1]) == known[0] and _ppid(known[0]) == pid:
            return known[1]
        parent, level = pid, [pid]
        for _ in range(3):  # bwrap -> bwrap (the namespace's init) -> the shell
            level = [c for p in level for c in _children(p)]
            found = next((c for c in level if comm(c) != "bwrap"), None)
            if found is not None:
                parent = _ppid(found)
                if len(self._shells) >= 64:  # shells come and go (jobs, extra shells): a bound, not a leak
                    self._shells.clear()
                self._shells[pid] = (parent, found)
                return found
        return -1

    def note(self) -> str:
        """What the first observation of a shell says about its sandbox."""
        if self.unconfined:
            return (
                f"Sandbox: none. {check(self.spec.bwrap).message} (sandbox_fallback = unconfined: commands run "
                "unconfined, as you.)"
            )
        if not self.spec.on:
            return ""  # the user's explicit choice; `oh start` and `oh status` say it
        left = ""
        if self.sockets.left:
            left = (
                f" {len(self.sockets.left)} Unix sockets of programs outside stay reachable (more than "
                f"{rules.MAX_SOCKETS} covers; in directories holding HOME, the workspace or a bind)."
            )
        return (
            f"Sandbox: {self.spec.describe()}.{left} To run one command outside it, send the run with "
            'args sandbox "off" and a reason: the user is asked.'
        )


def _git_placeholders(gitdir: str) -> None:
    """The protected files of ``gitdir`` that do not exist get a stand-in git reads as "nothing there"
    (GIT_PLACEHOLDERS), so that they are bound read-only like existing ones: else the agent could create a
    ``commondir`` naming a directory it controls (its config and hooks then run at the user's next git
    command), an ``alternates`` file, a hook. Made as the user, outside the sandbox, never through a symlink."""
    if not os.path.isdir(gitdir) or os.path.islink(gitdir) or not os.path.isfile(os.path.join(gitdir, "config")):
        return
    for rel, content in GIT_PLACEHOLDERS.items():
        path = os.path.join(gitdir, rel)
        if os.path.lexists(path) or not os.path.isdir(os.path.dirname(path)) or os.path.islink(os.path.dirname(path)):
            continue
        if rel == "commondir" and os.path.basename(os.path.dirname(gitdir)) == "worktrees":
            continue  # a linked worktree's git directory: its commondir exists (git made it), or it is broken
        try:
            if content is None:
                os.mkdir(path, 0o755)
            else:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                with os.fdopen(fd, "w") as f:
                    f.write(content)
        except OSError as exc:  # the repository is not writable for us either: nor for the agent
            log.info("sandbox: cannot create %s to protect it: %s", path, exc)


def _git_binds(gitdir: str) -> list[str]:
    """bubblewrap's read-only binds of ``gitdir``'s protected files (GIT_PROTECTED), placeholders made first."""
    _git_placeholders(gitdir)
    out: list[str] = []
    for rel in GIT_PROTECTED:
        path = os.path.join(gitdir, rel)
        if os.path.lexists(path) and not os.path.islink(path):
            out += ["--ro-bind", path, path]
    return out


def _vscode_dir(workspace: str) -> None:
    """A workspace without ``.vscode`` gets an empty one, bound read-only like an existing one: else the agent
    could create it with a ``tasks.json`` that runs on folder open, or settings naming a program VS Code starts,
    outside the sandbox. (An empty directory: git does not track it; VS Code treats it as no settings.)"""
    path = os.path.join(workspace, ".vscode")
    if not os.path.lexists(path):
        try:
            os.mkdir(path, 0o755)
        except OSError as exc:  # the workspace is not writable for us either: nor for the agent
            log.info("sandbox: cannot create %s to protect it: %s", path, exc)


def _make_cache_dir(env: dict[str, str], home: str, plan: rules.Plan) -> None:
    """The user's cache directory (``$XDG_CACHE_HOME``, else ``~/.cache``), made (0700) when it is missing and
    meant to be writable: tools create their caches in it (uv, pip, npm's node-gyp), and inside the sandbox
    HOME is read-only, so without it their first run there fails ("Read-only file system")."""
    path = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    if not os.path.isabs(path) or os.path.lexists(path) or not os.path.isdir(os.path.dirname(path)):
        return
    if not any(os.path.realpath(w) == os.path.realpath(path) for w in plan.writable):
        return  # not one of the caches the settings make writable (sandbox_writable)
    try:
        os.mkdir(path, 0o700)
    except OSError as exc:
        log.debug("could not make the cache directory %s: %s", path, exc)


def _repo_binds(repos: frozenset[str], workspace: str) -> list[str]:
    out: list[str] = []
    top = os.path.join(workspace, ".git")
    for gitdir in sorted(repos):
        if gitdir == top:
            continue  # bound above
        out += _git_binds(gitdir)
    return out


def mounts(
    plan: rules.Plan, workspace: str, repos: frozenset[str] = frozenset(), sockets: rules.Covers = rules.Covers()
) -> list[str]:
    """bubblewrap's options for ``plan`` (paths that do not exist are skipped); ``repos``: git directories in
    the writable roots whose git files are bound read-only (GIT_PROTECTED); ``sockets``: Unix
    sockets of programs outside, covered last (over whatever bind shows them): a directory by an empty
    read-only tmpfs, a socket by an empty character device (``connect()`` fails: ECONNREFUSED)."""
    out = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", rules.PRIVATE_TMP]
    # $TMPDIR for most programs; zsh's here-documents and `=(...)` use $TMPPREFIX (default /tmp/zsh) instead
    out += ["--setenv", "TMPDIR", rules.PRIVATE_TMP, "--setenv", "TMPPREFIX", rules.PRIVATE_TMP + "/zsh"]
    for path in plan.readonly:
        if os.path.isdir(path):
            out += ["--ro-bind", path, path]
    for path in plan.writable:
        if os.path.isdir(path):
            out += ["--bind", path, path]
    covered = []
    for path in plan.hidden:
        real = os.path.realpath(path)
        if os.path.isdir(real):
            out += ["--tmpfs", real]
            covered.append(real)
        elif os.path.lexists(real):
            out += ["--ro-bind", "/dev/null", real]
    for path in plan.scratch:
        if os.path.isdir(path):
            out += ["--bind", path, path]
    for real in covered:  # read-only once oh's scratch files (which may lie inside) are bound
        out += ["--remount-ro", real]
    if workspace in plan.writable:
        _vscode_dir(workspace)
        for rel in PROTECTED_IN_WORKSPACE:
            path = os.path.join(workspace, rel)
            if os.path.lexists(path) and not os.path.islink(path):
                out += ["--ro-bind", path, path]
        dotgit = os.path.join(workspace, ".git")
        if os.path.isdir(dotgit) and not os.path.islink(dotgit):
            out += _git_binds(dotgit)
        elif os.path.isfile(dotgit) and not os.path.islink(dotgit):
            out += ["--ro-bind", dotgit, dotgit]  # a `gitdir:` file: where git looks for everything else
    out += _repo_binds(repos, workspace)
    for path in sockets.dirs:
        out += ["--tmpfs", path, "--remount-ro", path]
    for path in sockets.files:
        out += ["--ro-bind", "/dev/null", path]
    out += ["--unshare-pid", "--unshare-ipc", "--unshare-cgroup-try", "--die-with-parent"]
    if not plan.network:
        out.append("--unshare-net")
    return out
