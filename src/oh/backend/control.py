"""The control role (``/v1/control``, `oh status` / `oh stop` / `oh token rotate` / `oh review`):
one request, one answer; a shutdown or a token rotation ends the connection."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from websockets.asyncio.server import ServerConnection

from ..protocol import frames, hunks, review
from ..protocol.codes import Close
from ..protocol.errors import ProtocolError
from ..protocol.events import decode_frame, encode
from ..runtimes.base import Runtime

FORBIDDEN_TEXT = (
    "Deciding (approvals, review accept/reject) needs the decider credential, which agents do not get; "
    "answer from `oh approve` / `oh review`, the live view of `oh start`, or VS Code."
)


class Control:
    def __init__(
        self,
        runtime: Runtime,
        review_on: bool,
        status: Callable[[], dict[str, Any]],
        rotate_token: Callable[..., Awaitable[int]],
        stop: Callable[[str], Awaitable[None]],
        approvals: Callable[[dict[str, Any], bool], dict[str, Any]] | None = None,
        history: Callable[[dict[str, Any], bool], Awaitable[dict[str, Any]]] | None = None,
        shares: Callable[[dict[str, Any], bool], Awaitable[dict[str, Any]]] | None = None,
        changesets: Any = None,
        claims: Callable[[dict[str, Any], bool], dict[str, Any]] | None = None,
    ) -> None:
        self.runtime = runtime
        self.review_on = review_on  # `oh start --review`
        self._status = status
        self._rotate_token = rotate_token
        self._stop = stop
        self._approvals = approvals  # consent (§3.13): backend/consentctl.handle
        self._history = history  # history (§3.15): backend/historyctl.handle
        self._shares = shares  # issue 28: backend/remote.py Remote.control
        self._changesets = changesets  # review after the fact (§3.15.1): backend/historyctl.ChangeSets
        self._claims = claims  # several agents (§3.18): runtimes/arbiter.Arbiter.control

    async def serve(self, connection: ServerConnection) -> None:
        async for message in connection:
            try:
                kind, obj = frames.parse_control(decode_frame(message))
            except ProtocolError as exc:
                await connection.send(encode(frames.refusal(str(exc.error_id), exc.message)), text=True)
                continue
            if kind == "status":
                await connection.send(encode({"type": "status", **self._status()}), text=True)
            elif kind == "rotate_token":
                closed = await self._rotate_token(obj["token"], keep=connection)
                await connection.send(encode({"type": "ok", "closed": closed}), text=True)
                await connection.close(Close.TOKEN_ROTATED, "token rotated")
                return
            elif kind == "review":
                await connection.send(
                    encode(await self.review_request(obj, getattr(connection, "oh_decider", False))), text=True
                )
            elif kind == "approvals":
                answer = (
                    self._approvals(obj, getattr(connection, "oh_decider", False))
                    if self._approvals is not None
                    else frames.approvals_answer("list", level="never", rules=[], pending=0, approvals=[])
                )
                await connection.send(encode(answer), text=True)
            elif kind == "history" and self._history is not None:
                answer = await self._history(obj, getattr(connection, "oh_decider", False))
                await connection.send(encode(answer), text=True)
            elif kind == "history":
                await connection.send(
                    encode(
                        frames.refusal(
                            "HISTORY_OFF",
                            "History is off for this backend: `oh config set history true`, then restart it.",
                        )
                    ),
                    text=True,
                )
            elif kind == "share" and self._shares is not None:
                answer = await self._shares(obj, getattr(connection, "oh_decider", False))
                await connection.send(encode(answer), text=True)
            elif kind == "claims":
                answer = (
                    self._claims(obj, getattr(connection, "oh_decider", False))
                    if self._claims is not None
                    else {"type": "claims", "op": "list", "claims": []}
                )
                await connection.send(encode(answer), text=True)
            elif kind == "shutdown":
                await connection.send(encode({"type": "ok"}), text=True)
                asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self._stop("shutdown requested")))
                return

    async def review_request(self, obj: dict[str, Any], decider: bool = False) -> dict[str, Any]:
        """``oh review``: list, show, accept, reject the local runtime's proposals (§3.11)."""
        try:
            req = review.parse_review_request(obj)
        except ProtocolError as exc:
            return frames.refusal(str(exc.error_id), exc.message)
        if req.op in ("accept", "reject") and not decider:  # no self-approval (issue 19): the agent token cannot decide
            return frames.refusal("FORBIDDEN", FORBIDDEN_TEXT)
        sets = self._changesets if self._changesets is not None and self._changesets.active() else None
        if req.proposal_id and review.CHANGESET_ID.match(req.proposal_id):
            return await self._changeset_request(sets, req)
        queue = self.runtime.proposals
        if queue is None and (sets is None or req.proposal_id):
            elsewhere = self.runtime.review_elsewhere() if self.review_on else None
            if elsewhere is not None:
                return frames.refusal("NOT_HERE", elsewhere)
            return frames.refusal(
                "REVIEW_OFF",
                "Review mode is off for this backend: start it with `oh start --review` (or set `review = true`).",
            )
        if req.op == "list":
            return {
                "type": "review",
                "op": "list",
                "review_timeout": queue.timeout if queue is not None else None,
                "proposals": queue.list() if queue is not None else [],
                **({"changesets": await sets.rows()} if sets is not None else {}),
            }
        if req.op == "accept" and req.all:
            results = await queue.accept_all() if queue is not None else []
            return {"type": "review", "op": "accept", "results": results + (await sets.keep_all() if sets else [])}
        assert queue is not None
        p = queue.find(req.proposal_id or "")
        if p is None:
            return frames.refusal(
                "NO_PROPOSAL",
                (
                    f"No pending proposal {req.proposal_id}: it was decided, timed out or its agent left. `oh "
                    "review` lists the pending ones."
                ),
            )
        if req.op == "show":
            diff, is_binary = await asyncio.to_thread(p.diff)  # proportional to the file (or worse): off the loop
            hs = await asyncio.to_thread(p.hunks)
            shown = {**p.row(), "diff": diff, "binary": is_binary, "hunks": [h.row() for h in hs]}
            return {"type": "review", "op": "show", "proposal": shown}
        if req.partial:
            return await self._partial_proposal(queue, p, req)
        if req.op == "accept":
            return {"type": "review", "op": "accept", "results": [await queue.accept(p.proposal_id)]}
        return {"type": "review", "op": "reject", "results": [queue.reject(p.proposal_id, req.reason)]}

    @staticmethod
    async def _partial_proposal(queue: Any, p: Any, req: review.ReviewRequest) -> dict[str, Any]:
        """Accept or reject some hunks of a proposal (issue 39): the chosen ones are written (accept) or left
        out (reject: the rest is written), in one write; every hunk chosen is the whole decision."""
        hs = await asyncio.to_thread(p.hunks)
        bad = hunks.check_selection(hs, req.hunks or (), req.files or ())
        if bad is not None:
            return frames.refusal("BAD_REQUEST", f"{bad} Nothing was decided.")
        named = hunks.named(hs, req.hunks or (), req.files or ())
        every = {h.n for h in hs}
        write = named if req.op == "accept" else every - named
        if not write:
            return {"type": "review", "op": req.op, "results": [queue.reject(p.proposal_id, req.reason)]}
        return {"type": "review", "op": req.op, "results": [await queue.accept(p.proposal_id, write)]}

    async def _changeset_request(self, sets: Any, req: review.ReviewRequest) -> dict[str, Any]:
        """A command's change set (``h12``): show its diff, keep it (accept) or revert it (reject)."""
        if sets is None:
            return frames.refusal(
                "REVIEW_OFF",
                "A command's changes are reviewed when review mode and history are both on: "
                "`oh start --review --history` (or set `review = true` and `history = true`).",
            )
        if req.op == "show":
            shown = await sets.show(req.proposal_id)
            if shown is None:
                return frames.refusal(
                    "NO_PROPOSAL",
                    f"No pending change set {req.proposal_id}: it was kept or reverted. `oh review` lists them.",
                )
            return {"type": "review", "op": "show", "changeset": shown}
        result = await sets.decide(req.proposal_id, req.op == "accept", req.hunks, req.files)
        if result.get("outcome") == "bad_selection":
            return frames.refusal("BAD_REQUEST", f"{result['message']} Nothing was decided.")
        return {"type": "review", "op": req.op, "results": [result]}
