"""History and undo (issue 29, docs/protocol.md §3.15): the pure decisions.

What a file looked like (``FileState``), what an action changed (``Change``: one path, its state before and
after; renames are a pair of changes annotated with each other), which changes an entry of the timeline
owns, what several entries changed together (``net``), and for each file what an undo does given what the
file is now (``verdict``). No files are read here: the recorder (``oh.history``) reads and writes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from .errors import ErrorId, ProtocolError

REGULAR, SYMLINK = "f", "l"


@dataclass(frozen=True, slots=True)
class FileState:
    """One file as the recorder saw it: its kind, permission bits, size and content hash (sha256 hex).

    ``stored`` = the content is in the object store (an undo can bring it back); an ignored tree's file
    or one above the size limit is known by its stat and hash only (``hash`` None: not even hashed)."""

    kind: str  # REGULAR | SYMLINK
    mode: int  # permission bits (0o7777)
    size: int
    hash: str | None
    stored: bool = True

    def row(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "mode": f"{self.mode:o}",
            "size": self.size,
            "hash": self.hash,
            "stored": self.stored,
        }

    @classmethod
    def from_row(cls, row: dict[str, Any] | None) -> FileState | None:
        if row is None:
            return None
        return cls(str(row["kind"]), int(str(row["mode"]), 8), int(row["size"]), row.get("hash"), bool(row["stored"]))


def same(a: FileState | None, b: FileState | None) -> bool:
    """The same file for an undo: kind, content and permission bits (not times, not inode)."""
    if a is None or b is None:
        return a is b
    return a.kind == b.kind and a.mode == b.mode and a.hash is not None and a.hash == b.hash


@dataclass(slots=True)
class Change:
    path: str  # relative to the workspace, "/"-separated
    before: FileState | None  # None: did not exist
    after: FileState | None
    renamed: str | None = None  # the other path of a rename (set on both halves)
    ambiguous: tuple[int, ...] = ()  # other entries running while it happened

    @property
    def kind(self) -> str:
        if self.before is None:
            return "renamed" if self.renamed else "created"
        if self.after is None:
            return "renamed" if self.renamed else "deleted"
        if self.before.kind == self.after.kind and self.before.hash == self.after.hash:
            return "mode"
        return "changed"

    def row(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "path": self.path,
            "change": self.kind,
            "before": None if self.before is None else self.before.row(),
            "after": None if self.after is None else self.after.row(),
        }
        if self.renamed:
            row["renamed"] = self.renamed
            row["side"] = "from" if self.after is None else "to"
        if self.ambiguous:
            row["ambiguous"] = list(self.ambiguous)
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Change:
        return cls(
            str(row["path"]),
            FileState.from_row(row.get("before")),
            FileState.from_row(row.get("after")),
            row.get("renamed"),
            tuple(int(i) for i in row.get("ambiguous", ())),
        )


def _equal(a: FileState | None, b: FileState | None) -> bool:
    if a is None or b is None:
        return a is b
    if a.hash is None or b.hash is None:  # not hashed (ignored, too large): by stat
        return a.kind == b.kind and a.mode == b.mode and a.size == b.size and a.hash == b.hash
    return same(a, b)


def classify(pairs: dict[str, tuple[FileState | None, FileState | None]]) -> list[Change]:
    """The changes among (before, after) pairs of the paths that may have changed: unchanged ones dropped,
    a deletion and a creation of the same content (unique on both sides) annotated as a rename."""
    changes = [Change(p, b, a) for p, (b, a) in sorted(pairs.items()) if not _equal(b, a)]
    gone: dict[tuple[str, str], list[Change]] = {}
    born: dict[tuple[str, str], list[Change]] = {}
    for c in changes:
        if c.after is None and c.before is not None and c.before.hash:
            gone.setdefault((c.before.kind, c.before.hash), []).append(c)
        elif c.before is None and c.after is not None and c.after.hash:
            born.setdefault((c.after.kind, c.after.hash), []).append(c)
    for key, olds in gone.items():
        news = born.get(key, [])
        if len(olds) == 1 and len(news) == 1:
            olds[0].renamed, news[0].renamed = news[0].path, olds[0].path
    return changes


def net(changes: Iterable[Change]) -> dict[str, tuple[FileState | None, FileState | None]]:
    """What a sequence of changes (oldest first) did together, per path: the first before, the last after."""
    out: dict[str, tuple[FileState | None, FileState | None]] = {}
    for c in changes:
        first = out[c.path][0] if c.path in out else c.before
        out[c.path] = (first, c.after)
    return {p: ba for p, ba in out.items() if not _equal(*ba)}


USER, AGENT = "user", "agent"  # Entry.by: the credential oh saw (docs/protocol.md §3.15)


def legacy_by(kind: str, agent: str) -> str:
    """``by`` of an entry journaled before oh recorded it: the user's changes and the user's undos are the
    user's; every action came from an agent's connection."""
    return USER if kind == "user" or (kind == "undo" and agent == "user") else AGENT


def fold(into: list[Change], more: Iterable[Change]) -> None:
    """Add ``more`` to an entry's changes, one change per path: a path changed again keeps its first before and
    takes the new after, and drops out when it is back as it was (a temporary file made and removed while a
    command ran, found by two drains)."""
    where = {c.path: i for i, c in enumerate(into)}
    dropped = False
    for c in more:
        i = where.get(c.path)
        if i is None:
            where[c.path] = len(into)
            into.append(c)
            continue
        old = into[i]
        if _equal(old.before, c.after):
            dropped = True
            del where[c.path]
            into[i] = Change("", None, None)  # marked: removed below (keeps the indices valid meanwhile)
            continue
        ambiguous = tuple(sorted(set(old.ambiguous) | set(c.ambiguous)))
        renamed = (c.renamed or old.renamed) if old.before is None or c.after is None else None
        into[i] = Change(c.path, old.before, c.after, renamed, ambiguous)
    if dropped:
        into[:] = [c for c in into if c.path]
        # A rename's other half that came back (a temporary file sed made and removed) is no rename any more:
        # the file left is a plain creation or deletion.
        left = {c.path for c in into}
        for c in into:
            if c.renamed and c.renamed not in left:
                c.renamed = None


# An undo's verdict for one file: put ``before`` back, nothing to do, merge three ways, or refuse.
RESTORE, NOTHING, MERGE, CONFLICT = "restore", "nothing", "merge", "conflict"


@dataclass(frozen=True, slots=True)
class Verdict:
    action: str
    reason: str = ""


def verdict(before: FileState | None, after: FileState | None, current: FileState | None) -> Verdict:
    """What undoing ``before -> after`` does to a file that is ``current`` now.

    Unchanged since (current == after): restore ``before``. Already back (current == before): nothing.
    Changed since by someone else: a three-way merge of text (base = after, ours = current, theirs =
    before) when all three are regular stored files, else a conflict: the later change is never lost."""
    if after is not None and after.hash is None or before is not None and not before.stored:
        return Verdict(
            CONFLICT, "its content was not stored (ignored tree, above the size limit, or collected by history_max_mb)"
        )
    if same(current, after) or (current is None and after is None):
        return Verdict(RESTORE)
    if same(current, before) or (current is None and before is None):
        return Verdict(NOTHING)
    if current is None:
        return Verdict(CONFLICT, "deleted by someone else since")
    if after is None:
        return Verdict(CONFLICT, "created again by someone else since this entry deleted it")
    if before is None:
        return Verdict(CONFLICT, "this entry created it and someone edited it since (undo would delete their edit)")
    if not all(s.kind == REGULAR and s.stored for s in (before, after, current)):
        return Verdict(CONFLICT, "changed since, and not a text file three-way merge can combine")
    return Verdict(MERGE)


@dataclass(frozen=True, slots=True)
class HistoryRequest:
    """A ``history`` control request (§3.15): list the timeline, show one entry's diff, or undo."""

    op: str  # list | show | undo
    entry: int | None = None
    to: bool = False  # undo: this entry and every later one (back to before it)
    agent: str | None = None  # list: one agent's entries; undo: only this agent's own (MCP)
    limit: int = 200
    include_ambiguous: bool = False  # undo: also revert changes oh cannot tell were this entry's (the user only)


def _int(obj: dict[str, Any], key: str) -> int | None:
    v = obj.get(key)
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ProtocolError(ErrorId.BAD_REQUEST, f"history: '{key}' must be a positive integer (an entry number).")
    return v


def parse_request(obj: dict[str, Any]) -> HistoryRequest:
    op = obj.get("op", "list")
    if op not in ("list", "show", "undo"):
        raise ProtocolError(ErrorId.BAD_REQUEST, "history: 'op' is one of list, show, undo.")
    entry = _int(obj, "entry")
    if op != "list" and entry is None:
        raise ProtocolError(ErrorId.BAD_REQUEST, f"history {op} needs 'entry' (a number from `oh history`).")
    agent = obj.get("agent")
    if agent is not None and (not isinstance(agent, str) or not 0 < len(agent) <= 200):
        raise ProtocolError(ErrorId.BAD_REQUEST, "history: 'agent' must be a non-empty string.")
    limit = _int(obj, "limit") or 200
    include = obj.get("include_ambiguous", False)
    if not isinstance(include, bool):
        raise ProtocolError(ErrorId.BAD_REQUEST, "history: 'include_ambiguous' is true or false.")
    return HistoryRequest(op, entry, bool(obj.get("to", False)), agent, min(limit, 10_000), include)


@dataclass(slots=True)
class Entry:
    """One action's row in the timeline (or an undo's, or the user's changes between actions)."""

    id: int
    agent: str
    kind: str  # run | job | write | edit | undo | user
    what: str
    started: str
    ended: str | None = None
    status: str = "running"  # running | done | interrupted
    changes: list[Change] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # changed in an ignored tree: not stored
    undoes: list[int] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)  # directories it created (an undo removes them once empty)
    review: str | None = None  # review after the fact: pending | kept | reverted (None: not a change set)
    hunks: dict[int, str] = field(default_factory=dict)  # a change set's hunks decided one by one: n -> kept | reverted
    # Who oh saw make it (never a name a frame supplies): USER (the user's own changes, an undo sent with the
    # decider credential, an editor's) or AGENT (an action sent with the agent token, a sandbox's leftover
    # processes). ``agent`` is the display name the agent gave itself; only ``by`` decides who may undo it.
    by: str = "agent"
    # Its contents went to keep the store under history_max_mb (issue 39): listed and shown, no longer undoable.
    collected: bool = False
    shell: str | None = field(default=None, compare=False)  # the sandbox whose activity is watched (not journaled)

    def row(self, with_changes: bool = True) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": self.id,
            "agent": self.agent,
            "by": self.by,
            "kind": self.kind,
            "what": self.what,
            "started": self.started,
            "ended": self.ended,
            "status": self.status,
            "files": len(self.changes),
            "created": sum(c.kind == "created" for c in self.changes),
            "deleted": sum(c.kind == "deleted" for c in self.changes),
            "ambiguous": sum(bool(c.ambiguous) for c in self.changes),
            "ignored": len(self.ignored),
        }
        if self.undoes:
            row["undoes"] = self.undoes
        if self.review:
            row["review"] = self.review
        if self.collected:
            row["collected"] = True
        if with_changes:
            row["changes"] = [c.row() for c in self.changes]
            row["ignored_paths"] = self.ignored[:200]
        return row


# Review after the fact (§3.15.1): with review mode and history both on, a command's file changes are a
# change set the user keeps or reverts. Only commands: a write/edit is reviewed before it lands (§3.11).
REVIEWED_KINDS = frozenset({"run"})
PENDING, KEPT, REVERTED = "pending", "kept", "reverted"
CHANGESET_ID = re.compile(r"\Ah([0-9]{1,12})\Z")  # h12: the change set of history entry 12 (\Z: no "h1\n")


def opens_changeset(entry: Entry) -> bool:
    """Whether an entry that just ended becomes a change set awaiting the user's keep or revert."""
    return entry.kind in REVIEWED_KINDS and bool(entry.changes) and entry.review is None


def changeset_id(entry_id: int) -> str:
    return f"h{entry_id}"


def held_note(entry: Entry) -> str:
    """What the agent reads after a command whose file changes became a change set (§3.15.1): they are on
    disk, but not final (the user keeps or reverts them)."""
    n = len({c.path for c in entry.changes})
    return (
        f"[oh: review mode: this command's changes to {n} file{'s' if n != 1 else ''} are held for the user's "
        f"review as change set {changeset_id(entry.id)}: they are on disk now, but the user keeps or reverts "
        "them (`oh review`); do not assume they are final]"
    )


def held_later_note(entry_id: int) -> str:
    """The same for a background job, said when it starts: its changes are held when it ends."""
    return (
        f"[oh: review mode: the files this job changes are held for the user's review as change set "
        f"{changeset_id(entry_id)} when it ends; the user keeps or reverts them (`oh review`)]"
    )


def changeset_entry(cid: str) -> int | None:
    """The history entry of a change set id (``h12`` -> 12); None when it is not one."""
    m = CHANGESET_ID.match(cid)
    return int(m.group(1)) if m else None


def select_for_undo(entries: list[Entry], target: int, to: bool, agent: str | None) -> list[Entry]:
    """The entries an undo reverts, oldest first: one entry, or it and every later agent entry (``to``).

    The user's own changes (kind ``user``) are never reverted by ``--to``: they stay, and the files the
    user changed since are merged three ways. ``agent`` (an agent undoing its own work, with the agent token):
    only entries oh attributed to the agent credential and that name, none whose change another entry's or the
    user's could be (ambiguous). A name is no credential: an agent that calls itself "user" is still an agent."""
    chosen = [e for e in entries if e.id == target] if not to else [e for e in entries if e.id >= target]
    chosen = [e for e in chosen if e.kind != "user" or e.id == target]
    if agent is not None:
        for e in chosen:
            if e.by != AGENT:
                raise ProtocolError(ErrorId.PATH_DENIED, f"entry {e.id} is the user's, not an agent's: not undone.")
            if e.agent != agent:
                raise ProtocolError(ErrorId.PATH_DENIED, f"entry {e.id} is {e.agent}'s, not yours: not undone.")
            if any(c.ambiguous for c in e.changes):
                raise ProtocolError(
                    ErrorId.PATH_DENIED, f"entry {e.id} has changes another action may have made: ask the user."
                )
    return chosen


def split_ambiguous(chosen: list[Entry]) -> tuple[list[Change], list[Change]]:
    """The changes of the entries an undo reverts: those oh attributed to them alone, and the ambiguous ones
    (another entry outside this undo, or the user, may have made them): those are kept unless the user includes
    them. A path with any ambiguous change is kept whole (its later changes build on it)."""
    ids = {e.id for e in chosen}
    doubtful = {c.path for e in chosen for c in e.changes if set(c.ambiguous) - ids}
    changes = [c for e in chosen for c in e.changes]
    return [c for c in changes if c.path not in doubtful], [c for c in changes if c.path in doubtful]


# VS Code's undo (§3.15.2): the editor leg asks, with the user's unsaved buffers; the backend answers with
# the edits; the editor applies them as one WorkspaceEdit and says so with ``applied``.
EDITOR_BUFFERS_MAX = 8 * 1024 * 1024  # characters, all buffers together


@dataclass(frozen=True, slots=True)
class EditorHistoryRequest:
    op: str  # list | show | undo | applied
    rid: str  # the editor's request id, echoed in the answer
    entry: int | None = None
    to: bool = False
    buffers: dict[str, str] = field(default_factory=dict)


def parse_editor_request(obj: dict[str, Any]) -> EditorHistoryRequest:
    """A ``history`` frame on the editor leg: the ops of ``parse_request`` plus ``applied``; an ``undo`` carries
    ``buffers`` ({workspace-relative path: unsaved text}) and is answered with edits, not applied here."""
    rid = obj.get("rid")
    if not isinstance(rid, str) or not 0 < len(rid) <= 64:
        raise ProtocolError(ErrorId.BAD_REQUEST, "history (editor): 'rid' must be a short string.")
    op = obj.get("op")
    if op == "applied":
        entry = _int(obj, "entry")
        if entry is None:
            raise ProtocolError(ErrorId.BAD_REQUEST, "history applied needs 'entry'.")
        return EditorHistoryRequest("applied", rid, entry)
    req = parse_request(obj)
    buffers = obj.get("buffers") or {}
    if not isinstance(buffers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and 0 < len(k) <= 4096 and not k.startswith("/")
        for k, v in buffers.items()
    ):
        raise ProtocolError(ErrorId.BAD_REQUEST, "history: 'buffers' maps workspace-relative paths to text.")
    if sum(len(v) for v in buffers.values()) > EDITOR_BUFFERS_MAX:
        raise ProtocolError(ErrorId.BAD_REQUEST, "history: the unsaved buffers are too large (8 MiB together).")
    return EditorHistoryRequest(req.op, rid, req.entry, req.to, dict(buffers))
