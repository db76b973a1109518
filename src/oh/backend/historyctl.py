"""History's wiring in the backend (issue 29, docs/protocol.md §3.15): the recorder around the runtime
(``HistoryControl.wrap``, one hook the backend's composition calls) and the ``history`` control requests
(``HistoryControl.handle``): list, show (a diff), undo.

Who may undo: the decider credential (the user's `oh undo`) any entry; the agent token (MCP, SDK) only
the named agent's own entries, none with an ambiguous change, and no file anyone changed since (no merge:
an agent never undoes past the user's edits).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..protocol import frames
from ..protocol import history as H
from ..protocol.errors import ProtocolError
from ..runtimes.base import Runtime
from ..runtimes.history import HistoryRecorder

if TYPE_CHECKING:
    from .options import BackendConfig


class HistoryControl:
    """History's role in the backend: the recorder it puts around the runtime when history is on (``wrap``,
    called once by the stack's composition) and the ``history`` control requests (``handle``)."""

    def __init__(self, config: BackendConfig, workspace: str) -> None:
        self.config = config
        self.workspace = workspace
        self.recorder: HistoryRecorder | None = None  # set by ``wrap`` when history is on

    def wrap(self, runtime: Runtime) -> Runtime:
        """The recorder around ``runtime`` when history is on, else ``runtime`` itself."""
        cfg = self.config
        if cfg.history_dir is None:
            return runtime
        from ..history.timeline import Timeline

        def make() -> Timeline:
            return Timeline(
                self.workspace,
                str(cfg.history_dir),
                store_ignored=cfg.history_store_ignored,
                max_file=cfg.history_max_file,
            )

        self.recorder = HistoryRecorder(runtime, make)
        return self.recorder

    async def handle(self, obj: dict[str, Any], decider: bool) -> dict[str, Any]:
        """One ``history`` control request (list, show, undo); ``decider``: sent with the decider credential."""
        recorder = self.recorder
        if recorder is None or recorder.timeline is None:
            return frames.refusal(
                "HISTORY_OFF",
                "History is off for this backend: start it with `oh start --history` (or set `history = true`).",
            )
        try:
            req = H.parse_request(obj)
        except ProtocolError as exc:
            return frames.refusal(str(exc.error_id), exc.message)
        return await asyncio.to_thread(_answer, recorder.timeline, req, decider)


def _answer(tl, req: H.HistoryRequest, decider: bool) -> dict[str, Any]:
    from ..history import undo

    if req.op == "list":
        tl.refresh()
        rows = [e.row(with_changes=False) for e in tl.entries.values() if req.agent in (None, e.agent)]
        return {"type": "history", "op": "list", "entries": rows[-req.limit :], "workspace": tl.root}
    if req.op == "show":
        shown = undo.diff(tl, req.entry or 0)
        if not shown:
            return frames.refusal("NO_ENTRY", f"No entry {req.entry}: `oh history` lists them.")
        return {"type": "history", "op": "show", "entry": shown}
    only = None
    if not decider:
        if req.agent is None:
            return frames.refusal(
                "FORBIDDEN",
                "An agent undoes only its own entries: name yourself with 'agent' (or ask the user: `oh undo`).",
            )
        only = req.agent
    try:
        result = undo.undo(tl, req.entry or 0, to=req.to, who=req.agent or "user", only_agent=only, merge=decider)
    except ProtocolError as exc:
        return frames.refusal("FORBIDDEN", exc.message)
    return {"type": "history", "op": "undo", **result}
