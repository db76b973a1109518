"""``which``: a program on PATH, found without importing ``shutil``.

Why not ``shutil.which``: ``import shutil`` loads ``zlib``, ``bz2`` and ``lzma`` (~1.5-2.5 ms), a sixth of the
interpreter's own start, and ``oh doctor`` (its bubblewrap probe, git, six editor CLIs) is held to 3x that start
(docs/benchmarks.md, "Commands people type"). On POSIX the search below gives ``shutil.which``'s answers
(``tests/test_pathsearch.py`` compares the two on generated PATH layouts); elsewhere (PATHEXT, the current
directory first on Windows) it is ``shutil.which`` itself.
"""

from __future__ import annotations

import os


def which(name: str, path: str | None = None) -> str | None:
    """The first runnable ``name`` on ``path`` (default: ``$PATH``), or None. A name with a ``/`` is checked as is."""
    if os.name != "posix":
        import shutil

        return shutil.which(name, path=path)
    if os.sep in name:
        return name if _runnable(name) else None
    if path is None:
        path = os.environ.get("PATH")
        if path is None:
            try:
                path = os.confstr("CS_PATH")
            except (AttributeError, ValueError):
                path = os.defpath
    if not path:
        return None
    seen: set[str] = set()
    for directory in path.split(os.pathsep):
        if directory in seen:
            continue
        seen.add(directory)
        candidate = os.path.join(directory, name)
        if _runnable(candidate):
            return candidate
    return None


def _runnable(candidate: str) -> bool:
    return os.path.exists(candidate) and os.access(candidate, os.X_OK) and not os.path.isdir(candidate)
