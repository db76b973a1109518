"""A command's change set reviewed hunk by hunk (issue 39 item 2; docs/protocol.md §3.15.1).

The hunks of a change set are its files' (path order, numbered 1.. across them, ``protocol.hunks``): a text
file's ``@@`` groups, and one whole-file hunk for a created, deleted, renamed, re-moded or binary file.
Keeping hunks only records the decision. Reverting hunks is an undo of just those hunks, with the undo's
own rule: for a text file the text it should now have (the change with every reverted hunk left out) is
merged three ways into the file as it is now, from the text the change had left (the change with the
hunks reverted before left out), so the user's later edits stay and an overlap changes nothing (all files
or none, the conflict naming the file). Each revert is one history entry (an undo: `oh undo` takes it
back). The change set stays pending until every hunk is decided; it is then ``reverted`` when every hunk
was reverted, else ``kept``.
"""

from __future__ import annotations

from typing import Any, Iterable

from .. import beneath
from ..protocol import history as H
from ..protocol import hunks as K
from . import tree
from .timeline import Timeline
from .undo import _apply, _content, _plan

KEPT, REVERTED = H.KEPT, H.REVERTED
Group = tuple[K.Hunk, list[H.Change]]


def _text(tl: Timeline, s: H.FileState | None) -> str | None:
    """A stored regular file's content as text; None when it is binary, a symlink or not stored."""
    if s is None or s.kind != H.REGULAR or not s.stored or s.hash is None or tree.is_git_ref(s):
        return None
    try:
        data = _content(tl, s)
    except KeyError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _whole(tl: Timeline, c: H.Change, n: int) -> K.Hunk:
    if c.kind == "renamed":
        return K.whole(n, c.path, K.RENAME, f"renamed {c.renamed} -> {c.path}")
    if c.kind == "created":
        return K.whole(n, c.path, K.CREATE, f"new file {c.path}", added=len((_text(tl, c.after) or "").splitlines()))
    if c.kind == "deleted":
        gone = len((_text(tl, c.before) or "").splitlines())
        return K.whole(n, c.path, K.DELETE, f"deleted file {c.path}", removed=gone)
    assert c.before is not None and c.after is not None
    if c.before.mode != c.after.mode:
        same = " (content changed too)" if c.kind != "mode" else ""
        return K.whole(n, c.path, K.MODE, f"mode {c.before.mode:o} -> {c.after.mode:o} of {c.path}{same}")
    return K.whole(n, c.path, K.BINARY, f"binary file {c.path} changed ({c.before.size:,} -> {c.after.size:,} bytes)")


def groups(tl: Timeline, e: H.Entry) -> list[Group]:
    """The change set's hunks with the changes each stands for (a rename's two halves are one hunk)."""
    out: list[Group] = []
    by_path = {c.path: c for c in e.changes}
    for c in sorted(e.changes, key=lambda c: c.path):
        if c.renamed and c.after is None and c.renamed in by_path:
            continue  # the old name's half: the new name's hunk stands for both
        n = len(out) + 1
        old, new = _text(tl, c.before), _text(tl, c.after)
        if c.kind == "changed" and old is not None and new is not None and c.before.mode == c.after.mode:  # type: ignore[union-attr]
            out.extend((h, [c]) for h in K.split(c.path, old, new, first=n))
            continue
        halves = [c] + ([by_path[c.renamed]] if c.renamed and c.renamed in by_path else [])
        out.append((_whole(tl, c, n), halves))
    return out


def rows(tl: Timeline, e: H.Entry) -> list[dict[str, Any]]:
    """``show``'s ``hunks``: each with ``decided`` (kept | reverted | null)."""
    return [{**h.row(), "decided": e.hunks.get(h.n)} for h, _ in groups(tl, e)]


def _state(tl: Timeline, text: str, mode: int) -> H.FileState:
    data = text.encode("utf-8")
    return H.FileState(H.REGULAR, mode, len(data), tl.store.put(data))


def _netmap(tl: Timeline, e: H.Entry, gs: list[Group], now: set[int]) -> dict[str, Any]:
    """Per path, (what to put back, what the change set left there) for the hunks ``now`` reverted."""
    before = {n for n, d in e.hunks.items() if d == REVERTED}
    netmap: dict[str, Any] = {}
    for c in sorted({id(cs[0]): cs[0] for h, cs in gs if h.n in now}.values(), key=lambda c: c.path):
        mine = [(h, cs) for h, cs in gs if cs[0] is c]
        if mine[0][0].whole:
            netmap.update(H.net(x for x in mine[0][1]))
            continue
        hs = [h for h, _ in mine]
        every = {h.n for h in hs}
        old, new = _text(tl, c.before), _text(tl, c.after)
        assert old is not None and new is not None and c.after is not None
        wanted = K.partial(old, new, hs, every - before - now)
        # what the change set left: its own after while none of this file's hunks was reverted before
        left = c.after if not every & before else _state(tl, K.partial(old, new, hs, every - before), c.after.mode)
        netmap[c.path] = (_state(tl, wanted, c.after.mode), left)
    return netmap


def _revert(tl: Timeline, e: H.Entry, gs: list[Group], now: set[int]) -> dict[str, Any]:
    """Revert hunks ``now`` as one undo entry (called with ``tl.lock`` held): the answer of ``undo``."""
    netmap = _netmap(tl, e, gs, now)
    refs = {p: tl.index[p] for p in netmap if p in tl.index and tree.is_git_ref(tl.index[p][1])}
    if refs:
        real = tree.materialize(tl.root, {p: st for p, (_k, st) in refs.items()}, tl.store)
        tl.index.update({p: (key, real[p]) for p, (key, _st) in refs.items()})
    steps, conflicts = _plan(tl, netmap, True)
    if conflicts:
        first = conflicts[0]
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        return {
            "ok": False,
            "conflicts": conflicts,
            "message": f"Nothing was changed: {first['path']}: {first['reason']}{more}.",
        }
    u = tl._open("user", "undo", f"undo hunks {K.ranges(now)} of {e.id}", undoes=[e.id], by=H.USER)
    tl.active[u.id] = u
    try:
        parents: set[str] = set()
        for path, state, merged in sorted(steps, key=lambda s: s[1] is not None):  # deletions first
            _apply(tl, path, state, merged, parents)
    except beneath.Escape as exc:
        return {"ok": False, "conflicts": [], "message": f"{exc}: oh does not follow it (entry {u.id} holds the rest)."}
    finally:
        tl._drain()
        tl.active.pop(u.id, None)
        tl._close(u, "done")
    return {"ok": True, "entry": u.id, "files": [s[0] for s in steps]}


def undecided(e: H.Entry, gs: list[Group]) -> list[int]:
    return [h.n for h, _ in gs if h.n not in e.hunks]


def decide(tl: Timeline, entry_id: int, numbers: Iterable[int], keep: bool) -> dict[str, Any] | None:
    """Keep or revert some hunks of a pending change set (``numbers`` already checked against ``groups``).
    None: no such pending change set."""
    with tl.lock:
        e = tl.entries.get(entry_id)
        if e is None or e.review != H.PENDING:
            return None
        tl._drain()
        gs = groups(tl, e)
        now = set(numbers) - set(e.hunks)
        cid = H.changeset_id(entry_id)
        out: dict[str, Any] = {"id": cid, "hunks": sorted(now)}
        if keep:
            tl.mark_hunks(e, now, KEPT)
            out.update(outcome="accepted", message=f"kept hunks {K.ranges(now)}")
        else:
            done = _revert(tl, e, gs, now)
            if not done["ok"]:
                return {**out, "outcome": "conflict", "message": done["message"], "conflicts": done["conflicts"]}
            tl.mark_hunks(e, now, REVERTED)
            out.update(
                outcome="rejected",
                entry=done["entry"],
                message=(
                    f"reverted hunks {K.ranges(now)}: {len(done['files'])} file(s) written (history entry "
                    f"{done['entry']}; `oh undo {done['entry']}` redoes)"
                ),
            )
        left = undecided(e, gs)
        if not left:
            tl.mark(e, REVERTED if all(d == REVERTED for d in e.hunks.values()) else KEPT)
        out["pending_hunks"] = left
        return out
