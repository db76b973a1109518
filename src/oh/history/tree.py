"""The workspace as the recorder sees it: which paths are ignored (git's rules when the workspace is in a
git repository, a short list of well-known generated trees otherwise), a walk of the rest, and one
file's state (``probe``: stat, then read, hash and store when the stat changed)."""

from __future__ import annotations

import os
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .. import programs
from ..protocol.history import REGULAR, SYMLINK, FileState
from .store import ObjectStore, digest

# Never recorded at all: a git directory is the user's history, not their files.
SKIP = frozenset({".git"})
# Without git: trees that are generated, usually huge and never hand-edited.
DEFAULT_IGNORED = frozenset(
    {"node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "target"}
)
_GIT_TIMEOUT = 30.0


def _git(root: str, *args: str, data: bytes | None = None) -> bytes | None:
    git = programs.find("git")
    if git is None:
        return None
    try:
        done = subprocess.run(
            [git, "-C", root, *args],
            input=data,
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            env=programs.env(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0"),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode in (0, 1) else None


class Ignores:
    """Which relative paths are ignored: what ``git ls-files --ignored --directory`` lists at start
    (one call, trees reported by their top), later new paths asked with ``git check-ignore``."""

    def __init__(self, root: str, store_ignored: bool) -> None:
        self.root = root
        self.off = store_ignored
        self.git = not store_ignored and _git(root, "rev-parse", "--is-inside-work-tree") == b"true\n"
        self._tops: set[str] | None = None if self.git else set()
        # Listed in a worker while the first snapshot's phase 1 (which does not need it) runs: off its clock.
        self._pool = ThreadPoolExecutor(1) if self.git else None
        self._tops_f = self._pool.submit(self._list_tops) if self._pool is not None else None

    def _list_tops(self) -> set[str]:
        out = _git(self.root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory") or b""
        return {os.fsdecode(p).rstrip("/") for p in out.split(b"\0") if p}

    @property
    def tops(self) -> set[str]:
        if self._tops is None:
            assert self._tops_f is not None and self._pool is not None
            self._tops = self._tops_f.result()  # git's subprocess timeout bounds it
            self._pool.shutdown()
        return self._tops

    def ignored(self, rel: str, name: str) -> bool:
        if self.off:
            return False
        if self.git:
            return rel in self.tops
        return name in DEFAULT_IGNORED

    def check_new(self, rels: list[str]) -> set[str]:
        """Which of these new paths git ignores (one ``git check-ignore`` for all of them)."""
        if self.off or not rels:
            return set()
        if not self.git:
            return {r for r in rels if r.rsplit("/", 1)[-1] in DEFAULT_IGNORED}
        out = _git(self.root, "check-ignore", "-z", "--stdin", data=b"\0".join(os.fsencode(r) for r in rels) + b"\0")
        found = {os.fsdecode(p) for p in (out or b"").split(b"\0") if p}
        self.tops.update(found)
        return found


@dataclass
class Walk:
    files: list[str]
    dirs: list[str]
    ignored: list[str]  # tops of ignored trees (and ignored files)


def walk(root: str, rel: str, ignores: Ignores) -> Walk:
    """Every non-ignored regular file and symlink under ``rel`` (not following symlinks), its directories
    and the ignored tops met on the way."""
    out = Walk([], [], [])
    stack = [rel]
    while stack:
        d = stack.pop()
        out.dirs.append(d)
        one = list_dir(root, d, ignores)
        out.files += one.files
        out.ignored += one.ignored
        stack += one.dirs
    return out


def list_dir(root: str, d: str, ignores: Ignores) -> Walk:
    """One directory's files, subdirectories and ignored entries (relative paths; ``.git`` skipped)."""
    out = Walk([], [], [])
    try:
        it = os.scandir(os.path.join(root, d) if d else root)
    except OSError:
        return out
    with it:
        for e in it:
            if e.name in SKIP:
                continue
            r = f"{d}/{e.name}" if d else e.name
            if ignores.ignored(r, e.name):
                out.ignored.append(r)
            elif e.is_dir(follow_symlinks=False):
                out.dirs.append(r)
            elif e.is_file(follow_symlinks=False) or e.is_symlink():
                out.files.append(r)
    return out


StatKey = tuple[int, int, int, int, int]


def probe(
    root: str,
    rel: str,
    known: tuple[StatKey, FileState] | None,
    store: ObjectStore,
    max_file: int,
    blob: tuple[int, str] | None = None,
) -> tuple[StatKey, FileState] | None:
    """The file's state now (None: gone, or not a file we record). Unchanged stat: the known state,
    without reading. Else its content is hashed and, up to ``max_file`` bytes, stored. ``blob``: git's
    (mode, blob id) of a clean tracked file: its content is git's, not read (``is_git_ref``)."""
    full = os.path.join(root, rel)
    try:
        st = os.lstat(full)
    except OSError:
        return None
    key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)
    if known is not None and known[0] == key:
        return known
    mode = stat.S_IMODE(st.st_mode)
    if blob is not None and stat.S_ISREG(st.st_mode) and blob[0] == (0o100755 if mode & 0o100 else 0o100644):
        return key, FileState(REGULAR, mode, st.st_size, GIT_REF + blob[1], True)
    try:
        if stat.S_ISLNK(st.st_mode):
            target = os.fsencode(os.readlink(full))
            return key, FileState(SYMLINK, mode, len(target), store.put(target), True)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > max_file:
            return key, FileState(REGULAR, mode, st.st_size, _hash_file(full), False)
        with open(full, "rb") as f:
            data = f.read()
    except OSError:
        return None  # gone or unreadable between the stat and the read: the next drain sees it again
    return key, FileState(REGULAR, mode, len(data), store.put(data), True)


GIT_REF = "git:"


def is_git_ref(s: FileState) -> bool:
    return bool(s.hash and s.hash.startswith(GIT_REF))


def git_clean(root: str) -> dict[str, tuple[int, str]]:
    """Tracked files whose work tree content is their index blob: rel path -> (git mode, blob id) (see
    ``git_listing``; empty when git cannot tell)."""
    got = git_listing(root, untracked=False)
    return {rel: clean_blob(raw) for rel, raw in got[0].items()} if got is not None else {}


def git_listing(root: str, untracked: bool = True) -> tuple[dict[str, str], list[str]] | None:
    """What git knows of the work tree: the tracked files whose work tree content is their index blob (``git
    ls-files -s`` minus ``git diff-files``): rel path -> (git mode, blob id), and every other path git lists
    (tracked but changed, symlinks, and with ``untracked`` the untracked files it does not ignore). A clean
    file is read by nobody at the first snapshot: its content is git's. None (read everything) when a filter
    could make the work tree differ from the blob: any .gitattributes (LFS, eol, smudge), core.autocrlf,
    info/attributes, or when git fails."""
    if (_git(root, "config", "--get", "core.autocrlf") or b"").strip() in (b"true", b"input"):
        return None
    attrs = _git(root, "rev-parse", "--git-path", "info/attributes")
    if attrs is None or os.path.exists(os.path.join(root, os.fsdecode(attrs.strip()))):
        return None
    # Three listings at once (each is a process that reads the index or walks the tree: on the first action's clock).
    with ThreadPoolExecutor(3) as pool:
        listed_f = pool.submit(_git, root, "ls-files", "-s", "-z")
        dirty_f = pool.submit(_git, root, "diff-files", "--name-only", "--relative", "-z")
        others_f = pool.submit(_git, root, "ls-files", "-z", "--others", "--exclude-standard") if untracked else None
        listed, dirty = listed_f.result(), dirty_f.result()
        others = others_f.result() if others_f is not None else b""
    if listed is None or dirty is None or others is None:
        return None
    changed = set(os.fsdecode(dirty).split("\0"))
    out: dict[str, str] = {}
    rest = [p for p in os.fsdecode(others).split("\0") if p and not p.endswith("/")]
    # "<mode> <40-hex id> <stage>\t<path>", by position, decoded once: 100,000 records are on the first action's
    # clock (the mode and id stay one string until a file is looked at: ``clean_blob``).
    for rec in os.fsdecode(listed).split("\0"):
        if len(rec) < 51 or rec[6] != " " or rec[49] != "\t":
            continue
        path = rec[50:]
        if path == ".gitattributes" or path.endswith("/.gitattributes"):
            return None
        if rec[48] == "0" and rec.startswith(("100644 ", "100755 ")) and path not in changed:
            out[path] = rec[:47]
        else:
            rest.append(path)
    return out, rest


def clean_blob(raw: str) -> tuple[int, str]:
    """(git mode, blob id) of a clean file's ``git_listing`` record."""
    return (0o100755 if raw.startswith("100755") else 0o100644), raw[7:47]


def materialize(root: str, refs: dict[str, FileState], store: ObjectStore) -> dict[str, FileState]:
    """The content of these git-blob states, out of git's object database into the store (one
    ``git cat-file --batch`` for all); a blob git no longer has becomes "not stored"."""
    ids = sorted({s.hash[len(GIT_REF) :] for s in refs.values() if s.hash})
    found: dict[str, str] = {}
    sizes: dict[str, int] = {}  # a file the first snapshot knew by its blob only has its size from git
    out = _git(root, "cat-file", "--batch", data=("\n".join(ids) + "\n").encode()) if ids else b""
    pos = 0
    while out and pos < len(out):
        nl = out.index(b"\n", pos)
        head = out[pos:nl].split(b" ")
        pos = nl + 1
        if len(head) != 3:  # "<id> missing"
            continue
        size = int(head[2])
        found[head[0].decode()] = store.put(out[pos : pos + size])
        sizes[head[0].decode()] = size
        pos += size + 1
    return {
        rel: FileState(
            s.kind,
            s.mode,
            sizes.get(s.hash[len(GIT_REF) :], s.size) if s.hash else s.size,
            found.get(s.hash[len(GIT_REF) :]) if s.hash else None,
            s.hash is not None and s.hash[len(GIT_REF) :] in found,
        )
        for rel, s in refs.items()
    }


def is_blob(root: str, rel: str, s: FileState) -> bool:
    """Whether the file's content is the git blob ``s`` names (git's object id: sha1 of a header and the data)."""
    import hashlib

    if not is_git_ref(s) or s.hash is None:
        return False
    try:
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
    except OSError:
        return False
    h = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    h.update(data)
    return h.hexdigest() == s.hash[len(GIT_REF) :]


def _hash_file(full: str) -> str | None:
    import hashlib

    h = hashlib.sha256()
    try:
        with open(full, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


__all__ = ["Ignores", "Walk", "walk", "probe", "digest", "SKIP"]
