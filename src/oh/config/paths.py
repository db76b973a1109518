"""Where every file `oh` keeps lives (one rule, documented in docs/protocol.md §7).

``OH_HOME`` set: everything under it (config.toml, token, sessions/, traces/, logs/).
Otherwise: config in the platform's user config dir, runtime state in its user state dir
(``platformdirs`` with ``appauthor=False`` — the VS Code extension computes the same paths).
Directories are created 0700; files `oh` writes are 0600.
"""

from __future__ import annotations

import os
from pathlib import Path

APP = "oh"


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
    for root in _private_roots():
        if root == path or root in path.parents:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.name == "posix":
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            os.chmod(path, 0o700)
    return path


def write_private_file(path: Path, data: str | bytes) -> None:
    """Atomic write: a 0600 temp file in the same directory, fsync, then rename over ``path``.

    Readers never see a partial file and the content is never world-readable, not even briefly
    (the Gemini CLI companion's write-then-chmod window is the failure this avoids).
    """
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
