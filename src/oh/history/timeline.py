"""The timeline of one workspace: entries (one per action, undo, or stretch of the user's own changes),
each with the files it changed, before and after, kept under oh's state directory (never in the user's
``.git``): ``timeline.jsonl`` (append-only journal) and ``objects.pack`` (contents, ``store.py``).

How "before" is known although inotify speaks after the fact: a first snapshot at start reads every
non-ignored file once (stat, hash, store deduplicated); from then on the index always holds each file's
last state with its content stored, so a change found by a drain has its before in the index and its
after is read then. Drains run at each action's start and end: a change found in a stretch where one
action ran is that action's, where several ran it is marked ambiguous on each, where none ran it is the
user's (an entry of kind ``user``).

Who made a change (issue 36 item 5): with the agents' sandboxes watched (``activity.Activity``), a thread drains
as soon as inotify has news, and a change goes only to the actions whose sandbox ran in that short stretch. A
change made while the agent's command slept (``sleep 4``) is the user's; a change made by processes the agent
left running after its command ended goes to an entry of that agent (kind ``leftover``), never to the user.
Actions oh cannot watch that way (a write or an edit the backend makes, a command run outside the sandbox) keep
every change made while they ran, as above.
"""

from __future__ import annotations

import json
import logging
import os
import select
import stat
import threading
import time
from datetime import datetime, timezone
from typing import Any, Iterable

from ..protocol import history as H
from . import tree
from .activity import Activity, Sample
from .store import ObjectStore
from .watch import Dirty, Watcher

log = logging.getLogger("oh.history")

MAX_FILE = 64 * 1024 * 1024  # larger files are hashed, not stored: their changes are shown, not undone
TICK = 0.1  # s: the longest stretch over which who ran is looked at (activity.py); a look costs ~1 ms
KEEP = 5000  # entries kept; older ones (and the contents only they used) go at the next start
# The first snapshot: a clean file whose ctime is older than its start by this much kept git's blob (the kernel
# stamps times with a clock a tick behind; a second is far more than a tick). Newer ones are read and compared.
SETTLE_NS = 1_000_000_000
SETTLE_BATCH = 500  # files phase 2 looks at per turn of the lock
UNSEEN: tree.StatKey = (0, 0, 0, 0, 0)  # a clean file phase 1 put in the index by its blob, not looked at yet


def _drop(s: H.FileState | None, keep: set[str]) -> H.FileState | None:
    """A state whose content the store no longer holds says so (``stored`` false: shown, not restored)."""
    if s is None or not s.stored or s.hash in keep:
        return s
    return H.FileState(s.kind, s.mode, s.size, s.hash, False)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Timeline:
    def __init__(
        self,
        root: str,
        state: str,
        *,
        store_ignored: bool = False,
        max_file: int = MAX_FILE,
        keep: int = KEEP,
        max_bytes: int = 0,
        max_watches: int = 0,
        review: bool = False,
        fsync: bool = True,
        activity: Activity | None = None,
    ) -> None:
        self.root = os.path.realpath(root)
        self.fsync = fsync  # off only to measure its cost (benchmarks/history.py)
        self.review = review  # review after the fact: a command's changes become a change set (§3.15.1)
        os.makedirs(state, mode=0o700, exist_ok=True)
        self.state = state
        self.max_file = max_file
        self.keep = keep
        self.max_bytes = max_bytes  # the store's bound (history_max_mb; 0: none)
        self._next_fit = 0
        self.store = ObjectStore(os.path.join(state, "objects.pack"))
        self.ignores = tree.Ignores(self.root, store_ignored)
        self.watcher = Watcher(self.root, max_watches)
        self.index: dict[str, tuple[tree.StatKey, H.FileState]] = {}
        self.entries: dict[int, H.Entry] = {}
        self.active: dict[int, H.Entry] = {}
        self.lock = threading.RLock()
        self.activity = activity
        self.shell_names: dict[str, str] = {}  # sandbox key -> the name its agent gave (for leftover entries)
        self._mark: Sample = {}  # the agents' sandboxes as the last drain found them, before it read inotify
        self._ticker: threading.Thread | None = None
        self._wake = os.pipe() if activity is not None else None
        # The first snapshot (issue 39): phase 1 (git's listing) before any action, phase 2 while actions run.
        self.settling = False  # phase 2 runs: what it finds changed goes to the entries begun meanwhile
        self._early: list[H.Entry] = []
        self._t0_ns = 0
        self._snap: dict[str, Any] = {}
        self._clean: dict[str, str] = {}  # phase 1's clean files not in the index yet: (git mode, blob)
        self._closed = False
        self._journal_path = os.path.join(state, "timeline.jsonl")
        self._load()
        self._gc()
        self._jfd = os.open(self._journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.next_id = max(self.entries, default=0) + 1
        for e in self.entries.values():
            if e.status == "running":  # the backend died mid-action: what it changed was not recorded
                e.status, e.ended = "interrupted", _now()
                self._write({"t": "e", "id": e.id, "ended": e.ended, "status": e.status})

    # ------------------------------------------------------------------ journal
    def _write(self, rec: dict[str, Any], sync: bool = False) -> None:
        # A killed backend loses nothing (the kernel has the write); a power cut could lose what is not on
        # disk, so an entry's end (and a change set's decision) is fsynced: a finished entry survives it.
        # Only there, once per entry: its cost is in docs/benchmarks.md ("History and undo").
        os.write(self._jfd, (json.dumps(rec, separators=(",", ":")) + "\n").encode())
        if sync and self.fsync:
            os.fsync(self._jfd)

    def _load(self) -> None:
        try:
            with open(self._journal_path, "rb") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return
        for line in lines:
            try:
                self._replay(json.loads(line))
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line (crash mid-write): everything before it stands

    def _replay(self, rec: dict[str, Any]) -> None:
        t, eid = rec["t"], int(rec["id"])
        if t == "b":
            by = rec.get("by")
            self.entries[eid] = H.Entry(
                eid,
                rec["agent"],
                rec["kind"],
                rec["what"],
                rec["started"],
                undoes=rec.get("undoes", []),
                by=by if by in (H.USER, H.AGENT) else H.legacy_by(rec["kind"], rec["agent"]),
            )
        elif t == "c" and eid in self.entries:
            e = self.entries[eid]
            H.fold(e.changes, (H.Change.from_row(c) for c in rec.get("changes", ())))
            e.ignored.extend(rec.get("ignored", ()))
            e.dirs.extend(str(d) for d in rec.get("dirs", ()))
        elif t == "e" and eid in self.entries:
            self.entries[eid].ended, self.entries[eid].status = rec["ended"], rec["status"]
        elif t == "r" and eid in self.entries:
            self.entries[eid].review = str(rec["review"])
        elif t == "x" and eid in self.entries:
            self.entries[eid].collected = True
        elif t == "k" and eid in self.entries:  # hunks of a change set decided (issue 39)
            self.entries[eid].hunks.update({int(n): str(v) for n, v in rec["hunks"].items()})

    def _gc(self) -> None:
        """Garbage collection at start: keep the last ``keep`` entries and the contents they use, and every
        change set still awaiting the user's keep or revert, however old (never dropped: its revert needs
        its entry and its "before" contents)."""
        if len(self.entries) <= self.keep and self.store.size < 4 * 1024**3:
            self._fit()
            return
        last = set(sorted(self.entries)[-self.keep :]) if self.keep > 0 else set()
        held = {i for i, e in self.entries.items() if e.review == H.PENDING and i not in last}
        dropped = len(self.entries) - len(last) - len(held)
        self.entries = {i: e for i, e in self.entries.items() if i in last or i in held}
        if dropped or held:
            log.info(
                "history: retention dropped %d old entries; kept %d pending change set(s) past it", dropped, len(held)
            )
        used = {s.hash for e in self.entries.values() for c in e.changes for s in (c.before, c.after) if s and s.hash}
        self.store.compact(used)
        self._rewrite_journal()
        self._fit()

    def _rewrite_journal(self) -> None:
        """The journal as the entries are now (atomic rename; the open append fd, if any, follows the new file)."""
        tmp = self._journal_path + ".gc"
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            for e in self.entries.values():
                f.write(json.dumps(self._begin_rec(e)) + "\n")
                changed = {"t": "c", "id": e.id, "changes": [c.row() for c in e.changes], "ignored": e.ignored}
                f.write(json.dumps({**changed, "dirs": e.dirs} if e.dirs else changed) + "\n")
                if e.ended is not None:
                    f.write(json.dumps({"t": "e", "id": e.id, "ended": e.ended, "status": e.status}) + "\n")
                if e.review:
                    f.write(json.dumps({"t": "r", "id": e.id, "review": e.review}) + "\n")
                if e.collected:
                    f.write(json.dumps({"t": "x", "id": e.id}) + "\n")
                if e.hunks:
                    f.write(json.dumps({"t": "k", "id": e.id, "hunks": e.hunks}) + "\n")
        os.replace(tmp, self._journal_path)
        if getattr(self, "_jfd", None) is not None:
            os.close(self._jfd)
            self._jfd = os.open(self._journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def _fit(self) -> None:
        """Disk use bounded (``history_max_mb``, issue 39): over the bound, the store keeps what the workspace's
        files are now (the "before" of every change to come), every pending change set, and the newest entries'
        contents while they fit in three quarters of it; older entries are collected: still listed and shown,
        no longer undoable (their states say "not stored", their rows ``collected``). Never a content an entry
        still undoable needs."""
        if self.max_bytes <= 0 or self.store.size <= max(self.max_bytes, self._next_fit):
            return
        cost = self.store.cost
        keep = {s.hash for _k, s in self.index.values() if s.hash and s.stored}
        used = sum(cost(h) for h in keep)
        target, fits = self.max_bytes * 3 // 4, True
        for e in sorted(self.entries.values(), key=lambda e: e.id, reverse=True):
            need = {s.hash for c in e.changes for s in (c.before, c.after) if s and s.hash and s.stored} - keep
            more = sum(cost(h) for h in need)
            fits = fits and not e.collected and used + more <= target
            if fits or e.review == H.PENDING or e.status == "running":
                keep |= need
                used += more
            elif not e.collected:
                e.collected = True
        for e in self.entries.values():
            if e.collected:
                e.changes = [
                    H.Change(c.path, _drop(c.before, keep), _drop(c.after, keep), c.renamed, c.ambiguous)
                    for c in e.changes
                ]
        log.info("history: store over history_max_mb (%d bytes): kept %d bytes", self.max_bytes, used)
        self.store.compact(keep)
        self._rewrite_journal()
        # What the workspace's files are now may alone pass the bound: then not again before it grew by a quarter.
        self._next_fit = self.store.size + self.max_bytes // 4 if self.store.size > target else 0

    @staticmethod
    def _begin_rec(e: H.Entry) -> dict[str, Any]:
        rec = {"t": "b", "id": e.id, "agent": e.agent, "by": e.by, "kind": e.kind, "what": e.what, "started": e.started}
        if e.undoes:
            rec["undoes"] = e.undoes
        return rec

    # ------------------------------------------------------------------ the first snapshot
    def snapshot(self) -> dict[str, Any]:
        """The first snapshot whole (both phases, one after the other): what tests and benchmarks call."""
        self.snapshot_listed()
        return self.snapshot_settle()

    def snapshot_listed(self) -> None:
        """Phase 1 of the first snapshot, the only part an action waits for (issue 39): git's listing. A clean
        tracked file goes into the index by its blob (its "before" is in git's objects), every other file git
        lists (changed, untracked) is read now. Without git (or with a filter git applies) this phase is the
        whole snapshot: every file is read before the first action."""
        self._t0_ns = time.time_ns()
        listing = tree.git_listing(self.root) if self.ignores.git else None
        with self.lock:
            self.settling = True
            if listing is None:
                self._snap = self._read_all()
                return
            clean, rest = listing
            self._clean = clean  # into the index when first looked at (``known``): 100,000 states cost seconds
            for rel in rest:
                got = tree.probe(self.root, rel, None, self.store, self.max_file)
                if got is not None:
                    self.index[rel] = got
            self._snap = {"from_git": len(clean)}

    def _read_all(self) -> dict[str, Any]:
        w = tree.walk(self.root, "", self.ignores)
        for d in w.dirs:
            self.watcher.add(d)
        for top in w.ignored:
            if os.path.isdir(os.path.join(self.root, top)):
                self.watcher.add(top, ignored_top=True)
        for rel in w.files:
            got = tree.probe(self.root, rel, None, self.store, self.max_file)
            if got is not None:
                self.index[rel] = got
        return {"dirs": len(w.dirs), "ignored": len(w.ignored), "from_git": 0, "whole": True}

    def known(self, rel: str) -> tuple[tree.StatKey, H.FileState] | None:
        """The index's entry for ``rel``; a clean file phase 1 listed goes into it now (by its blob, not looked at)."""
        got = self.index.get(rel)
        if got is None and rel in self._clean:
            gmode, blob = tree.clean_blob(self._clean.pop(rel))
            got = self.index[rel] = (UNSEEN, H.FileState(H.REGULAR, gmode & 0o777, 0, tree.GIT_REF + blob, True))
        return got

    def snapshot_settle(self) -> dict[str, Any]:
        """Phase 2, while actions run: every directory watched (before it is listed), every file looked at
        once. A clean file untouched since the snapshot began keeps git's blob unread; one changed since (an
        action that ran meanwhile: ``sed -i`` right after `oh start`) is read and recorded as a change whose
        "before" is git's blob, or phase 1's read, and goes to the actions that began during the snapshot
        (the user's when none did). A file that went away without an event (its directory not watched yet)
        is found at the end."""
        snap, dirs, ignored, seen = dict(self._snap), 0, 0, set()
        if not snap.get("whole"):
            stack = [""]
            while stack:
                with self.lock:
                    if self._closed:
                        return snap
                    d = stack.pop()
                    self.watcher.add(d)  # before the listing: a file made after it has an event
                    one = tree.list_dir(self.root, d, self.ignores)
                    for top in one.ignored:
                        if os.path.isdir(os.path.join(self.root, top)):
                            self.watcher.add(top, ignored_top=True)
                    dirs, ignored, stack = dirs + 1, ignored + len(one.ignored), stack + one.dirs
                seen.update(one.files)
                for i in range(0, len(one.files), SETTLE_BATCH):  # the lock in short turns: actions go on meanwhile
                    with self.lock:
                        if self._closed:
                            return snap
                        self._settle(one.files[i : i + SETTLE_BATCH])
            with self.lock:
                if self._closed:
                    return snap
                self._settle([rel for rel in [*self.index, *self._clean] if rel not in seen], gone_only=True)
                for rel in list(self._clean):  # listed by git, never met by the walk, still there: git's word
                    self.known(rel)
            snap.update(dirs=dirs, ignored=ignored)
        with self.lock:
            self.settling, self._early = False, []
            return {**snap, "files": len(self.index), "store": self.store.size}

    def _settle(self, rels: list[str], gone_only: bool = False) -> None:
        """Phase 2 over these files (under the lock): what changed since phase 1 is recorded (``snapshot_settle``)."""
        probed: dict[str, tuple[tree.StatKey, H.FileState] | None] = {}
        old = self._t0_ns - SETTLE_NS
        for rel in rels:
            raw = self._clean.get(rel) if not gone_only else None
            if raw is not None and self._blob_holds(rel, raw, old):
                continue
            known = self.known(rel)
            if gone_only:
                if known is not None and not os.path.lexists(os.path.join(self.root, rel)):
                    probed[rel] = None
                continue
            if known is not None and known[0] == UNSEEN:  # changed since git's listing: read, compared with its blob
                probed[rel] = tree.probe(self.root, rel, None, self.store, self.max_file)
                continue
            now = tree.probe(self.root, rel, known, self.store, self.max_file)
            if known is None and now is not None and now[0][1] < old:
                self.index[rel] = now  # there before the snapshot began (git did not list it): no change
            elif now is not known:
                probed[rel] = now
        changes = self._apply(probed)
        if changes:
            self._share(list(self._early), changes, [], [])

    def _blob_holds(self, rel: str, raw: str, old: int) -> bool:
        """A clean file of phase 1's listing, not changed since: into the index with its stat, by its blob (True).
        Unchanged: a regular file with git's executable bit, and a ctime older than the snapshot's start (by
        ``SETTLE_NS``) or a content that is the blob (git's sha1)."""
        gmode, blob = tree.clean_blob(raw)
        try:
            st = os.lstat(os.path.join(self.root, rel))
        except OSError:
            return False
        state = H.FileState(H.REGULAR, stat.S_IMODE(st.st_mode), st.st_size, tree.GIT_REF + blob, True)
        if not stat.S_ISREG(st.st_mode) or bool(st.st_mode & 0o100) != bool(gmode & 0o100):
            return False
        if st.st_ctime_ns >= old and not tree.is_blob(self.root, rel, state):
            return False
        del self._clean[rel]
        self.index[rel] = ((st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode), state)
        return True

    # ------------------------------------------------------------------ drains
    def _collect(self, d: Dirty) -> tuple[set[str], set[str], list[str]]:
        """The paths to look at, the ignored ones that changed, and the (non-ignored) directories created."""
        paths, ignored = set(d.paths), set(d.ignored)
        if d.rescan:
            w = tree.walk(self.root, "", self.ignores)
            for rel in w.dirs:
                self.watcher.add(rel)
            return paths | set(self.index) | set(self._clean) | set(w.files), ignored, []
        for gone in d.gone_dirs:
            self.watcher.forget(gone)
            paths |= {p for p in [*self.index, *self._clean] if p.startswith(gone + "/")}
        new_dirs = sorted(d.new_dirs)
        # Never a set of the whole index here: per action, this must cost what changed, not the tree's size.
        newly_ignored = self.ignores.check_new(
            new_dirs + sorted(p for p in paths if p not in self.index and p not in self._clean)
        )
        created: list[str] = []
        for nd in new_dirs:
            if nd in newly_ignored:
                ignored.add(nd)
                self.watcher.add(nd, ignored_top=True)
                continue
            # Watch first, then list (twice): a file made in a new directory between a listing and its watch has
            # no event and was missed for good once drains run while a command still writes (the history thread):
            # `mkdir -p gen && echo x > gen/o` lost gen/o. After the second listing every file is in it or has an
            # event, since every directory found in the first one is watched before the second begins.
            self.watcher.add(nd)
            w = tree.walk(self.root, nd, self.ignores)
            for rel in w.dirs:
                self.watcher.add(rel)
            again = tree.walk(self.root, nd, self.ignores)
            for rel in again.dirs:
                self.watcher.add(rel)  # one made between the two listings: its files come by event or next drain
            created += sorted(set(w.dirs) | set(again.dirs))
            paths |= set(w.files) | set(again.files)
            ignored |= set(w.ignored) | set(again.ignored)
        # A directory moved away and back, or moved in: files the index knows under it are looked at again.
        for nd in new_dirs:
            paths |= {p for p in [*self.index, *self._clean] if p.startswith(nd + "/")}
        return paths - newly_ignored, ignored | (paths & newly_ignored), created

    def _drain(self) -> None:
        # The sandboxes are looked at before inotify is read and after the files are: a change found now was made
        # after the previous drain read inotify, so after the previous look (taken before it) and before this one.
        before, mark = self._mark, (self.activity.sample() if self.activity is not None else {})
        self._mark = mark
        paths, ignored, dirs = self._collect(self.watcher.drain())
        if not paths and not ignored and not dirs:
            return
        probed = {}
        for rel in paths:
            known = self.known(rel)
            now = tree.probe(self.root, rel, known, self.store, self.max_file)
            if now is not known:
                probed[rel] = now
        changes = self._apply(probed)
        if changes or ignored or dirs:
            ran = Activity.ran(before, self.activity.sample()) if self.activity is not None else None
            self._attribute(changes, sorted(ignored), sorted(set(dirs)), ran)

    def _apply(self, probed: dict[str, tuple[tree.StatKey, H.FileState] | None]) -> list[H.Change]:
        """These files' new states into the index; the changes they are (their "before" from the index)."""
        pairs: dict[str, tuple[H.FileState | None, H.FileState | None]] = {}
        # A file known by its git blob (first snapshot) changed: its before comes out of git's object
        # database now, once, into our store (copy on first change).
        refs = {rel: self.index[rel] for rel in probed if rel in self.index and tree.is_git_ref(self.index[rel][1])}
        if refs:
            real = tree.materialize(self.root, {rel: st for rel, (_k, st) in refs.items()}, self.store)
            for rel, (key, _st) in refs.items():
                self.index[rel] = (key, real[rel])
        for rel, now in probed.items():
            known = self.index.get(rel)
            if now is None:
                self.index.pop(rel, None)
            else:
                self.index[rel] = now
            pairs[rel] = (known[1] if known else None, now[1] if now else None)
        return H.classify(pairs)

    def _writers(self, ran: set[str] | None) -> list[H.Entry]:
        """The entries that may have made what a drain found. ``ran``: the sandboxes that ran meanwhile (None:
        not watched). A watched action whose sandbox did not run made none of it; a sandbox that ran with no
        action of its own open is processes its agent left running: an entry of that agent, never the user's."""
        owners = list(self.active.values())
        if ran is None:
            return owners
        watched = {e.shell for e in owners if e.shell is not None}
        writers = [e for e in owners if e.shell is None or e.shell in ran]
        for key in sorted(ran - watched):
            name = self.shell_names.get(key, "agent")
            last = self.entries.get(self.next_id - 1)
            if last is not None and last.kind == "leftover" and last.shell == key and last.status == "done":
                writers.append(last)  # the same stretch of that sandbox's leftovers: one entry
                continue
            e = self._open(name, "leftover", f"processes left running in {name}'s sandbox")
            e.shell = key
            writers.append(e)
        return writers

    def _attribute(self, changes: list[H.Change], ignored: list[str], dirs: list[str], ran: set[str] | None) -> None:
        owners = self._writers(ran)
        leftovers = [e for e in owners if e.kind == "leftover"]
        try:
            self._share(owners, changes, ignored, dirs)
        finally:
            for e in leftovers:
                self._close(e, "done")

    def _share(self, owners: list[H.Entry], changes: list[H.Change], ignored: list[str], dirs: list[str]) -> None:
        if not owners:  # nobody was running: the user's (or another program's) own changes
            if not changes and not ignored:
                return  # an empty directory the user made: not an entry of its own
            last = self.entries.get(self.next_id - 1)
            if last is not None and last.kind == "user" and last.status == "done":
                e = last  # the same stretch of the user's changes (drains come every TICK now): one entry
            else:
                e = self._open("user", "user", "changes made outside oh's actions", by=H.USER)
            self._add(e, changes, ignored, dirs)
            self._close(e, "done")
            return
        for e in owners:
            others = tuple(o.id for o in owners if o is not e)
            mine = [H.Change(c.path, c.before, c.after, c.renamed, others) for c in changes] if others else changes
            # A directory made while several ran is nobody's to remove: only a sole owner's undo removes it.
            self._add(e, mine, ignored, [] if others else dirs)

    def _add(self, e: H.Entry, changes: list[H.Change], ignored: list[str], dirs: Iterable[str] = ()) -> None:
        H.fold(e.changes, changes)
        e.ignored.extend(ignored)
        e.dirs.extend(dirs)
        rec: dict[str, Any] = {"t": "c", "id": e.id, "changes": [c.row() for c in changes], "ignored": ignored}
        if dirs:
            rec["dirs"] = list(dirs)
        self._write(rec)

    def _open(self, agent: str, kind: str, what: str, undoes: Iterable[int] = (), by: str = H.AGENT) -> H.Entry:
        e = H.Entry(self.next_id, agent, kind, what, _now(), undoes=list(undoes), by=by)
        self.next_id += 1
        self.entries[e.id] = e
        self._write(self._begin_rec(e))
        return e

    def _close(self, e: H.Entry, status: str) -> None:
        e.ended, e.status = _now(), status
        self._write({"t": "e", "id": e.id, "ended": e.ended, "status": status}, sync=True)

    # ------------------------------------------------------------------ what the recorder calls
    def begin(self, agent: str, kind: str, what: str, shell: str | None = None) -> int:
        """An agent's action starts. ``shell``: the key of the sandbox it runs in, when its changes can only be
        made there (a command in the agent's sandbox): then only what that sandbox did while it ran is its."""
        with self.lock:
            self._drain()  # what happened before this action is not its
            e = self._open(agent, kind, what[:400])
            if self.settling:
                self._early.append(e)
            e.shell = shell if self.activity is not None else None
            if shell is not None:
                self.shell_names[shell] = agent
            self.active[e.id] = e
            return e.id

    def watch_in_background(self) -> None:
        """Drain as soon as inotify has news (a thread), so that who ran is looked at over short stretches."""
        inotify = self.watcher.inotify
        if self._wake is None or inotify is None or self.watcher.degraded or self._ticker is not None:
            return  # degraded: every drain rescans the workspace; drains stay at the actions' starts and ends
        self._ticker = threading.Thread(
            target=self._tick_loop, args=(inotify.fileno(),), daemon=True, name="oh-history"
        )
        self._ticker.start()

    def _tick_loop(self, fd: int) -> None:
        """Drain when inotify has news, and at least every ``TICK`` s: the stretch a change's author is looked
        for in starts at the drain before, so it is never longer than that (a command that started a minute ago
        and sleeps since did not make the change the user saves now)."""
        assert self._wake is not None
        while True:
            ready, _w, _x = select.select([fd, self._wake[0]], [], [], TICK)
            if self._wake[0] in ready or self.watcher.degraded:
                return  # degraded (the watch limit, met by the first snapshot): drains at actions only, each a rescan
            with self.lock:
                try:
                    self._drain()
                except (OSError, RuntimeError, ValueError) as exc:  # a full disk, a torn read: the next one looks again
                    log.warning("history: a drain failed: %s", exc)

    def end(self, entry_id: int, status: str = "done") -> H.Entry | None:
        """Close an entry; returns it when it opened a change set for the user to review (else None)."""
        with self.lock:
            self._drain()
            e = self.active.pop(entry_id, None)
            if e is None:
                return None
            self._close(e, status)
            self._fit()
            if self.review and H.opens_changeset(e):
                self.mark(e, H.PENDING)
                return e
            return None

    def mark(self, e: H.Entry, review: str) -> None:
        """A change set's state: pending, then kept or reverted (journaled: it survives a restart)."""
        with self.lock:
            e.review = review
            self._write({"t": "r", "id": e.id, "review": review}, sync=True)

    def mark_hunks(self, e: H.Entry, numbers: Iterable[int], decision: str) -> None:
        """Some hunks of a change set kept or reverted (journaled, like ``mark``)."""
        with self.lock:
            got = {n: decision for n in numbers}
            e.hunks.update(got)
            self._write({"t": "k", "id": e.id, "hunks": got}, sync=True)

    def pending(self) -> list[H.Entry]:
        """The change sets awaiting the user's keep or revert, oldest first."""
        with self.lock:
            return [e for e in self.entries.values() if e.review == H.PENDING]

    def refresh(self) -> None:
        """Pick up what changed since the last drain (before the timeline is shown or undone)."""
        with self.lock:
            self._drain()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        if self._closed:
            return
        if self._wake is not None:  # the ticker first, outside the lock it takes
            os.write(self._wake[1], b"x")
            if self._ticker is not None:
                self._ticker.join(10)
            for fd in self._wake:
                os.close(fd)
            self._wake = None
        with self.lock:
            self._closed = True  # the first snapshot's phase 2, if it still runs, stops at its next directory
            for eid in list(self.active):
                self.end(eid, "interrupted")
            self.watcher.close()
            self.store.close()
            os.close(self._jfd)
