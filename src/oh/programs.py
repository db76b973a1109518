"""The programs oh runs itself (git, rg, bwrap, python3, ssh, bash, uv): found by absolute path, never in a
directory the agent's sandbox can write (issue 36, item 2; docs/security.md §11.2).

Why: oh's own helpers run outside the sandbox. Found on PATH as it is, a ``git`` the agent planted in the
workspace's ``.venv/bin`` (on PATH for a user who started oh from an activated venv), or an ``rg`` in a
writable shims directory, ran as the user. So every lookup here skips the directories the sandbox makes
writable (``distrust``: the workspace, the allowed roots, the ``sandbox_writable`` entries, oh's scratch) and
relative PATH entries, and says why it skipped a candidate (``refusals``). A program found is kept per (name, PATH)
while it stays runnable; a directory distrusted later drops the kept answers that lie in it.
``env()`` is the environment to run them with: PATH without any distrusted or relative directory.

Layer 8 (docs/architecture.md): stdlib only (no lock: two threads looking up at once find the same answer);
``pathsearch.which`` is the lookup of one directory.
"""

from __future__ import annotations

import os

from .pathsearch import which

# Looked up at the backend's start (``resolve``): the programs the backend and its runtimes run themselves.
NAMES = ("git", "rg", "bwrap", "python3", "ssh", "bash", "uv")

_distrusted: list[str] = []  # real paths of directories the sandbox can write
_found: dict[tuple[str, str], str] = {}
refusals: dict[str, str] = {}  # name -> why the last candidate refused was refused


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/")


def distrust(*dirs: str) -> None:
    """Directories the agent's sandbox can write (absolute; ``~`` is HOME): no program is taken from inside
    them from now on, and the kept answers that lie in them are looked up again."""
    real = [os.path.realpath(os.path.expanduser(d)) for d in dirs if d and os.path.isabs(os.path.expanduser(d))]
    for d in real:
        if d not in _distrusted and d != "/":
            _distrusted.append(d)
    for key, path in list(_found.items()):
        if _why(path):
            del _found[key]


def distrusted() -> tuple[str, ...]:
    return tuple(_distrusted)


def reset() -> None:
    """Forget every distrusted directory and kept answer (tests; a process serving another workspace)."""
    _distrusted.clear()
    _found.clear()
    refusals.clear()


def _why(candidate: str) -> str:
    """Why ``candidate`` must not run outside the sandbox ("" when it may): it, its real path or its
    directory's real path lies in a directory the sandbox can write."""
    places = (
        os.path.abspath(candidate),
        os.path.realpath(candidate),
        os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(candidate))), os.path.basename(candidate)),
    )
    for place in places:
        for d in _distrusted:
            if _under(place, d):
                return f"{candidate} lies in {d}, which the agent's sandbox can write"
    return ""


def why_untrusted(candidate: str) -> str:
    """The public form of the check: "" when ``candidate`` (an absolute path) may run outside the sandbox."""
    if not os.path.isabs(candidate):
        return f"{candidate} is not an absolute path"
    return _why(candidate)


def _path(path: str | None) -> str:
    if path is not None:
        return path
    got = os.environ.get("PATH")
    if got is None:
        try:
            got = os.confstr("CS_PATH") or os.defpath
        except (AttributeError, ValueError):
            got = os.defpath
    return got


def find(name: str, path: str | None = None) -> str | None:
    """``name``'s absolute path: the first on ``path`` (default: ``$PATH``) outside every distrusted directory,
    or None (``refusals[name]`` says which candidate was skipped and why). An absolute ``name`` is checked as is."""
    path = _path(path)
    key = (name, path)  # the PATH searched, not None: a process whose PATH changes looks again
    kept = _found.get(key)
    if kept is not None and os.access(kept, os.X_OK):
        return kept
    if os.path.isabs(name):
        reason = _why(name)
        if reason:
            refusals[name] = reason
            return None
        found = which(name)
        if found is not None:
            _found[key] = found
        return found
    found = None
    for directory in dict.fromkeys(path.split(os.pathsep)):
        if not directory or not os.path.isabs(directory):
            continue  # relative: the current directory, which may be the workspace
        candidate = which(name, path=directory)
        if candidate is None:
            continue
        reason = _why(candidate)
        if reason:
            refusals[name] = reason
            continue
        found = candidate
        break
    if found is not None:  # a program installed later is found then
        _found[key] = found
    return found


def resolve(names: tuple[str, ...] = NAMES) -> dict[str, str | None]:
    """Look up ``names`` now (the backend's start): later lookups answer from what was found here."""
    return {name: find(name) for name in names}


def safe_path(path: str | None = None) -> str:
    """``path`` (default: ``$PATH``) without relative entries and without the directories the sandbox can
    write: the PATH oh's own programs run with (git's hooks, ssh's ProxyCommand look there)."""
    keep = []
    for d in dict.fromkeys(_path(path).split(os.pathsep)):
        if not d or not os.path.isabs(d):
            continue
        real = os.path.realpath(d)
        if any(_under(real, u) or _under(os.path.abspath(d), u) for u in _distrusted):
            continue
        keep.append(d)
    return os.pathsep.join(keep)


def env(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """The environment to run one of oh's own programs with: ``base`` (default: this process's) with a safe PATH."""
    out = dict(os.environ if base is None else base)
    out["PATH"] = safe_path(out.get("PATH", ""))
    out.update(extra)
    return out
