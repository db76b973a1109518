"""Path mapping for agents that see the workspace at another path (issue 28: an agent in a container sees the
host's workspace at ``/workspace``). Pure: no I/O.

A map is a list of (agent prefix, host prefix) pairs. Actions coming in have their path fields rewritten agent ->
host (``args.path``, ``args.cwd``, a claim's ``args.paths``, the handshake's working directory); observations going
out host -> agent (``extras.path``, ``extras.cwd``, a claim's ``extras.paths``, ``extras.metadata.working_dir``).
The longest matching prefix wins; a path under no agent prefix is left as it is (the backend's allowed roots then
judge it, as for any agent).

Not rewritten, by design (docs/protocol.md §2.2): paths inside a command's text (``cat /workspace/x`` runs in
the host's shell, where ``/workspace`` does not exist: the command runs in the mapped directory, so relative
paths work), inside file contents, and inside free-text messages and outputs.
"""

from __future__ import annotations

import posixpath
from typing import Any, Sequence

from ..errors import CliError

MAX_MAPS = 16


class MapError(CliError, ValueError):
    pass


def parse_map(spec: str) -> tuple[str, str]:
    """``AGENT=HOST`` -> (agent prefix, host prefix), both absolute and normalized."""
    agent, sep, host = spec.partition("=")
    if not sep or not agent or not host:
        raise MapError(f"--map {spec!r}: write AGENT=HOST, e.g. /workspace=/home/me/project")
    for side, p in (("agent", agent), ("host", host)):
        if not p.startswith("/") or "\x00" in p:
            raise MapError(f"--map {spec!r}: the {side} path must be absolute")
    return _norm(agent), _norm(host)


def _norm(p: str) -> str:
    out = posixpath.normpath(p)
    return "/" if out in ("/", "//") else out


def _swap(path: str, pairs: Sequence[tuple[str, str]]) -> str:
    """``path`` with the longest matching ``src`` prefix replaced by its ``dst``."""
    if not path.startswith("/"):
        return path
    best: tuple[str, str] | None = None
    for src, dst in pairs:
        if path == src or path.startswith(src.rstrip("/") + "/"):
            if best is None or len(src) > len(best[0]):
                best = (src, dst)
    if best is None:
        return path
    src, dst = best
    rest = path[len(src) :].lstrip("/")
    return posixpath.join(dst, rest) if rest else dst


class PathMap:
    def __init__(self, pairs: Sequence[tuple[str, str]]) -> None:
        if len(pairs) > MAX_MAPS:
            raise MapError(f"at most {MAX_MAPS} path maps")
        self.pairs = [(_norm(a), _norm(h)) for a, h in pairs]
        self._back = [(h, a) for a, h in self.pairs]

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def to_host(self, path: str) -> str:
        return _swap(path, self.pairs)

    def to_agent(self, path: str) -> str:
        return _swap(path, self._back)

    def action_in(self, obj: Any) -> Any:
        """An action frame as the agent sent it, with its path fields in host terms (a new dict)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("args"), dict):
            return obj
        args = dict(obj["args"])
        for key in ("path", "cwd"):
            if isinstance(args.get(key), str):
                args[key] = self.to_host(args[key])
        if isinstance(args.get("paths"), list):  # a claim's paths and globs (issue 37, §3.18)
            args["paths"] = [self.to_host(p) if isinstance(p, str) else p for p in args["paths"]]
        return {**obj, "args": args}

    def observation_out(self, obs: dict[str, Any]) -> dict[str, Any]:
        """An observation with its path fields in the agent's terms (changed in place: it is ours to send)."""
        extras = obs.get("extras")
        if not isinstance(extras, dict):
            return obs
        for key in ("path", "cwd"):
            if isinstance(extras.get(key), str):
                extras[key] = self.to_agent(extras[key])
        if isinstance(extras.get("paths"), list):  # a claim's resolved paths
            extras["paths"] = [self.to_agent(p) if isinstance(p, str) else p for p in extras["paths"]]
        meta = extras.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("working_dir"), str):
            extras["metadata"] = {**meta, "working_dir": self.to_agent(meta["working_dir"])}
        return obs

    def describe(self) -> list[str]:
        return [f"{a}={h}" for a, h in self.pairs]
