"""Undo and diff over a ``Timeline``: the verdicts come from ``protocol.history``; this module reads the
files as they are now, merges three ways with ``git merge-file`` and writes the result.

Why ``git merge-file``: it is git's own three-way merge of text (diff3 with git's conflict rules), the one
the user already trusts for their merges; a hand-written merge would be a second opinion on every
conflict. It runs on temporary copies in oh's private state directory, never in the user's repository.
Without git, a file changed since is a conflict (nothing is written).
"""

from __future__ import annotations

import base64
import difflib
import errno
import hashlib
import os
import subprocess
import tempfile
from typing import Any

from .. import beneath, programs
from ..protocol import history as H
from . import tree
from .timeline import Timeline

MERGE_TIMEOUT = 30.0


def _content(tl: Timeline, s: H.FileState | None) -> bytes:
    return b"" if s is None or s.hash is None else tl.store.get(s.hash)


def merge3(tl: Timeline, ours: bytes, base: bytes, theirs: bytes) -> bytes | None:
    """``git merge-file`` of ours (the file now) and theirs (before the action) from base (after it):
    the merged bytes, or None on a conflict (or binary content, or no git)."""
    if b"\0" in ours or b"\0" in base or b"\0" in theirs:
        return None
    with tempfile.TemporaryDirectory(dir=tl.state) as tmp:
        names = []
        for name, data in (("current", ours), ("after", base), ("before", theirs)):
            p = os.path.join(tmp, name)
            with open(os.open(p, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(data)
            names.append(p)
        git = programs.find("git")
        if git is None:
            return None
        try:
            done = subprocess.run(
                [git, "merge-file", "-p", "--quiet", *names],
                capture_output=True,
                timeout=MERGE_TIMEOUT,
                env=programs.env(),
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
    return done.stdout if done.returncode == 0 else None


def diff(tl: Timeline, entry_id: int) -> dict[str, Any]:
    with tl.lock:
        tl._drain()
        e = tl.entries.get(entry_id)
        if e is None:
            return {}
        lines: list[str] = []
        for c in e.changes:
            lines += _diff_one(tl, c)
        return {**e.row(), "diff": "\n".join(lines)}


def _diff_one(tl: Timeline, c: H.Change) -> list[str]:
    head = f"--- a/{c.path}" if c.before else "--- /dev/null"
    tail = f"+++ b/{c.path}" if c.after else "+++ /dev/null"
    note = [f"# {c.path}: {c.kind}" + (f" ({c.renamed})" if c.renamed else "")]
    if c.before and c.after and c.before.mode != c.after.mode:
        note.append(f"# mode {c.before.mode:o} -> {c.after.mode:o}")
    if c.ambiguous:
        note.append(f"# ambiguous: entries {', '.join(map(str, c.ambiguous))} ran at the same time")
    for s in (c.before, c.after):
        if s is not None and not s.stored:
            return [*note, "# content not stored (above the size limit)"]
    old, new = _content(tl, c.before), _content(tl, c.after)
    if old == new:
        return note
    if b"\0" in old or b"\0" in new:
        return [*note, f"Binary files {head[4:]} and {tail[4:]} differ"]
    body = difflib.unified_diff(
        old.decode("utf-8", "replace").splitlines(),
        new.decode("utf-8", "replace").splitlines(),
        head[4:],
        tail[4:],
        lineterm="",
    )
    return [*note, *body]


def _plan(
    tl: Timeline, netmap, merge: bool, buffers: dict[str, bytes] | None = None
) -> tuple[list[tuple[str, H.FileState | None, bytes | None]], list[dict[str, str]]]:
    """Per file: what to write (state, or merged bytes) or why not. ``buffers``: files whose current text is
    an editor's unsaved buffer, not the disk (VS Code's undo): they are the "current" of the verdict."""
    steps: list[tuple[str, H.FileState | None, bytes | None]] = []  # (path, state to write, merged bytes)
    conflicts = []
    for path, (before, after) in sorted(netmap.items()):
        known = tl.index.get(path)
        cur = known[1] if known else None
        ours = None
        if buffers is not None and path in buffers:
            ours = buffers[path]
            mode = cur.mode if cur is not None else (after.mode if after is not None else 0o644)
            cur = H.FileState(H.REGULAR, mode, len(ours), hashlib.sha256(ours).hexdigest())
        v = H.verdict(before, after, cur)
        if v.action == H.RESTORE:
            steps.append((path, before, None))
        elif v.action == H.MERGE and not merge:
            conflicts.append({"path": path, "reason": "changed since by someone else: only the user can merge it"})
        elif v.action == H.MERGE:
            assert before is not None and cur is not None
            current = ours if ours is not None else _content(tl, cur)
            merged = merge3(tl, current, _content(tl, after), _content(tl, before))
            if merged is None:
                conflicts.append({"path": path, "reason": "changed since, and the changes overlap (merge conflict)"})
            else:
                steps.append((path, H.FileState(H.REGULAR, cur.mode, len(merged), None), merged))
        elif v.action == H.CONFLICT:
            conflicts.append({"path": path, "reason": v.reason})
    return steps, conflicts


Prepared = tuple[list[H.Entry], list[tuple[str, H.FileState | None, bytes | None]], list[str], list[str]]


def _prepare(
    tl: Timeline,
    target: int,
    to: bool,
    only_agent: str | None,
    merge: bool,
    buffers: dict[str, bytes] | None = None,
    include_ambiguous: bool = False,
) -> Prepared | dict[str, Any]:
    """The entries an undo reverts, its steps, the directories they made and the ambiguous paths it keeps, or
    the answer that ends it (no entry, nothing to undo, a conflict). Called with ``tl.lock`` held.

    An ambiguous change (another entry outside this undo may have made it) is never reverted silently: it is
    kept and named (``kept_ambiguous``) unless the user includes it (``include_ambiguous``)."""
    tl._drain()  # the files as they are now: later edits are in the index before the verdicts
    if target not in tl.entries:
        return {"ok": False, "error": "NO_ENTRY", "message": f"No entry {target}: `oh history` lists them."}
    ordered = [tl.entries[i] for i in sorted(tl.entries)]
    chosen = H.select_for_undo(ordered, target, to, only_agent)
    _mine, doubtful = H.split_ambiguous(chosen)
    kept = [] if include_ambiguous else sorted({c.path for c in doubtful})
    netmap = H.net(c for e in chosen for c in e.changes if c.path not in kept)
    made = sorted({d for x in chosen for d in x.dirs if d}, key=lambda d: d.count("/"), reverse=True)
    if not netmap and not made:
        said = f" ({len(kept)} ambiguous kept: `--include-ambiguous` reverts them)" if kept else ""
        return {
            "ok": True,
            "entry": None,
            "files": [],
            "kept_ambiguous": kept,
            "message": f"Nothing to undo: no file changes{said}.",
        }
    # A file untouched since this backend's first snapshot is known by its git blob: read it first, so
    # the verdict compares contents, not a blob id with a sha256 (entries from before a restart).
    for p in netmap:
        tl.known(p)  # a clean file the first snapshot has not looked at yet: by its blob
    refs = {p: tl.index[p] for p in netmap if p in tl.index and tree.is_git_ref(tl.index[p][1])}
    if refs:
        real = tree.materialize(tl.root, {p: st for p, (_k, st) in refs.items()}, tl.store)
        tl.index.update({p: (key, real[p]) for p, (key, _st) in refs.items()})
    steps, conflicts = _plan(tl, netmap, merge, buffers)
    if conflicts:
        return {"ok": False, "error": "CONFLICT", "conflicts": conflicts, "message": _conflict_text(conflicts)}
    return chosen, steps, made, kept


def undo(
    tl: Timeline,
    target: int,
    *,
    to: bool = False,
    who: str = "user",
    only_agent: str | None = None,
    merge: bool = True,
    by: str = H.USER,
    include_ambiguous: bool = False,
) -> dict[str, Any]:
    """Revert entry ``target`` (and with ``to`` every later one): all files or none. The undo is itself
    an entry, so it can be undone. ``merge`` False: a file changed since is a conflict (an agent's undo).
    ``by``: the credential that asked (the undo's entry is that credential's)."""
    with tl.lock:
        prepared = _prepare(tl, target, to, only_agent, merge, include_ambiguous=include_ambiguous)
        if isinstance(prepared, dict):
            return prepared
        chosen, steps, made, kept = prepared
        e = tl._open(who, "undo", f"undo {'--to ' if to else ''}{target}", undoes=[x.id for x in chosen], by=by)
        tl.active[e.id] = e
        escaped = None
        try:
            parents: set[str] = set()
            for path, state, merged in sorted(steps, key=lambda s: s[1] is not None):  # deletions first
                _apply(tl, path, state, merged, parents)
            _remove_empty(tl, made)
        except beneath.Escape as exc:  # a directory swapped for a symlink out of the workspace: stop there
            escaped = exc
        finally:
            tl._drain()
            tl.active.pop(e.id, None)
            tl._close(e, "done")
        if escaped is not None:
            return {
                "ok": False,
                "error": "PATH_DENIED",
                "entry": e.id,
                "message": f"{escaped}: oh does not follow it, so the undo stopped there (entry {e.id} holds what it "
                "had restored; `oh undo` of it takes that back).",
            }
        for x in chosen:  # a change set reverted by an undo is decided: it leaves `oh review`
            if x.review == H.PENDING:
                tl.mark(x, H.REVERTED)
        files = [s[0] for s in steps]
        return {"ok": True, "entry": e.id, "files": files, "undoes": e.undoes, "kept_ambiguous": kept}


# The directories an editor's undo (still being applied) will leave empty, by (timeline, undo entry).
_EDITOR_DIRS: dict[tuple[int, int], list[str]] = {}


def plan_for_editor(tl: Timeline, target: int, *, to: bool, buffers: dict[str, bytes]) -> dict[str, Any]:
    """VS Code's undo (§3.15.2): the same verdicts as ``undo`` (the editor's unsaved buffers count as the
    files' current text), but nothing is written here: the answer lists each file's new content (base64)
    or its deletion, for the editor to apply as one WorkspaceEdit (on its undo stack). The undo's entry
    stays open, so what the editor writes is attributed to it, until ``finish_editor`` (or a timeout)."""
    with tl.lock:
        prepared = _prepare(tl, target, to, None, True, buffers)
        if isinstance(prepared, dict):
            return prepared
        chosen, steps, made, kept = prepared
        e = tl._open(
            "user", "undo", f"undo {'--to ' if to else ''}{target} (in the editor)", [x.id for x in chosen], by=H.USER
        )
        tl.active[e.id] = e
        edits = []
        for path, state, merged in sorted(steps, key=lambda s: s[1] is not None):  # deletions first
            if state is None:
                edits.append({"path": path, "delete": True})
                continue
            if state.kind == H.SYMLINK:  # a link is no text for an editor: put back here, at once
                try:
                    _apply(tl, path, state, merged, set())
                except beneath.Escape as exc:  # its directory swapped for a symlink out of the workspace
                    tl._drain()
                    tl.active.pop(e.id, None)
                    tl._close(e, "done")
                    message = f"{exc}: oh does not follow it."
                    return {"ok": False, "error": "PATH_DENIED", "entry": e.id, "message": message}
                continue
            data = merged if merged is not None else _content(tl, state)
            edits.append({"path": path, "content": base64.b64encode(data).decode("ascii"), "mode": state.mode})
        _EDITOR_DIRS[(id(tl), e.id)] = made  # removed, once empty, when the editor has applied the edits
        files = [s[0] for s in steps]
        return {"ok": True, "entry": e.id, "files": files, "undoes": e.undoes, "edits": edits, "kept_ambiguous": kept}


def finish_editor(tl: Timeline, entry_id: int) -> bool:
    """The editor applied (or gave up on) an undo ``plan_for_editor`` opened: its entry ends with what was
    written meanwhile. False: no such open entry (finished already, or by the timeout)."""
    with tl.lock:
        e = tl.active.get(entry_id)
        if e is None or e.kind != "undo":
            return False
        _remove_empty(tl, _EDITOR_DIRS.pop((id(tl), entry_id), []))
        tl._drain()
        tl.active.pop(entry_id, None)
        tl._close(e, "done")
        return True


def decide(tl: Timeline, entry_id: int, keep: bool) -> dict[str, Any] | None:
    """The user's decision on a command's change set (review after the fact, §3.15.1): keep marks it
    kept; revert is ``undo`` of its entry (three-way, all files or none: a file the user changed since
    is merged, an overlap changes nothing and the set stays pending). None: no such pending change set."""
    with tl.lock:
        e = tl.entries.get(entry_id)
        if e is None or e.review != H.PENDING:
            return None
        cid = H.changeset_id(entry_id)
        if keep:
            tl.mark(e, H.KEPT)
            return {"id": cid, "outcome": "accepted", "message": f"kept: {len(e.changes)} file change(s) stay"}
        done = undo(tl, entry_id, who="user")
        if not done["ok"]:
            return {"id": cid, "outcome": "conflict", "message": done["message"], "conflicts": done.get("conflicts")}
        if e.review == H.PENDING:  # nothing left to revert (already back): decided all the same
            tl.mark(e, H.REVERTED)
        files = len(done["files"])
        return {
            "id": cid,
            "outcome": "rejected",
            "message": (
                f"reverted: {files} file(s) restored (history entry {done['entry']}; `oh undo {done['entry']}` redoes)"
            ),
            "entry": done["entry"],
        }


def _remove_empty(tl: Timeline, made: list[str]) -> None:
    """The directories the undone entries created, deepest first, removed when empty: a directory that
    holds anything (the user's file, another action's) stays. Removed beneath the workspace (oh.beneath):
    a parent swapped for a symlink out of it is not followed."""
    for d in made:
        try:
            beneath.rmdir_at(tl.root, d)
        except OSError:
            pass  # not empty, already gone, no longer a directory, or behind a symlink out of the workspace


def _conflict_text(conflicts: list[dict[str, str]]) -> str:
    first = conflicts[0]
    more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
    return f"Nothing was changed: {first['path']}: {first['reason']}{more}. Resolve it by hand, then undo again."


def _apply(tl: Timeline, path: str, state: H.FileState | None, merged: bytes | None, parents: set[str]) -> None:
    """Put one file in ``state``, relative to a descriptor of its directory opened beneath the workspace
    (oh.beneath): a directory the agent swapped for a symlink out of it (``conf -> $HOME``) raises
    ``beneath.Escape`` and nothing outside is written. ``parents``: the directories known to exist (made
    once per undo, not once per file)."""
    if state is None:
        try:
            beneath.unlink_at(tl.root, path)
        except FileNotFoundError:
            pass
        return
    parent = os.path.dirname(path)
    pfd, name = beneath.open_parent(tl.root, path, create=parent not in parents)
    parents.add(parent)
    try:
        _put(pfd, name, state, merged if merged is not None else _content(tl, state))
    finally:
        os.close(pfd)


def _put(pfd: int, name: str, state: H.FileState, data: bytes) -> None:
    """Write ``name`` in the directory ``pfd`` as ``state`` with ``data``."""
    if state.kind == H.SYMLINK:
        try:
            os.unlink(name, dir_fd=pfd)
        except FileNotFoundError:
            pass
        os.symlink(os.fsdecode(data), name, dir_fd=pfd)
        return
    # In place, written then cut to length (no temporary + rename, no O_TRUNC): on ext4 a rename over an
    # existing file and a truncation to zero both force its data to disk (auto_da_alloc), 1-3 ms per
    # file: 3 s for a 1,000-file undo instead of a tenth of that.
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(name, flags, state.mode, dir_fd=pfd)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        os.unlink(name, dir_fd=pfd)  # a symlink is there now: replaced, never written through (O_NOFOLLOW said so)
        fd = os.open(name, flags, state.mode, dir_fd=pfd)
    with open(fd, "wb") as f:
        f.write(data)
        f.truncate(len(data))
        os.fchmod(f.fileno(), state.mode)


__all__ = ["undo", "decide", "plan_for_editor", "finish_editor", "diff", "merge3", "tree"]
