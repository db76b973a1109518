"""Where every file `oh` keeps lives (one rule, documented in docs/protocol.md §7).

``OH_HOME`` set: everything under it (config.toml, token, sessions/, traces/, logs/).
Otherwise: config in the platform's user config dir, runtime state in its user state dir
(``platformdirs`` with ``appauthor=False`` — the VS Code extension computes the same paths).
Directories are created 0700; files `oh` writes are 0600.

Trust rule (docs/security.md §2, "a shared OH_HOME"): an oh directory, and every token or session
file in it, must be owned by you and not writable by group or others, and the directories above the
oh directory must not let other users replace it. Otherwise `oh` refuses (``UnsafePath``, naming the
path and the fix) instead of using a token or session another user could have planted.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import CliError

APP = "oh"


class UnsafePath(CliError):
    """An oh directory or file another user could control: raised instead of using it.

    ``oh``'s entry point turns it into exit 1 with the message and the fix (no traceback); the
    backend process reports it as its start error.
    """

    def __init__(self, path: Path | str, problem: str, fix: str) -> None:
        self.path, self.problem, self.fix = str(path), problem, fix
        super().__init__(f"refusing to use {path}: {problem}. Fix: {fix}")


class CannotWrite(CliError, OSError):
    """An oh directory or file that cannot be created or written (read-only file system, no permission,
    a file where a directory should be). Also an OSError (the backend and the launcher catch those as before);
    ``oh``'s entry point prints it as one line with the fix, exit 1, never a traceback."""

    def __init__(self, path: Path | str, exc: OSError) -> None:
        super().__init__(exc.errno, exc.strerror or str(exc), str(path))
        self.path, self.reason = str(path), exc.strerror or str(exc)
        home = oh_home()
        now = f"; it is {home} now" if home else ""
        import errno

        first = (
            "a path above it is a file, not a directory: remove or rename that file"
            if exc.errno == errno.ENOTDIR
            else f"make {Path(path).parent} writable"
        )
        self.fix = f"{first}, or point OH_HOME at a directory you can write (e.g. `export OH_HOME=~/.oh`{now})"


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _posix() -> bool:
    return os.name == "posix" and hasattr(os, "getuid")


def check_owned(path: Path, *, what: str, st: os.stat_result | None = None) -> os.stat_result | None:
    """Refuse ``path`` unless you own it and group/others cannot write it. None when it does not exist."""
    if st is None:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
    if not _posix():
        return st
    me = os.getuid()
    if st.st_uid != me:
        raise UnsafePath(
            path,
            f"this {what} is owned by {_owner(st.st_uid)}, not by you ({_owner(me)}): that user could have planted "
            "a token or session file and would then run commands as you",
            "use a directory of your own: unset OH_HOME, or point it at one you create (e.g. `export OH_HOME=~/.oh`)",
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        fix = f"chmod {'700' if stat.S_ISDIR(st.st_mode) else '600'} {path}"
        if not stat.S_ISDIR(st.st_mode):
            fix += " and replace the token it holds (`oh token rotate`): another user could have written theirs"
        raise UnsafePath(path, f"this {what} is writable by other users (mode {mode:04o})", fix)
    return st


def check_parents(path: Path) -> None:
    """The directories above an oh directory must not let another user rename it away and put their
    own in its place: each is owned by you or root, and a world-writable one must be sticky (/tmp)."""
    if not _posix():
        return
    me = os.getuid()
    for parent in Path(path).parents:
        try:
            st = os.stat(parent)
        except OSError:
            continue
        mode = stat.S_IMODE(st.st_mode)
        if st.st_uid not in (0, me):
            raise UnsafePath(
                path,
                f"its parent directory {parent} is owned by {_owner(st.st_uid)}, who could replace it",
                "keep oh's files in a directory tree you own (unset OH_HOME, or e.g. `export OH_HOME=~/.oh`)",
            )
        if mode & 0o002 and not mode & stat.S_ISVTX:
            raise UnsafePath(
                path,
                f"its parent directory {parent} is writable by everyone (mode {mode:04o}) without the sticky bit",
                f"chmod o-w {parent}, or keep oh's files elsewhere",
            )


def check_roots() -> None:
    """Check every existing oh root directory (OH_HOME, or the platform state and config dirs)."""
    for root in _private_roots():
        if check_owned(root, what="oh directory") is not None:
            check_parents(root)


def check_file(path: Path, *, what: str) -> os.stat_result | None:
    """An oh file we are about to trust (token, session): a regular file you own, not group/other
    writable, in an oh directory that passes ``check_roots``. Symlinks are refused (lstat)."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise UnsafePath(
            path, f"this {what} is not a regular file (a symlink or something else)", f"remove it: rm {path}"
        )
    return check_owned(path, what=what, st=st)


def oh_home() -> Path | None:
    home = os.environ.get("OH_HOME")
    return Path(home).expanduser().absolute() if home else None


def config_dir() -> Path:
    home = oh_home()
    if home:
        return home
    import platformdirs  # lazy: keeps `oh --help` fast

    return Path(platformdirs.user_config_dir(APP, appauthor=False))


def state_dir() -> Path:
    home = oh_home()
    if home:
        return home
    import platformdirs

    return Path(platformdirs.user_state_dir(APP, appauthor=False))


def config_file() -> Path:
    return config_dir() / "config.toml"


def token_file() -> Path:
    """Fallback token store when no keyring backend works (0600)."""
    return config_dir() / "token"


def sessions_dir() -> Path:
    return state_dir() / "sessions"


def traces_dir() -> Path:
    return state_dir() / "traces"


def logs_dir() -> Path:
    return state_dir() / "logs"


def worktrees_dir(workspace: str) -> Path:
    """Where the agents' git worktrees of ``workspace`` live (issue 37): never in the repository (no untracked
    junk in the user's tree), and not in oh's state dir either, which every agent sandbox hides (it holds the
    tokens): ``$OH_WORKTREES``, else ``<OH_HOME>.worktrees`` with OH_HOME, else the data dir's ``worktrees``
    (~/.local/share/oh/worktrees); one directory per workspace below it."""
    import hashlib

    base = os.environ.get("OH_WORKTREES")
    if base:
        root = Path(base).expanduser().absolute()
    elif oh_home():
        root = Path(str(oh_home()) + ".worktrees")
    else:
        import platformdirs

        root = Path(platformdirs.user_data_dir(APP, appauthor=False)) / "worktrees"
    key = hashlib.sha256(os.path.realpath(workspace).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return root / key


def ensure_worktrees_dir(workspace: str) -> Path:
    """``worktrees_dir`` created 0700 (and its parent)."""
    path = worktrees_dir(workspace)
    for p in (path.parent, path):
        p.mkdir(mode=0o700, exist_ok=True, parents=True)
        if stat.S_IMODE(p.stat().st_mode) & 0o077:
            p.chmod(0o700)
    return path


def _private_roots() -> list[Path]:
    home = oh_home()
    return [home] if home else [state_dir(), config_dir()]


def ensure_private_dir(path: Path) -> Path:
    """mkdir -p with 0700 on the leaf and on the oh root above it (OH_HOME, or the state/config dir),
    and tighten the leaf if it is looser.

    ``Path.mkdir(parents=True)`` creates missing parents with the umask's mode (0755), so a first
    ``oh start`` used to leave ``~/.local/state/oh`` world-listable (and ``oh doctor`` then failed).
    An oh root that already exists is left as it is (it may be a directory the user chose; doctor
    reports it); directories above the oh root are not ours and keep the default mode.
    """
    path = Path(path)
    try:
        return _ensure_private_dir(path)
    except CannotWrite:
        raise
    except OSError as exc:
        raise CannotWrite(path, exc) from exc


def _ensure_private_dir(path: Path) -> Path:
    for root in _private_roots():
        if root == path or root in path.parents:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            # A root that someone else created (or made writable) first is refused, never written to.
            check_owned(root, what="oh directory")
            check_parents(root)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.name == "posix":
        st = path.stat()
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            check_owned(path, what="oh directory", st=st)
        if st.st_mode & 0o077:
            os.chmod(path, 0o700)
    return path


def open_private_append(path: str | os.PathLike[str]) -> int:
    """An fd for appending to ``path``, created 0600 when missing (the one place the trace, the
    backend's log and the launcher's log open their files). The parent directory is the caller's."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)


def write_private_file(path: Path, data: str | bytes) -> None:
    """Atomic write: a 0600 temp file in the same directory, fsync, then rename over ``path``.

    Readers never see a partial file and the content is never world-readable, not even briefly
    (the Gemini CLI companion's write-then-chmod window is the failure this avoids).
    Raises CannotWrite (an OSError naming the path and the fix) when the directory cannot be written.
    """
    try:
        _write_private_file(path, data)
    except CannotWrite:
        raise
    except OSError as exc:
        raise CannotWrite(path, exc) from exc


def _write_private_file(path: Path, data: str | bytes) -> None:
    ensure_private_dir(path.parent)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
