"""Several agents, one workspace (issue 37, docs/protocol.md §3.18): the stale-write guard and claims around
the runtime. The decisions are ``protocol.arbiter``'s; this layer reads files, keeps who saw which version and
serialises, per file, the check and the change (so two agents' writes through oh never interleave).

The state is the backend's own memory, per agent connection (``AgentContext.id``), never a name a frame
supplies. A file is versioned by its content on disk, read by the backend itself, so a change by a command,
another agent or the user's editor (saved) makes the next write of an agent that saw the old version stale.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import stat as stat_mod
import time
from collections import OrderedDict
from typing import Any, Callable, Hashable

from ..protocol import arbiter as rules
from ..protocol.errors import ErrorId, ProtocolError
from ..protocol.events import Action, error_observation
from ..protocol.observation import observation
from ..protocol.paths import within_any
from .base import AgentContext, Runtime, Wrapper, as_context
from .fspath import realpath

TEXT_KEEP = 1024 * 1024  # the largest file whose seen text is kept for a STALE refusal's diff
TEXT_CACHE = 32 * 1024 * 1024  # total characters of kept texts (oldest dropped first)
SEEN_PER_AGENT = 10_000  # files remembered per agent (oldest forgotten first: its next write is blind)
_OWN_ARGS = ("if_version", "force", "wait_claim")  # this layer's arguments; the runtimes never see them
CHANGED_DURING_READ = "?changed-during-read"  # a base no file version ever equals: the next change is STALE

ArbiterEvent = Callable[[str, dict[str, Any]], None]


class _Texts:
    """Texts of versions an agent saw, by version, bounded in total size."""

    def __init__(self, limit: int = TEXT_CACHE) -> None:
        self.limit = limit
        self.size = 0
        self.items: OrderedDict[str, str] = OrderedDict()

    def put(self, version: str, text: str | None) -> None:
        if text is None or len(text) > TEXT_KEEP:
            return
        if version in self.items:
            self.items.move_to_end(version)
            return
        self.items[version] = text
        self.size += len(text)
        while self.size > self.limit and self.items:
            self.size -= len(self.items.popitem(last=False)[1])

    def get(self, version: object) -> str | None:
        return self.items.get(version) if isinstance(version, str) else None


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
_PROC_FD = os.path.isdir("/proc/self/fd")


def file_state(path: str, inside: Callable[[str], bool] = lambda _p: True) -> tuple[str | None, str | None]:
    """(version, text) of the regular file at ``path`` now: (None, None) when there is none, or when what was
    opened is not inside the allowed roots (``inside``: checked on the opened file's own path, so a directory
    swapped for a symlink meanwhile never makes oh read outside them); the text is None when it is not UTF-8 or
    too large to keep. Never follows a symlink in the last component, never blocks on a FIFO."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None, None
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            return None, None
        if _PROC_FD and not inside(os.readlink(f"/proc/self/fd/{fd}")):
            return None, None
        if st.st_size > rules.HASH_LIMIT:
            return rules.identity_version(st.st_size, st.st_mtime_ns, st.st_ino), None
        data = os.read(fd, st.st_size + 1)  # one read: the whole file, unless it grew meanwhile
        if len(data) > st.st_size:
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            data = b"".join(chunks)
    except OSError:
        return None, None
    finally:
        os.close(fd)
    try:
        text = data.decode("utf-8") if len(data) <= TEXT_KEEP else None
    except UnicodeDecodeError:
        text = None
    return rules.version_of(data), text


class Arbiter(Wrapper):
    """The stale-write guard and claims (issue 37), right around the recorder/inner runtime."""

    def __init__(
        self,
        inner: Runtime,
        workspace: str,
        allowed_roots: list[str] | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(inner)
        self.workspace = workspace
        # Only files inside the allowed roots are versioned: a path outside is the runtime's to refuse
        # (PATH_DENIED), and the backend must never read it for an agent (its digest, a diff).
        self.inside = within_any([realpath(r) for r in (allowed_roots or [workspace])])
        self.clock = clock
        self.seen: dict[str, dict[str, str | None]] = {}  # agent id -> path -> version it last saw
        self.last: dict[str, rules.Writer] = {}  # path -> who last changed it through oh
        self.texts = _Texts()
        self._locks: dict[str, list[Any]] = {}  # path -> [asyncio.Lock, users]
        self.claims: list[rules.Claim] = []
        self._claim_ids = 0
        self._claims_changed = asyncio.Event()
        self.on_event: ArbiterEvent | None = None  # monitors: stale_refused, claim_made, claim_ended
        self.stats = {"stale": 0, "patched": 0, "blind": 0, "claimed": 0}

    # ------------------------------------------------------------------ routing
    async def execute(self, action: Action, agent: Hashable) -> dict[str, Any]:
        kind = action.kind
        if kind == "claim":
            return self.claim(action, as_context(agent))
        if kind == "release":
            return self.release(action, as_context(agent))
        if kind not in ("read", "write", "edit"):
            return await self.inner.execute(action, agent)
        ctx = as_context(agent)
        path = self._path(action.args.get("path"), ctx)
        if path is None or not self.inside(path):
            return await self.inner.execute(_without_own_args(action), agent)
        if rules.is_view(kind, action.args):
            return await self._view(action, agent, ctx, path)
        return await self._change(action, agent, ctx, path)

    def _path(self, raw: Any, ctx: AgentContext) -> str | None:
        if not isinstance(raw, str) or not raw or "\x00" in raw:
            return None
        return realpath(os.path.join(ctx.workdir or self.workspace, os.path.expanduser(raw)))

    # ------------------------------------------------------------------ per-file serialisation
    async def _locked(self, path: str) -> asyncio.Lock:
        entry = self._locks.get(path)
        if entry is None:
            entry = self._locks[path] = [asyncio.Lock(), 0]
        entry[1] += 1
        try:
            await entry[0].acquire()
        except BaseException:
            self._unuse(path, entry)
            raise
        return entry[0]

    def _unlock(self, path: str) -> None:
        entry = self._locks[path]
        entry[0].release()
        self._unuse(path, entry)

    def _unuse(self, path: str, entry: list[Any]) -> None:
        entry[1] -= 1
        if entry[1] == 0:
            self._locks.pop(path, None)

    def _remember(self, ctx: AgentContext, path: str, version: str | None, text: str | None) -> None:
        seen = self.seen.setdefault(ctx.id, {})
        seen.pop(path, None)
        seen[path] = version
        if len(seen) > SEEN_PER_AGENT:
            del seen[next(iter(seen))]
        if version is not None:
            self.texts.put(version, text)

    # ------------------------------------------------------------------ read / view
    async def _view(self, action: Action, agent: Hashable, ctx: AgentContext, path: str) -> dict[str, Any]:
        """A read is never serialised (many agents read one file at once): the file's version before and after
        it; when they differ, what the agent saw is unknown and its next change of the file is STALE."""
        before, _ = file_state(path, self.inside)
        obs = await self.inner.execute(action, agent)
        if obs.get("observation") in ("read", "edit"):
            version, text = file_state(path, self.inside)
            if version is not None and version == before:
                self._remember(ctx, path, version, text)
                obs.setdefault("extras", {})["version"] = version
            elif version is not None:
                self._remember(ctx, path, CHANGED_DURING_READ, None)
        return obs

    # ------------------------------------------------------------------ write / edit
    async def _change(self, action: Action, agent: Hashable, ctx: AgentContext, path: str) -> dict[str, Any]:
        args = action.args
        refusal = await self._claim_gate(action, ctx, path)
        if refusal is not None:
            return refusal
        sent = args.get("if_version")
        base: object = sent if isinstance(sent, str) else self.seen.get(ctx.id, {}).get(path, rules.UNKNOWN)
        await self._locked(path)
        try:
            current, text = file_state(path, self.inside)
            verdict = rules.decide(action.kind, args, base, current)
            who = rules.who_changed(self.last.get(path), current, ctx.id) if verdict is rules.Verdict.PATCH else ""
            if verdict is rules.Verdict.STALE:
                return self._stale(action, ctx, path, base, current, text, None)
            obs = await self.inner.execute(_without_own_args(action), agent)
            if obs.get("observation") == "error":
                extras = obs.get("extras") or {}
                if verdict is rules.Verdict.PATCH and extras.get("error_id") == str(ErrorId.TOOL_ERROR):
                    return self._stale(action, ctx, path, base, current, text, str(obs.get("content") or ""))
                return obs
            new, new_text = file_state(path, self.inside)
            self._remember(ctx, path, new, new_text)
            self.last[path] = rules.Writer(ctx.id, ctx.name, self.clock(), new)
            extras = obs.setdefault("extras", {})
            if new is not None:
                extras["version"] = new
            if verdict is rules.Verdict.PATCH:
                self.stats["patched"] += 1
                obs["content"] = str(obs.get("content") or "") + rules.patch_note(str(args.get("path")), who)
                extras["stale_base"] = True
            elif verdict is rules.Verdict.BLIND:
                self.stats["blind"] += 1
                extras["blind"] = True
            return obs
        finally:
            self._unlock(path)

    def _stale(
        self,
        action: Action,
        ctx: AgentContext,
        path: str,
        base: object,
        current: str | None,
        text: str | None,
        tool_error: str | None,
    ) -> dict[str, Any]:
        self.stats["stale"] += 1
        shown = str(action.args.get("path"))
        last = self.last.get(path)
        who = rules.who_changed(last, current, ctx.id)
        diff = rules.stale_diff(shown, self.texts.get(base), text)
        obs = error_observation(action.id, ErrorId.STALE, rules.stale_message(shown, who, current, diff, tool_error))
        by = last if last is not None and last.version == current else None
        obs["extras"].update(
            version=current,
            seen_version=base if isinstance(base, str) else None,
            changed_by=by.name if by is not None else None,
            changed_at=by.at if by is not None else None,
        )
        self._tell("stale_refused", agent_id=ctx.id, name=ctx.name, path=shown, changed_by=who)
        return obs

    def _tell(self, event: str, **fields: Any) -> None:
        if self.on_event is not None:
            self.on_event(event, fields)

    # ------------------------------------------------------------------ claims
    def _live_claims(self) -> list[rules.Claim]:
        now = self.clock()
        expired = [c for c in self.claims if c.until <= now]
        if expired:
            self.claims = [c for c in self.claims if c.until > now]
            self._claims_changed.set()
            for c in expired:
                self._tell("claim_ended", claim_id=c.claim_id, agent_id=c.agent_id, name=c.name, why="expired")
        return self.claims

    async def _claim_gate(self, action: Action, ctx: AgentContext, path: str) -> dict[str, Any] | None:
        """None when no other agent's claim covers ``path`` (waiting up to ``wait_claim`` s for one to end)."""
        wait = action.args.get("wait_claim") or 0
        loop = asyncio.get_running_loop()
        give_up = loop.time() + float(wait)
        while True:
            holder = rules.blocking_claim(self._live_claims(), path, ctx.id, self.clock())
            if holder is None:
                return None
            left = min(give_up - loop.time(), holder.until - self.clock())
            if left <= 0 or give_up <= loop.time():
                self.stats["claimed"] += 1
                obs = error_observation(
                    action.id, ErrorId.CLAIMED, rules.claimed_message(str(action.args.get("path")), holder)
                )
                obs["extras"].update(claim=holder.describe())
                return obs
            self._claims_changed.clear()
            try:
                await asyncio.wait_for(self._claims_changed.wait(), left + 0.01)
            except asyncio.TimeoutError:
                pass

    def claim(self, action: Action, ctx: AgentContext) -> dict[str, Any]:
        args = action.args
        root = ctx.workdir or self.workspace
        patterns = tuple(self._glob_or_path(p, root) for p in args["paths"])
        now = self.clock()
        other = rules.conflicting(self._live_claims(), patterns, ctx.id, now)
        if other is not None:
            self.stats["claimed"] += 1
            obs = error_observation(action.id, ErrorId.CLAIMED, rules.claimed_message(", ".join(args["paths"]), other))
            obs["extras"].update(claim=other.describe())
            return obs
        self._claim_ids += 1
        ttl = float(args.get("ttl") or rules.DEFAULT_CLAIM_TTL)
        made = rules.Claim(f"k{self._claim_ids}", ctx.id, ctx.name, patterns, now + ttl)
        self.claims.append(made)
        self._tell("claim_made", **made.describe())
        # Its end is said when it comes (claim_ended "expired"), not only at the next look at the claims.
        asyncio.get_running_loop().call_later(ttl + 0.05, self._live_claims)
        return _claim_observation(action.id, f"Claimed {len(patterns)} path(s) for {ttl:g} s as {made.claim_id}.", made)

    def _glob_or_path(self, raw: str, root: str) -> str:
        full = os.path.join(root, os.path.expanduser(raw))
        if any(ch in raw for ch in "*?["):
            return os.path.normpath(full)  # a glob: not resolved (it names no one file)
        return os.path.realpath(full)

    def release(self, action: Action, ctx: AgentContext, *, by_user: bool = False) -> dict[str, Any]:
        cid = action.args.get("claim_id")
        ended = self.end_claims(lambda c: (by_user or c.agent_id == ctx.id) and (cid is None or c.claim_id == cid))
        obs = _claim_observation(action.id, f"Released {len(ended)} claim(s).", None)
        obs["extras"]["released"] = [c.claim_id for c in ended]
        return obs

    def end_claims(self, which: Callable[[rules.Claim], bool], why: str = "released") -> list[rules.Claim]:
        ended = [c for c in self.claims if which(c)]
        if ended:
            self.claims = [c for c in self.claims if not which(c)]
            self._claims_changed.set()
            for c in ended:
                self._tell("claim_ended", claim_id=c.claim_id, agent_id=c.agent_id, name=c.name, why=why)
        return ended

    def control(self, obj: dict[str, Any], decider: bool) -> dict[str, Any]:
        """The ``claims`` control request (`oh claims`): list (anyone), release (the user: the decider credential)."""
        try:
            op, cid = rules.parse_claims_request(obj)
        except ProtocolError as exc:
            return {"type": "error", "error_id": str(exc.error_id), "message": exc.message}
        if op == "list":
            return {"type": "claims", "op": "list", "claims": self.describe_claims()}
        if not decider:
            return {
                "type": "error",
                "error_id": "FORBIDDEN",
                "message": "Releasing another agent's claim needs the user's credential: run `oh claims release`.",
            }
        ended = self.end_claims(lambda c: cid is None or c.claim_id == cid, "released by the user")
        return {"type": "claims", "op": "release", "released": [c.claim_id for c in ended]}

    def describe_claims(self) -> list[dict[str, Any]]:
        return [c.describe() for c in self._live_claims()]

    async def agent_closed(self, agent: Hashable) -> None:
        ctx = as_context(agent)
        self.seen.pop(ctx.id, None)
        self.end_claims(lambda c: c.agent_id == ctx.id, "disconnected")
        await self.inner.agent_closed(agent)


def _claim_observation(cause: int, content: str, made: rules.Claim | None) -> dict[str, Any]:
    """Our own kinds: the answer to a ``claim`` (the claim) or ``release`` action (docs/protocol.md §3.18)."""
    kind = "claim" if made is not None else "release"
    return observation(kind, cause, content, content, made.describe() if made is not None else {})


def _without_own_args(action: Action) -> Action:
    """``action`` without this layer's arguments (the inner runtimes and the editor never see them)."""
    if not any(k in action.args for k in _OWN_ARGS):
        return action
    args = {k: v for k, v in action.args.items() if k not in _OWN_ARGS}
    raw = dict(action.raw) if isinstance(action.raw, dict) else action.raw
    if isinstance(raw, dict):
        raw["args"] = args
    return dataclasses.replace(action, args=args, raw=raw)
