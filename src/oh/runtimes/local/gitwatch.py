"""The git repositories in the sandbox's writable roots, kept current by inotify (README "Sandbox", issue 27).

Why: a repository's ``hooks`` and ``config`` run code outside the sandbox later (the user's next ``git commit``
there), so every sandboxed shell binds them read-only. bubblewrap binds are fixed when the shell starts; a
repository the agent creates afterwards (``git init sub``, ``mkdir -p x/.git``, a ``mv`` or ``tar -x`` of one) was
writable for the rest of that shell's life. This watch tells the terminal, just before the agent's next command,
that a repository appeared which its shell does not protect; the terminal then restarts the shell (sandbox.py
binds every known repository's hooks and config), keeping its directory and exports.

How: one inotify watch per directory of the writable roots (``.git`` directories themselves are not entered),
CREATE and MOVED_TO only: a ``.git`` entry appearing, or a directory appearing (walked then: it may hold
repositories, and its directories get watches before they are read, so nothing created meanwhile is missed).
Checking is one non-blocking ``read`` (microseconds) per command; the first walk runs in a thread when the
sandbox is made, off the first shell's path. When inotify cannot serve (no inotify, the watch limit), the
watch says so (``degraded``) and repositories are protected from the next shell on only, as before.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

log = logging.getLogger("oh.runtimes.local")


def _inotify() -> Any:
    """inotify_simple (a dependency on Linux), or None elsewhere (no sandbox there either)."""
    try:
        import inotify_simple
    except ImportError:
        return None
    return inotify_simple


# A git directory as the sandbox knows it: its real path and its inode. The inode matters: a repository
# removed (or moved away) and made again at the same path is a new one that no running shell protects.
Repo = tuple[str, int]


def git_dirs(dotgit: str) -> list[Repo]:
    """The directories whose ``hooks`` and ``config`` git uses for the repository whose ``.git`` is ``dotgit``:
    the directory itself, or where a ``gitdir:`` file points (a linked worktree, a submodule), plus its
    ``commondir`` (a worktree's hooks and config are the main repository's)."""
    out = []
    for path in _git_paths(dotgit):
        try:
            out.append((path, os.stat(path).st_ino))
        except OSError:
            pass
    return out


def _git_paths(dotgit: str) -> list[str]:
    if os.path.isdir(dotgit):
        found = [os.path.realpath(dotgit)]
    else:
        try:
            with open(dotgit, encoding="utf-8", errors="replace") as f:
                line = f.read(4096).strip()
        except OSError:
            return []
        if not line.startswith("gitdir:"):
            return []
        target = os.path.join(os.path.dirname(dotgit), line[len("gitdir:") :].strip())
        if not os.path.isdir(target):
            return []
        found = [os.path.realpath(target)]
    try:
        with open(os.path.join(found[0], "commondir"), encoding="utf-8", errors="replace") as f:
            common = os.path.realpath(os.path.join(found[0], f.read(4096).strip()))
        if os.path.isdir(common):
            found.append(common)
    except OSError:
        pass
    return found


# config keys that make git run a program (a hook by another name), reported like planted hooks
_RUNS = ("hookspath", "fsmonitor", "sshcommand", "editor", "pager", "askpass", "textconv", "helper", "clean", "smudge")


def planted_hooks(gitdir: str) -> list[str]:
    """What in a new repository's ``gitdir`` would run a program at the user's next git command there: hooks
    that are not git's ``*.sample`` files, and config lines naming a program (``core.hooksPath``,
    ``core.fsmonitor``, a ``filter`` …). For the note when the shell restarts: the command that made the
    repository could write them before the shell was restarted."""
    out = []
    hooks = os.path.join(gitdir, "hooks")
    try:
        out += [os.path.join(hooks, n) for n in sorted(os.listdir(hooks)) if not n.endswith(".sample")]
    except OSError:
        pass
    try:
        with open(os.path.join(gitdir, "config"), encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 16)
    except OSError:
        return out
    keys = {line.split("=", 1)[0].strip().lower() for line in text.splitlines() if "=" in line}
    if any(k in _RUNS for k in keys) or "alias" in text.lower():
        out.append(os.path.join(gitdir, "config"))
    return out


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class RepoWatch:
    """The git directories under ``roots`` (real paths), current as of the last ``repos()`` call."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = tuple(os.path.realpath(r) for r in roots)
        self.found: set[Repo] = set()
        self.pointers: set[str] = set()  # `.git` files (`gitdir:`: a submodule, a linked worktree), bound read-only
        self.degraded = ""  # why new repositories are protected only from the next shell on, or ""
        self._dirs: dict[int, str] = {}  # watch descriptor -> directory
        self._found_lock = threading.Lock()  # ``found``: the first walk (a thread) adds, shells' starts read
        self._ready = threading.Event()  # the first walk is over: checks may drain (the loop's thread only)
        self.inotify: Any = None
        lib = _inotify()
        self.flags: Any = lib.flags if lib is not None else None
        if lib is None:
            self.degraded = "no inotify on this system"
        else:
            try:
                self.inotify = lib.INotify(nonblocking=True)
            except OSError as exc:  # EMFILE: max_user_instances reached
                self.degraded = f"no inotify instance ({exc.strerror})"
        threading.Thread(target=self._first_walk, name="oh-gitwatch", daemon=True).start()

    def _first_walk(self) -> None:
        try:
            for root in self.roots:
                self._walk(root)
        except Exception:  # never let a walk error pass silently into "nothing new": say degraded
            log.exception("sandbox: the repository watch failed")
            self.degraded = self.degraded or "the repository watch failed (see the log)"
        finally:
            self._ready.set()

    def _watch(self, path: str) -> None:
        if self.inotify is None or self.degraded:
            return
        try:
            f = self.flags
            wd = self.inotify.add_watch(path, f.CREATE | f.MOVED_TO | f.ONLYDIR | f.DONT_FOLLOW)
        except FileNotFoundError:
            return
        except OSError as exc:  # ENOSPC: /proc/sys/fs/inotify/max_user_watches
            self.degraded = f"inotify watch limit reached ({exc.strerror})"
            log.warning("sandbox: %s: repositories made inside the sandbox are protected from its next shell on", exc)
            return
        self._dirs[wd] = path  # the same inode watched again (a moved directory): its new path

    def _walk(self, top: str) -> None:
        """Watch every directory under ``top`` (each before it is read) and note the repositories there."""
        stack = [top]
        while stack:
            path = stack.pop()
            self._watch(path)
            try:
                entries = list(os.scandir(path))
            except OSError:
                continue
            for entry in entries:
                if entry.name == ".git":
                    self._add(git_dirs(entry.path), entry.path)
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)

    @property
    def ready(self) -> bool:
        """The first walk is over: ``repos`` answers from now on."""
        return self._ready.is_set()

    def _add(self, dirs: list[Repo], dotgit: str = "") -> None:
        with self._found_lock:
            self.found.update(d for d in dirs if any(_under(d[0], root) for root in self.roots))
            if dotgit and os.path.isfile(dotgit) and not os.path.islink(dotgit):
                self.pointers.add(dotgit)

    def pointer_files(self) -> frozenset[str]:
        """The `.git` files found so far: where git looks for a submodule's or a linked worktree's git directory."""
        with self._found_lock:
            return frozenset(p for p in self.pointers if os.path.isfile(p) and not os.path.islink(p))

    def snapshot(self) -> frozenset[Repo]:
        """The repositories found so far (the first walk may still run): what a starting shell binds."""
        with self._found_lock:
            return frozenset(self.found)

    def _drain(self) -> None:
        flags = self.flags
        while self.inotify is not None:
            events = self.inotify.read(timeout=0)
            if not events:
                return
            for ev in events:
                if ev.mask & flags.Q_OVERFLOW:  # the kernel lost events: look at everything again
                    for root in self.roots:
                        self._walk(root)
                    continue
                if ev.mask & flags.IGNORED:
                    self._dirs.pop(ev.wd, None)
                    continue
                parent = self._dirs.get(ev.wd)
                if parent is None or not ev.name:
                    continue
                path = os.path.join(parent, ev.name)
                if ev.name == ".git":
                    self._add(git_dirs(path), path)
                elif ev.mask & flags.ISDIR:
                    self._walk(path)

    def repos(self) -> frozenset[Repo] | None:
        """The git directories now (the events so far drained: one non-blocking read); None when the watch
        cannot tell yet (its first walk still runs) or at all (degraded). Never blocks."""
        if not self._ready.is_set() or self.degraded:
            return None
        self._drain()
        return None if self.degraded else self.snapshot()

    def close(self) -> None:
        if self.inotify is not None:
            self.inotify.close()
