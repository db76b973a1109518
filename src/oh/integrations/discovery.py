"""Which running oh backend serves a directory (from the session files; imports no agent framework)."""

from __future__ import annotations

import os

from .. import sessions


def inside(path: str, root: str) -> bool:
    root = root.rstrip(os.sep) or os.sep
    return path == root or path.startswith(root + os.sep)


def find_session(workdir: str, instance: str | None = None) -> sessions.Session | None:
    """The live backend serving ``workdir``: its workspace contains it (deepest wins), else one of its
    allowed roots (``oh start --allow``) does. ``instance`` (an instance id prefix) restricts the choice."""
    target = os.path.realpath(workdir)
    env = sessions.from_env()  # agents elsewhere (issue 28): OH_URL wins; a connect file when none runs here
    if env is not None:
        return env
    live = sessions.list_sessions()
    if not live and not instance:
        return sessions.from_connect_file()
    if instance:
        live = [s for s in live if s.instance_id.startswith(instance)]
    by_workspace = [s for s in live if inside(target, s.workspace)]
    if by_workspace:
        return max(by_workspace, key=lambda s: len(s.workspace))
    for s in live:
        if any(inside(target, os.path.realpath(r)) for r in (getattr(s, "allowed_roots", None) or [])):
            return s
    return None
