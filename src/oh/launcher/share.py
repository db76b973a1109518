"""``oh share`` (issue 28), the service: create, list and revoke shares of a running backend, and render what an
agent elsewhere needs (environment, ``docker run`` flags, devcontainer.json). The command module
(commands/share.py) only parses and prints; `oh share ssh` lives in launcher/sshlink.py.

On disk (one owner: this module): ``<state dir>/shares/<share id>/`` (0700) holds ``token`` (the share's
credential, 0600: what ``OH_TOKEN_FILE`` points at and a container mounts read-only) and ``connect.json``
(0600, fastpath/connect.py's format). A revoked share's directory is removed; ``list`` removes those of shares
the backend no longer has (expired, revoked or rotated away; a restarted backend keeps its shares: sharestore).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import paths
from ..errors import CliError
from ..fastpath import connect
from ..protocol.pathmap import MapError, parse_map
from ..sessions import Session
from .control import BackendUnreachable, control

CONTAINER_SOCKET_DIR = "/run/oh"
CONTAINER_TOKEN = "/run/oh-token"
CONTAINER_WORKSPACE = "/workspace"


class ShareFailed(CliError):
    """The share could not be made or ended; the message says what to do."""


@dataclass
class Made:
    share: dict[str, Any]
    token: str = field(repr=False)
    socket: str  # the backend's Unix socket on this machine
    directory: Path  # <state>/shares/<id>
    token_file: Path
    connect_file: Path
    workspace: str  # the backend's workspace (host path)
    agent_workspace: str  # where the agent sees it

    def env(self) -> dict[str, str]:
        """The environment of an agent on this machine's file system view (no container)."""
        return {
            "OH_URL": f"unix:{self.socket}",
            "OH_TOKEN_FILE": str(self.token_file),
            "OH_WORKSPACE": self.agent_workspace,
        }


def shares_dir() -> Path:
    return paths.state_dir() / "shares"


def _ask(session: Session, frame: dict[str, Any]) -> dict[str, Any]:
    try:
        answer = control(session, {"type": "share", **frame}, token=session.decider_token or None, timeout=10.0)
    except BackendUnreachable as exc:
        raise ShareFailed(f"{exc}; check the backend with `oh status`") from None
    if answer.get("type") == "error":
        raise ShareFailed(str(answer.get("message") or answer))
    return answer


def check_maps(maps: list[str]) -> list[str]:
    try:
        for m in maps:
            parse_map(m)
    except MapError as exc:
        raise ShareFailed(str(exc)) from None
    return maps


def create(
    session: Session,
    *,
    where: str,
    ttl: float | None,
    maps: list[str],
    agent_workspace: str,
    kind: str = "env",
    host: str = "",
) -> Made:
    """Ask the backend for a share; write its token and connect files (0600 in a 0700 directory)."""
    frame = {"op": "create", "where": where, "ttl": ttl, "map": check_maps(maps), "kind": kind, "host": host}
    answer = _ask(session, frame)
    socket = answer.get("socket") or ""
    if not socket:
        _ask(session, {"op": "revoke", "share_id": answer["share"]["share_id"]})
        raise ShareFailed(
            f"this backend has no Unix socket ({answer.get('socket_error') or 'started with --no-socket'}); "
            "restart it (`oh stop`, `oh start`) after fixing that"
        )
    share = answer["share"]
    d = paths.ensure_private_dir(shares_dir() / share["share_id"])
    token_file, connect_file = d / "token", d / connect.FILE_NAME
    connect.write_token(str(token_file), answer["token"])
    connect.write(
        str(connect_file), url=f"unix:{socket}", token=answer["token"], workspace=agent_workspace, share=share
    )
    return Made(share, answer["token"], socket, d, token_file, connect_file, session.workspace, agent_workspace)


def resume(session: Session, share_id: str, kind: str) -> Made:
    """A live share of ``kind`` made earlier (before a backend restart), with its credential from our own files:
    `oh share ssh --resume ID` links it again without a new credential."""
    answer = _ask(session, {"op": "list"})
    row = next((r for r in answer.get("shares") or [] if r.get("share_id") == share_id), None)
    if row is None:
        raise ShareFailed(f"no active share {share_id!r}: see `oh share list`")
    if row.get("kind") != kind:
        raise ShareFailed(f"share {share_id} is a {row.get('kind')} share, not {kind}")
    d = shares_dir() / share_id
    token_file, connect_file = d / "token", d / connect.FILE_NAME
    try:
        saved = connect.read(str(connect_file))
    except connect.ConnectError as exc:
        raise ShareFailed(f"{exc}; end the share (`oh share revoke {share_id}`) and make a new one") from None
    socket = answer.get("socket") or ""
    if not socket:
        why = answer.get("socket_error") or "started with --no-socket"
        raise ShareFailed(f"this backend has no Unix socket ({why})")
    return Made(row, saved["token"], socket, d, token_file, connect_file, session.workspace, saved["workspace"])


def listing(session: Session) -> list[dict[str, Any]]:
    """The backend's shares; directories of shares it no longer has are removed."""
    rows = _ask(session, {"op": "list"}).get("shares") or []
    live = {r["share_id"] for r in rows}
    with contextlib.suppress(OSError):
        for d in shares_dir().iterdir():
            if d.is_dir() and d.name.startswith("s") and d.name not in live and _ours(d):
                shutil.rmtree(d, ignore_errors=True)
    return rows


def _ours(d: Path) -> bool:
    """Only directories this module made (a share id's shape, owned by us) are ever removed."""
    try:
        return d.stat().st_uid == os.geteuid() and len(d.name) == 9 and all(c in "0123456789abcdef" for c in d.name[1:])
    except OSError:
        return False


def revoke(session: Session, share_id: str) -> dict[str, Any]:
    answer = _ask(session, {"op": "revoke", "share_id": share_id})
    d = shares_dir() / share_id
    if _ours(d):
        shutil.rmtree(d, ignore_errors=True)
    return answer


def still_active(session: Session, share_id: str) -> bool:
    """Whether the backend still has the share (True when it cannot be asked: the link decides on its own)."""
    try:
        rows = _ask(session, {"op": "list"}).get("shares") or []
    except ShareFailed:
        return True
    return any(r.get("share_id") == share_id for r in rows)


def report_link(session: Session, share_id: str, **link: str) -> None:
    """`oh share ssh` tells the backend its link's state (shown by `oh status` and the live view)."""
    with contextlib.suppress(ShareFailed):
        _ask(session, {"op": "link", "share_id": share_id, "link": link})


# ------------------------------------------------------------------ containers
def docker_args(made: Made) -> list[str]:
    """The ``docker run`` arguments that give a container this share: the socket's directory (not the socket
    file: a restarted backend makes a new socket there), the credential read-only, the workspace, the user (the
    socket is 0600: the container must run as you), the environment."""
    sock_dir = os.path.dirname(made.socket)
    return [
        "--user",
        f"{os.getuid()}:{os.getgid()}",
        "-v",
        f"{sock_dir}:{CONTAINER_SOCKET_DIR}",
        "-v",
        f"{made.token_file}:{CONTAINER_TOKEN}:ro",
        "-v",
        f"{made.workspace}:{made.agent_workspace}",
        "-w",
        made.agent_workspace,
        "-e",
        f"OH_URL=unix:{CONTAINER_SOCKET_DIR}/{os.path.basename(made.socket)}",
        "-e",
        f"OH_TOKEN_FILE={CONTAINER_TOKEN}",
        "-e",
        f"OH_WORKSPACE={made.agent_workspace}",
    ]


def docker_flags(made: Made) -> str:
    return " ".join(shlex.quote(a) for a in docker_args(made))


def devcontainer(made: Made) -> dict[str, Any]:
    """The devcontainer.json keys for this share (merged into an existing file by ``write_devcontainer``)."""
    sock_dir = os.path.dirname(made.socket)
    return {
        "mounts": [
            f"source={sock_dir},target={CONTAINER_SOCKET_DIR},type=bind",
            f"source={made.token_file},target={CONTAINER_TOKEN},type=bind,readonly",
        ],
        "remoteEnv": {
            "OH_URL": f"unix:{CONTAINER_SOCKET_DIR}/{os.path.basename(made.socket)}",
            "OH_TOKEN_FILE": CONTAINER_TOKEN,
            "OH_WORKSPACE": made.agent_workspace,
        },
        "containerUser": f"{os.getuid()}",
        "updateRemoteUserUID": True,
    }


def default_devcontainer_workspace(workspace: str) -> str:
    """Where the Dev Containers extension mounts a workspace by default: /workspaces/<folder name>."""
    return f"/workspaces/{os.path.basename(os.path.realpath(workspace))}"


def write_devcontainer(made: Made, target: Path) -> Path:
    """Merge the share's keys into ``target`` (``.devcontainer/devcontainer.json``): our mounts replace earlier
    oh mounts, other keys and mounts are kept. A file with comments (JSONC) is refused, not rewritten."""
    data: dict[str, Any] = {}
    if target.exists():
        try:
            data = json.loads(target.read_text(encoding="utf-8"))
        except ValueError:
            raise ShareFailed(
                f"{target} is not plain JSON (comments?): add the keys printed by `oh share --devcontainer` yourself"
            ) from None
        if not isinstance(data, dict):
            raise ShareFailed(f"{target} is not a JSON object")
    keys = devcontainer(made)
    kept = [
        m
        for m in data.get("mounts") or []
        if not (isinstance(m, str) and (f"target={CONTAINER_SOCKET_DIR}," in m or f"target={CONTAINER_TOKEN}," in m))
    ]
    data["mounts"] = kept + keys["mounts"]
    data["remoteEnv"] = {**(data.get("remoteEnv") or {}), **keys["remoteEnv"]}
    data.setdefault("containerUser", keys["containerUser"])
    data.setdefault("updateRemoteUserUID", True)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return target
