"""Path containment: the one rule for "is this path the root or below it" (one owner per rule).

Pure and stdlib-only, so every layer uses it, the fast path included (importing this module loads
nothing but ``os``). Lexical: it normalises ``.``, ``..``, repeated and trailing slashes, but does
not touch the file system, so symlinks are the caller's job: pass ``os.path.realpath`` results when
the answer must hold for what is really opened (every caller that guards access does). The VS Code
extension mirrors it as ``pathContains`` (extension/src/session.ts); both run the table in
tests/contract/path_within.json.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~20 ms to import: its names serve annotations (and mypy) only
if TYPE_CHECKING:
    from typing import Callable, Sequence


def _norm(p: str) -> str:
    p = os.path.normpath(p)
    # POSIX keeps a leading "//" (implementation-defined); for containment it is "/".
    return "/" + p.lstrip("/") if p.startswith("//") else p


def within(path: str, root: str) -> bool:
    """True when ``path`` is ``root`` or inside it; never a sibling sharing a prefix (/a/bc vs /a).

    Both must be absolute: a relative path means nothing without a base, so it is never inside.
    """
    if not (os.path.isabs(path) and os.path.isabs(root)):
        return False
    path, root = _norm(path), _norm(root)
    if path == root:
        return True
    return path.startswith(root if root.endswith(os.sep) else root + os.sep)


def within_any(roots: Sequence[str]) -> Callable[[str], bool]:
    """``within(path, root) for any root``, as one function with the roots normalised once: the
    per-action check of the vscode runtime paid two ``isabs`` and two ``normpath`` per root per
    action (docs/benchmarks.md §10). Same rule, same answers (tests/protocol compare it with ``within``)."""
    prepared = []
    for root in roots:
        if os.path.isabs(root):
            r = _norm(root)
            prepared.append((r, r if r.endswith(os.sep) else r + os.sep))

    def contains(path: str) -> bool:
        if not os.path.isabs(path):
            return False
        p = _norm(path)
        return any(p == r or p.startswith(prefix) for r, prefix in prepared)

    return contains
