"""Several agents, one workspace (issue 37, docs/protocol.md §3.18): the decisions of the stale-write guard
and of claims. Pure: no I/O. ``runtimes.arbiter`` reads files, keeps the per-agent state and calls these.

A *version* is a content digest of a file (``b2:`` + 24 hex digits of BLAKE2b), or, for a file too large to
hash on the event loop, its identity (``st:`` size, mtime in ns, inode). ``None`` is "no such file".
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import math
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .errors import ErrorId, ProtocolError

HASH_LIMIT = 2 * 1024 * 1024  # bytes: larger files are versioned by their identity (st:), never hashed
DIFF_LIMIT = 16 * 1024  # characters of the unified diff a STALE refusal carries
MAX_VERSION_LEN = 100
MAX_CLAIM_PATHS = 64
MAX_CLAIM_TTL = 24 * 3600.0
DEFAULT_CLAIM_TTL = 600.0
MAX_CLAIM_WAIT = 600.0


def version_of(data: bytes) -> str:
    """The version of a file whose content is ``data``."""
    return "b2:" + hashlib.blake2b(data, digest_size=12).hexdigest()


def identity_version(size: int, mtime_ns: int, inode: int) -> str:
    """The version of a file too large to hash (``HASH_LIMIT``)."""
    return f"st:{size}-{mtime_ns}-{inode}"


class Verdict(str, Enum):
    GO = "go"  # the agent's base is the current version (or no base is needed: a new file, force)
    BLIND = "blind"  # the agent never saw this file and sent no if_version: today's behaviour, marked blind
    PATCH = "patch"  # the file changed, but the change applies as a patch (edit with old text, insert, append)
    STALE = "stale"  # refused: the file changed since the agent's base

    def __str__(self) -> str:
        return self.value


UNKNOWN = object()  # the agent has no base for this file (never read or wrote it)


def is_change(kind: str, args: dict[str, Any]) -> bool:
    """Whether the action changes the file (an ``edit view`` is a read)."""
    return kind == "write" or (kind == "edit" and args.get("command") != "view")


def is_view(kind: str, args: dict[str, Any]) -> bool:
    return kind == "read" or (kind == "edit" and args.get("command") == "view")


def _patchable(kind: str, args: dict[str, Any]) -> bool:
    """A change that keeps what others wrote when it lands on a newer version: its own check fails otherwise."""
    if kind == "edit":
        return args.get("command") in ("str_replace", "insert")
    return args.get("mode") == "append"


def decide(kind: str, args: dict[str, Any], base: object, current: str | None) -> Verdict:
    """Whether a write/edit whose agent's base is ``base`` (a version, None = it saw no file, ``UNKNOWN``)
    may change a file now at ``current`` (None = absent)."""
    if args.get("force") is True:
        return Verdict.GO
    if current is None:
        return Verdict.GO  # creating a file: nothing there to lose
    if base is UNKNOWN:
        return Verdict.BLIND
    if base == current:
        return Verdict.GO
    return Verdict.PATCH if _patchable(kind, args) else Verdict.STALE


def stale_diff(path: str, seen: str | None, current: str | None, limit: int = DIFF_LIMIT) -> str:
    """The unified diff from the version the agent saw to the current one, at most ``limit`` characters
    (a note says when it was cut, or why there is none)."""
    if seen is None or current is None:
        return "(no diff: the version you saw or the current one is not text oh kept)"
    lines = difflib.unified_diff(
        seen.splitlines(keepends=True), current.splitlines(keepends=True), f"a/{path} (you saw)", f"b/{path} (now)"
    )
    out: list[str] = []
    size = 0
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        if size + len(line) > limit:
            out.append(f"... (diff cut at {limit} characters; read the file again)\n")
            break
        out.append(line)
        size += len(line)
    return "".join(out)


@dataclass(frozen=True)
class Writer:
    """Who last changed a file through oh's file actions."""

    agent_id: str
    name: str
    at: float  # time.time()
    version: str | None


def who_changed(last: Writer | None, current: str | None, self_id: str) -> str:
    """Words for who changed the file to ``current``."""
    if last is not None and last.version == current:
        who = "you (another of your actions)" if last.agent_id == self_id else f"agent {last.name} ({last.agent_id})"
        return f"{who} at {_clock(last.at)}"
    return "something outside oh's file actions (a command, the user's editor or another program)"


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at)) + f".{int((at % 1) * 1000):03d}"


def stale_message(path: str, who: str, current: str | None, diff: str, tool_error: str | None = None) -> str:
    head = f"STALE: {path} changed since you last read it: changed by {who}; now at version {current}."
    if tool_error:
        head += f" Your edit no longer applies ({tool_error.strip()[:300]})."
    return (
        f"{head} Nothing was written. Read the file again and redo your change on the current version (or send "
        f'"force": true to overwrite it anyway).\nDiff from the version you saw to the current one:\n{diff}'
    )


def patch_note(path: str, who: str) -> str:
    return (
        f"\n[Note: {path} had changed since you last read it ({who}); your change was applied to the current version.]"
    )


# ---- claims ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    claim_id: str
    agent_id: str
    name: str
    patterns: tuple[str, ...]  # absolute paths or globs (fnmatch; * also crosses /)
    until: float  # time.time() when it ends

    def covers(self, path: str) -> bool:
        return any(
            p == path or path.startswith(p.rstrip("/") + "/") or fnmatch.fnmatchcase(path, p) for p in self.patterns
        )

    def describe(self) -> dict[str, Any]:
        return {
            "claim_id": self.claim_id,
            "agent_id": self.agent_id,
            "name": self.name,
            "paths": list(self.patterns),
            "until": self.until,
        }


def check_claim_args(args: dict[str, Any], cause: int | None) -> None:
    paths = args.get("paths")
    ok = (
        isinstance(paths, list)
        and 0 < len(paths) <= MAX_CLAIM_PATHS
        and all(isinstance(p, str) and p and "\x00" not in p and len(p) <= 4096 for p in paths)
    )
    if not ok:
        raise ProtocolError(
            ErrorId.BAD_REQUEST, f"args.paths must be a list of 1 to {MAX_CLAIM_PATHS} paths or globs.", cause
        )
    for key, top in (("ttl", MAX_CLAIM_TTL), ("wait", MAX_CLAIM_WAIT)):
        v = args.get(key)
        if v is not None and not (
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 < v <= top
        ):
            raise ProtocolError(ErrorId.BAD_REQUEST, f"args.{key} must be a number of seconds in (0, {top:g}].", cause)


def check_release_args(args: dict[str, Any], cause: int | None) -> None:
    cid = args.get("claim_id")
    if cid is not None and not (isinstance(cid, str) and 0 < len(cid) <= 40):
        raise ProtocolError(ErrorId.BAD_REQUEST, "args.claim_id must be a claim id (or absent: all yours).", cause)


def blocking_claim(claims: list[Claim], path: str, agent_id: str, now: float) -> Claim | None:
    """Another agent's live claim covering ``path``, if any."""
    for c in claims:
        if c.agent_id != agent_id and c.until > now and c.covers(path):
            return c
    return None


def claimed_message(path: str, claim: Claim) -> str:
    return (
        f"CLAIMED: {path} is claimed by agent {claim.name} ({claim.agent_id}) until {_clock(claim.until)} "
        f"(claim {claim.claim_id}). Nothing was written. Work on other files, retry after that time, or send "
        '"wait_claim": SECONDS to wait for the claim to end.'
    )


def conflicting(claims: list[Claim], patterns: tuple[str, ...], agent_id: str, now: float) -> Claim | None:
    """Another agent's live claim overlapping ``patterns`` (one covers a pattern of the other)."""
    new = Claim("", "", "", patterns, math.inf)
    for c in claims:
        if c.agent_id == agent_id or c.until <= now:
            continue
        if any(c.covers(p) for p in patterns) or any(new.covers(p) for p in c.patterns):
            return c
    return None


def parse_claims_request(obj: dict[str, Any]) -> tuple[str, str | None]:
    """A ``claims`` control request (`oh claims`): (op list|release, a claim id or None = every claim)."""
    op = obj.get("op", "list")
    if op not in ("list", "release"):
        raise ProtocolError(ErrorId.BAD_REQUEST, "claims: op must be list or release.")
    cid = obj.get("claim_id")
    if cid is not None and not (isinstance(cid, str) and 0 < len(cid) <= 40 and cid.isprintable()):
        raise ProtocolError(ErrorId.BAD_REQUEST, "claims: claim_id must be a claim id such as k1.")
    if op == "release" and cid is None and obj.get("all") is not True:
        raise ProtocolError(ErrorId.BAD_REQUEST, "claims release needs claim_id, or all: true.")
    return op, cid
