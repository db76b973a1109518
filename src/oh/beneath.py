"""Open a path beneath a root directory without following a symlink out of it (issue 36, item 4).

oh checks a path (``realpath`` inside an allowed root) and then opens it; whatever can write the
workspace (the sandboxed agent) can swap a directory for a symlink in between. Every open here starts
at a descriptor of the root and resolves the rest relative to it, so the check and the open are one
operation: a symlink that leads outside the root (absolute, ``..`` past the root, ``/proc/self/root``)
is refused with :class:`Escape`, whenever it was swapped in. Symlinks that stay beneath the root are
still followed, as the allowed-roots promise of the file actions always said.

Two ways, the same answers (tests/test_beneath.py runs every escape shape through both):

* ``openat2(2)`` with ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`` (Linux 5.6+), called through
  ``ctypes``: the kernel resolves and refuses (EXDEV) in one system call. Probed once; ENOSYS (an old
  kernel, a seccomp filter) switches to the walk for good.
* elsewhere, a walk component by component: ``openat(..., O_NOFOLLOW | O_DIRECTORY)`` from the root's
  descriptor, a symlink met on the way read with ``readlinkat`` and spliced in (absolute target or
  ``..`` above the root: Escape; more than 40: ELOOP, like the kernel).

``rel`` is always relative to ``root`` (``""`` or ``"."`` is the root itself). Descriptors returned
are the caller's to close. Not thread-hostile: no chdir, no global state but the probe's answer.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat as _stat

from .errors import OhBaseError

__all__ = [
    "Escape",
    "open_at",
    "open_dir",
    "open_parent",
    "stat_at",
    "unlink_at",
    "rmdir_at",
    "listdir_at",
    "uses_openat2",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_PATH = getattr(os, "O_PATH", 0)
_DIR = os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC
_MAXSYMLINKS = 40  # the kernel's limit, so both ways give up at the same depth

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (the unified table since 5.1)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS


class Escape(OhBaseError, OSError):
    """A symlink on the way leads outside the root: nothing was opened. Also an OSError (EXDEV), so
    code that handles a refusing file system keeps handling it."""

    def __init__(self, root: str, rel: str) -> None:
        path = os.path.join(root, rel) if rel not in ("", ".") else root
        super().__init__(errno.EXDEV, f"a symlink in {path} leads outside {root}", path)
        self.root = root
        self.path = path

    def __str__(self) -> str:
        return f"A symlink in {self.path} leads outside {self.root}"


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_HOW_SIZE = ctypes.sizeof(_OpenHow)
_syscall = None
_openat2: bool | None = None  # None: not probed yet


def _probe() -> bool:
    global _syscall, _openat2
    if _openat2 is None:
        _openat2 = False
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fn = libc.syscall
        except (OSError, AttributeError):
            return False
        fn.restype = ctypes.c_long
        how = _OpenHow(os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC, 0, _RESOLVE_BENEATH)
        fd = fn(_SYS_OPENAT2, ctypes.c_int(-100), b".", ctypes.byref(how), ctypes.c_size_t(_HOW_SIZE))
        if fd >= 0:
            os.close(fd)
            _syscall, _openat2 = fn, True
        # ENOSYS (kernel before 5.6, or a seccomp filter that does not know it): the walk, for good.
    return _openat2


def uses_openat2() -> bool:
    """Whether this process opens with openat2 (else the component walk)."""
    return _probe()


def force_walk(on: bool) -> None:
    """Tests only: make every open take the component walk (True), or probe again (False)."""
    global _openat2
    _openat2 = False if on else None


def _kernel_open(dirfd: int, rel: str, flags: int, mode: int, root: str) -> int:
    tmpfile = getattr(os, "O_TMPFILE", 0)  # includes O_DIRECTORY's bit: test all of it
    creates = flags & os.O_CREAT or (tmpfile and flags & tmpfile == tmpfile)
    how = _OpenHow(flags | _CLOEXEC, mode if creates else 0, _RESOLVE)  # a mode without O_CREAT is EINVAL
    path = os.fsencode(rel or ".")
    assert _syscall is not None
    for _ in range(16):  # EAGAIN: a rename raced a ".." lookup; the kernel asks to try again
        fd = _syscall(_SYS_OPENAT2, ctypes.c_int(dirfd), path, ctypes.byref(how), ctypes.c_size_t(_HOW_SIZE))
        if fd >= 0:
            return int(fd)
        err = ctypes.get_errno()
        if err == errno.EXDEV:
            raise Escape(root, rel)
        if err != errno.EAGAIN:
            raise OSError(err, os.strerror(err), os.path.join(root, rel))
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN), os.path.join(root, rel))


def _parts(rel: str) -> list[str]:
    return [p for p in rel.split("/") if p and p != "."]


def _walk(rootfd: int, rel: str, flags: int, mode: int, root: str) -> int:
    """openat2(RESOLVE_BENEATH)'s answer, one component at a time."""
    todo = _parts(rel)
    todo.reverse()  # a stack: the next component last
    stack = [os.dup(rootfd)]  # the directories walked; stack[0] is the root
    links = 0
    try:
        while todo:
            name = todo.pop()
            if name == "..":
                if len(stack) == 1:
                    raise Escape(root, rel)
                os.close(stack.pop())
                continue
            last = not todo
            want = (flags | os.O_NOFOLLOW) if last else (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW
            try:
                fd = os.open(name, want | _CLOEXEC, mode, dir_fd=stack[-1])
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise OSError(exc.errno, exc.strerror, os.path.join(root, rel)) from None
                target = _link(name, stack[-1])
                if target is None or (last and flags & os.O_NOFOLLOW):
                    raise OSError(exc.errno, exc.strerror, os.path.join(root, rel)) from None
                fd = -1
            else:
                target = None
                if last and want & _O_PATH and not flags & os.O_NOFOLLOW and _stat.S_ISLNK(os.fstat(fd).st_mode):
                    target = _link(name, stack[-1])  # O_PATH|O_NOFOLLOW opened the link itself
                    os.close(fd)
                    fd = -1
            if target is not None:
                links += 1
                if links > _MAXSYMLINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), os.path.join(root, rel))
                if target.startswith("/"):
                    raise Escape(root, rel)  # RESOLVE_BENEATH refuses absolute links, /proc/self/root among them
                todo.extend(reversed(_parts(target) or ["."]))
                continue
            if last:
                return fd
            stack.append(fd)
        # The path named the root, or ended in "..": open what the walk reached.
        return os.open(".", flags | _CLOEXEC, mode, dir_fd=stack[-1])
    finally:
        for d in stack:
            os.close(d)


def _link(name: str, dirfd: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=dirfd)
    except OSError:
        return None  # not a symlink: the open's own error stands


def _root_fd(root: str) -> int:
    return os.open(root, (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC)


def open_at(root: str, rel: str, flags: int, mode: int = 0o666) -> int:
    """``os.open(root/rel, flags, mode)``, resolved beneath ``root``: a symlink out of it raises Escape."""
    rootfd = _root_fd(root)
    try:
        if _probe():
            return _kernel_open(rootfd, rel, flags, mode, root)
        return _walk(rootfd, rel, flags, mode, root)
    finally:
        os.close(rootfd)


def open_dir(root: str, rel: str, create: bool = False) -> int:
    """A readable descriptor of the directory ``root/rel``; ``create``: made first (``mkdir -p``, each
    level made and opened beneath the root, never through a symlink out of it)."""
    try:
        return open_at(root, rel, _DIR)
    except FileNotFoundError:
        if not create:
            raise
    done = ""
    for name in _parts(rel):
        done = f"{done}/{name}" if done else name
        try:
            fd = open_at(root, done, _DIR)
        except FileNotFoundError:
            parent = open_at(root, os.path.dirname(done), _DIR)
            try:
                os.mkdir(name, 0o777, dir_fd=parent)
            except FileExistsError:
                pass  # made meanwhile (or a dangling link: the open below says which)
            finally:
                os.close(parent)
            fd = open_at(root, done, _DIR)
        os.close(fd)
    return open_at(root, rel, _DIR)


def open_parent(root: str, rel: str, create: bool = False) -> tuple[int, str]:
    """(descriptor of the directory holding ``rel``, the last component): for opens, renames, links and
    unlinks that must act on the name itself (``dir_fd=``). ``create``: the parents are made."""
    head, name = os.path.split(rel.rstrip("/"))
    if name in ("", ".", ".."):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.path.join(root, rel))
    return open_dir(root, head, create), name


def stat_at(root: str, rel: str) -> os.stat_result | None:
    """``os.stat`` beneath ``root`` (symlinks inside followed); None when nothing is there."""
    try:
        fd = open_at(root, rel, (_O_PATH or os.O_RDONLY | os.O_NONBLOCK) | _CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def unlink_at(root: str, rel: str) -> None:
    """Remove the name ``rel`` (a symlink itself, never its target)."""
    fd, name = open_parent(root, rel)
    try:
        os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


def rmdir_at(root: str, rel: str) -> None:
    fd, name = open_parent(root, rel)
    try:
        os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)


def listdir_at(root: str, rel: str) -> list[tuple[str, bool]]:
    """(name, is a directory) of each entry of the directory ``root/rel``, sorted by name. ``is a directory``
    follows a symlink, like ``DirEntry.is_dir()`` (asked while the descriptor is open)."""
    fd = open_dir(root, rel)
    try:
        out = []
        with os.scandir(fd) as it:
            for e in it:
                try:
                    is_dir = e.is_dir()
                except OSError:
                    is_dir = False
                out.append((e.name, is_dir))
        return sorted(out)
    finally:
        os.close(fd)
