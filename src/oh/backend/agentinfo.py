"""The agent handshake headers (docs/protocol.md §2.1) and the allowed roots they are checked against.

``X-OH-Client`` names the agent, ``X-OH-Workdir`` is its working directory (inside the allowed roots,
else the handshake is refused 403), ``X-OH-Shell`` a key whose agents share one persistent shell.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Sequence

from ..protocol.frames import check_shell_key
from ..protocol.headers import decode_value
from ..protocol.paths import within


def effective_roots(workspace: str, extra: Sequence[str] | None) -> list[str]:
    """[workspace] + the extra roots (realpath, de-duplicated). Raises ValueError with the fix."""
    roots = [os.path.realpath(workspace)]
    for raw in extra or ():
        if not raw or not os.path.isabs(os.path.expanduser(raw)):
            raise ValueError(f"allowed root {raw!r} is not an absolute path: give the full path (e.g. /tmp)")
        real = os.path.realpath(os.path.expanduser(raw))
        if real == os.sep:
            raise ValueError(
                f"allowed root {raw!r} is the file system root: that would allow every path; name a narrower directory"
            )
        if not os.path.isdir(real):
            raise ValueError(f"allowed root {raw!r} does not exist or is not a directory: create it first or remove it")
        if real not in roots:
            roots.append(real)
    return roots


def within_any(path: str, roots: Sequence[str]) -> bool:
    return any(within(path, r) for r in roots)


@dataclass(frozen=True, slots=True)
class AgentHeaders:
    name: str
    workdir: str  # realpath, inside the roots
    shell: str | None  # a shared key, or None = private
    share: Any = None  # backend/shares.Share when it came in with a share credential (issue 28)
    isolate: bool = False  # a git worktree of its own (issue 37: `--isolate`, or `X-OH-Isolate: worktree`)


def _one(headers, name: str) -> str | None:
    """The header's text (``UTF-8''`` values decoded: protocol/headers.py), None when absent."""
    values = headers.get_all(name)
    if not values:
        return None
    if len(values) > 1:
        raise ValueError(f"{name} is given more than once")
    try:
        return decode_value(values[0])
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def clean_name(raw: str | None) -> str:
    """``X-OH-Client`` as shown in the live view: control and format characters (ESC, U+202E ...)
    removed, at most 64 chars."""
    text = "".join(ch for ch in (raw or "") if ch.isprintable())[:64].strip()
    return text or "agent"


def _isolate(headers, mode: str) -> bool | tuple[HTTPStatus, str]:
    """Whether the agent gets a worktree of its own: always under ``--isolate worktree``; on its request
    (``X-OH-Isolate: worktree``) under ``--isolate on-request``; a request to a backend started without is refused."""
    raw = _one(headers, "X-OH-Isolate")
    if raw is not None and raw.strip().lower() != "worktree":
        return HTTPStatus.BAD_REQUEST, "X-OH-Isolate: the one value is `worktree`.\n"
    if mode == "worktree":
        return True
    if raw is not None and mode != "on-request":
        return HTTPStatus.CONFLICT, (
            "X-OH-Isolate: worktree asks for a git worktree of its own, and this backend was started without "
            "worktrees: start it with `oh start --isolate on-request` (or `--isolate worktree`).\n"
        )
    return raw is not None


def parse(
    headers, workspace: str, roots: Sequence[str], share: Any = None, isolate: str = "off"
) -> AgentHeaders | tuple[HTTPStatus, str]:
    """The agent's headers, or (status, one-line reason) refusing the handshake. ``share``: the share the
    credential belongs to; its path map turns the agent's working directory into this machine's, and its
    agents are named with where they run (``name @ where``)."""
    try:
        workdir_raw = _one(headers, "X-OH-Workdir")
        shell = _one(headers, "X-OH-Shell")
        client = _one(headers, "X-OH-Client") if headers.get_all("X-OH-Client") else None
        isolated = _isolate(headers, isolate)
    except ValueError as exc:
        return HTTPStatus.BAD_REQUEST, f"{exc}.\n"
    if isinstance(isolated, tuple):
        return isolated
    workdir = workspace
    if workdir_raw is not None:
        if not os.path.isabs(workdir_raw) or "\x00" in workdir_raw:
            return HTTPStatus.BAD_REQUEST, "X-OH-Workdir must be an absolute path.\n"
        if share is not None:
            workdir_raw = share.pathmap.to_host(workdir_raw)
        workdir = os.path.realpath(workdir_raw)
        if not within_any(workdir, roots):
            return HTTPStatus.FORBIDDEN, (
                f"X-OH-Workdir {workdir_raw[:200]} is outside the allowed roots ({', '.join(roots)}); "
                "start the backend with `oh start --allow DIR` or connect from inside the workspace.\n"
            )
        if not os.path.isdir(workdir):
            return HTTPStatus.BAD_REQUEST, f"X-OH-Workdir {workdir_raw[:200]} is not a directory.\n"
    if shell is not None:
        reason = check_shell_key(shell)
        if reason:
            return HTTPStatus.BAD_REQUEST, reason + ".\n"
    name = clean_name(client)
    if share is not None:
        name = f"{name} @ {share.where}"
    return AgentHeaders(name, workdir, shell, share, isolated)
