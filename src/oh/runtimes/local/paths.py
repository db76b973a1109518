"""Path resolution and the allowed-roots check (PATH_DENIED), shared by every local executor.

Every path an action names is made absolute (relative -> against the workspace), resolved with
``os.path.realpath`` (symlinks and ``..``; a path that does not exist yet resolves through its nearest
existing parent, and a dangling symlink resolves to its target) and must land inside one of the
allowed roots. The check happens before anything is opened or created, so a refused action touches
nothing. The file actions then open the path relative to a descriptor of that root (``oh.beneath``):
a symlink swapped in after the check that leads out of the root is refused at the open itself
(PATH_DENIED, "a symlink ... leads outside"), never followed (issue 36).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ... import beneath
from ...protocol.errors import ErrorId, ToolError
from ...protocol.paths import within
from .. import fspath

NAME_MAX = 255  # bytes per path component on every file system oh runs on


def _real(p: str | Path) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(str(p))))


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    shown: str  # absolute, normalised, as the agent named it (what messages show)
    real: str  # symlinks resolved: what is actually opened
    root: str = ""  # the allowed root holding ``real``: every open starts at it (oh.beneath); "" = real's parent

    @property
    def base(self) -> str:
        """The directory every open of this path is resolved beneath."""
        return self.root or os.path.dirname(self.real)

    @property
    def rel(self) -> str:
        """``real`` relative to ``base``."""
        return os.path.relpath(self.real, self.base)


class PathPolicy:
    def __init__(self, workspace: str | Path, allowed_roots: Sequence[str | Path] | None = None) -> None:
        self.workspace = _real(workspace)
        roots = [self.workspace] if not allowed_roots else [_real(r) for r in allowed_roots]
        # De-duplicate, keep order (messages list them).
        self.roots: tuple[str, ...] = tuple(dict.fromkeys(roots))

    def allowed(self, real: str) -> bool:
        return any(within(real, root) for root in self.roots)

    def root_of(self, real: str) -> str:
        """The innermost allowed root holding ``real`` ("" when none does)."""
        return max((root for root in self.roots if within(real, root)), key=len, default="")

    def resolve(self, raw: str, base: str | None = None) -> ResolvedPath:
        """Absolute + real path, or ToolError(PATH_DENIED). Touches nothing.

        A relative path resolves against ``base`` (the agent's working directory), else the workspace."""
        if "\x00" in raw:
            raise ToolError("The path must not contain NUL bytes.", ErrorId.BAD_REQUEST)
        expanded = os.path.expanduser(raw)
        joined = expanded if os.path.isabs(expanded) else os.path.join(base or self.workspace, expanded)
        shown = os.path.normpath(joined)
        # A component of at most 63 characters is at most 252 bytes (4 per character): only longer
        # paths need the byte count (it runs for every action).
        for part in shown.split(os.sep) if len(shown) > 63 else ():
            if len(os.fsencode(part)) > NAME_MAX:
                # The kernel would say ENAMETOOLONG; say it first, as a plain tool error.
                raise ToolError(
                    f"File name too long: a component of {shown[:120]}... is {len(os.fsencode(part))} bytes; "
                    f"file names are limited to {NAME_MAX} bytes."
                )
        real = fspath.realpath(joined)
        if not self.allowed(real):
            roots = ", ".join(self.roots)
            via = "" if real == shown else f" (it resolves to {real})"
            raise ToolError(
                f"Path {shown} is outside the allowed roots ({roots}){via}; nothing was done.", ErrorId.PATH_DENIED
            )
        return ResolvedPath(shown, real, self.root_of(real))


def file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISREG(mode):
        return "regular file"
    return "special file"


def stat_rp(rp: ResolvedPath) -> os.stat_result | None:
    """``os.stat`` of the path, resolved beneath its root (a symlink swapped in that leads out: Escape)."""
    return beneath.stat_at(rp.base, rp.rel)


def open_rp(rp: ResolvedPath, flags: int, mode: int = 0o666) -> int:
    """``os.open`` of the path, resolved beneath its root."""
    return beneath.open_at(rp.base, rp.rel, flags, mode)


def escape_error(exc: beneath.Escape) -> ToolError:
    return ToolError(
        f"{exc}: it was swapped in after oh checked the path, and oh does not follow it; nothing was done.",
        ErrorId.PATH_DENIED,
    )


def stat_or_none(real: str) -> os.stat_result | None:
    try:
        return os.stat(real)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None


def not_found(shown: str) -> ToolError:
    # The OpenHands file editor's wording, so agents trained on it recognise it.
    return ToolError(
        f"Invalid `path` parameter: {shown}. The path {shown} does not exist. Please provide a valid path."
    )


def refuse_hard_link(shown: str, st: os.stat_result) -> None:
    """A regular file with more than one name may be the same file as one outside the allowed roots
    (a hard link has no "real path" to check). Its content is refused rather than leaked
    (docs/security.md, "Hard links")."""
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise ToolError(
            f"The file {shown} has {st.st_nlink} hard links; oh cannot tell whether another of them is outside the "
            "allowed roots, so it does not read or edit it. If its content is yours to use, give it a name of its own "
            f"(`cp -p {shown} {shown}.tmp && mv {shown}.tmp {shown}`) or read it from the shell.",
            ErrorId.PATH_DENIED,
        )


def require_regular(shown: str, st: os.stat_result, verb: str) -> None:
    """Refuse devices, FIFOs, sockets (reading /dev/zero or a FIFO would never end) and directories."""
    if stat.S_ISREG(st.st_mode):
        return
    kind = file_kind(st.st_mode)
    if kind == "directory":
        if verb == "read":
            raise ToolError(
                f"The path {shown} is a directory, not a file. Use the edit `view` command to list a directory."
            )
        raise ToolError(f"The path {shown} is a directory; cannot {verb} it as a file.")
    raise ToolError(f"The path {shown} is a {kind}, not a regular file; refusing to {verb} it.")
