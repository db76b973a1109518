"""The token: keyring first (service ``oh``, username ``token``), a 0600 file as the honest fallback.

Lookup order: ``OH_TOKEN`` env > keyring (when a usable backend exists) > ``paths.token_file()``.
Storing goes to the keyring when it works, else to the file; whichever store is used is reported
by ``describe()`` so ``oh token show`` / ``oh doctor`` never claim a keyring that is not there
(the way ``gh auth status`` does). The token itself is never logged or printed unless asked.

The file store is trusted only when it is yours (``paths.check_file``: your regular file, not
group/other-writable, in an oh directory of yours) -- else ``paths.UnsafePath``. A file of yours that
others can READ (e.g. 0644 after a copy or an umask accident) is reported as it is by
``storage()``/``oh token show`` and tightened to 0600, with a notice to rotate, by whatever is about
to use the token (``get_token(tighten=True)``: ``oh start``, the backend).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from . import paths

SERVICE = "oh"
USERNAME = "token"
ENV = "OH_TOKEN"


def new_token() -> str:
    import secrets  # here: it loads OpenSSL (hmac), a cost to commands that never make a token

    return secrets.token_urlsafe(32)


def fingerprint(token: str) -> str:
    """First 8 hex digits of sha256(token): enough to compare, useless to attack."""
    try:  # the builtin module: hashlib loads OpenSSL (startup of `oh doctor`, docs/benchmarks.md)
        from _sha256 import sha256
    except ImportError:  # pragma: no cover - builds without it
        from hashlib import sha256

    return sha256(token.encode("utf-8")).hexdigest()[:8]


class Storage:
    """Where the token is kept, as ``storage()`` reports it. A plain class, not a dataclass: `oh doctor` and
    `oh token` start without importing dataclasses (a third of the interpreter's start; docs/benchmarks.md)."""

    def __init__(
        self,
        kind: str,  # "keyring" | "file" | "env"
        backend: str,  # keyring backend class path, the file path, or "OH_TOKEN"
        detail: str = "",  # e.g. why the keyring is not used, or where a file-based keyring keeps data
        secure: bool = True,  # False for plaintext keyrings, and for a file others can read or that is not yours
        mode: str | None = None,  # file store: the file's real mode ("0600"), None when it does not exist yet
        owner_uid: int | None = None,  # file store: the file's real owner
        problem: str | None = None,  # file store: what makes it insecure, in words
    ) -> None:
        self.kind, self.backend, self.detail, self.secure = kind, backend, detail, secure
        self.mode, self.owner_uid, self.problem = mode, owner_uid, problem

    def __repr__(self) -> str:
        return f"Storage({self.kind!r}, {self.backend!r}, {self.detail!r}, secure={self.secure!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Storage) and vars(self) == vars(other)

    def describe(self) -> str:
        if self.kind == "env":
            return "environment variable OH_TOKEN (overrides the stored token)"
        if self.kind == "keyring":
            extra = f"; {self.detail}" if self.detail else ""
            return f"keyring ({self.backend}{extra})"
        state = "not created yet" if self.mode is None else f"mode {self.mode}, owner uid {self.owner_uid}"
        if self.problem:
            state += f"; INSECURE: {self.problem}"
        return f"file {self.backend} ({state}; no usable keyring: {self.detail})"


_UNUSABLE = ("keyring.backends.fail.Keyring", "keyring.backends.null.Keyring")


def _backend_name(kr) -> str:
    cls = type(kr)
    return f"{cls.__module__}.{cls.__qualname__}"


# keyring loads every backend's entry point to pick one; on any system but macOS, loading its macOS backend
# runs ctypes.util.find_library three times (ldconfig and compiler subprocesses: ~35 ms, most of keyring's
# start on Linux) for a module that then fails to load anyway (no Security framework). That backend says
# "macOS required" before it looks at the module, so marking the module missing up front changes no choice
# keyring makes: PYTHON_KEYRING_BACKEND, keyringrc.cfg and every other backend are as keyring handles them.
_MACOS_API = "keyring.backends.macOS.api"


def _skip_macos_api() -> None:
    if sys.platform != "darwin":
        # None in sys.modules makes an import of that name fail (the import system's documented block)
        sys.modules.setdefault(_MACOS_API, None)  # type: ignore[arg-type]


def _keyring():
    """(backend, None) when a usable keyring backend exists, else (None, reason)."""
    chosen = os.environ.get("PYTHON_KEYRING_BACKEND")
    if chosen in _UNUSABLE:  # keyring itself takes this variable first; importing it would only say the same
        return None, f"keyring backend is {chosen}"
    try:
        _skip_macos_api()
        import keyring
        from keyring.backends import chainer

        kr = keyring.get_keyring()
    except Exception as exc:  # noqa: BLE001 - any keyring failure means "use the file"
        return None, f"keyring failed to load: {type(exc).__name__}: {exc}"
    name = _backend_name(kr)
    if name in _UNUSABLE:
        return None, f"keyring backend is {name}"
    if isinstance(kr, chainer.ChainerBackend) and not kr.backends:
        return None, "no keyring backend is available (keyring's chainer is empty)"
    return kr, None


def _keyring_detail(kr) -> tuple[str, bool]:
    path = getattr(kr, "file_path", None)
    name = _backend_name(kr)
    if path:
        plain = "Plaintext" in name
        return (f"data in {path}{', not encrypted' if plain else ''}", not plain)
    return "", True


def _file_storage(reason: str) -> Storage:
    """The file store as it really is on disk (mode, owner), without refusing anything."""
    path = paths.token_file()
    storage = Storage("file", str(path), reason)
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return storage
    mode = stat.S_IMODE(st.st_mode)
    storage.mode, storage.owner_uid = f"{mode:04o}", st.st_uid
    problems = []
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        problems.append(f"owned by uid {st.st_uid}, not you")
    if not stat.S_ISREG(st.st_mode):
        problems.append("not a regular file")
    if os.name == "posix" and mode & 0o077:
        problems.append(f"{'writable' if mode & 0o022 else 'readable'} by other users")
    if problems:
        storage.problem, storage.secure = ", ".join(problems), False
    return storage


def _read_file(tighten: bool = False) -> str | None:
    path = paths.token_file()
    paths.check_roots()
    st = paths.check_file(path, what="token file")
    if st is None:
        return None
    mode = stat.S_IMODE(st.st_mode)
    if tighten and os.name == "posix" and mode & 0o077:
        # Yours but readable by others: make it private before use, and say so -- it may have been
        # copied already, which only a new token fixes.
        os.chmod(path, 0o600)
        sys.stderr.write(
            f"oh: warning: the token file {path} was readable by other users (mode {mode:04o}); it is now 0600. "
            "Someone may have copied it: run `oh token rotate`.\n"
        )
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, encoding="utf-8") as f:
            token = f.read().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return token or None


def _write_file(token: str) -> Path:
    path = paths.token_file()
    paths.ensure_private_dir(path.parent)  # refuses an oh directory another user controls
    # Replacing (rename) a foreign or planted file is fine: the new one is ours and 0600. Only a
    # path we cannot trust the DIRECTORY of is refused, above.
    paths.write_private_file(path, token + "\n")
    return path


def storage() -> Storage:
    """Where the token lives (or would be stored), without reading it."""
    if os.environ.get(ENV):
        return Storage("env", ENV)
    kr, reason = _keyring()
    if kr is not None:
        detail, secure = _keyring_detail(kr)
        return Storage("keyring", _backend_name(kr), detail, secure)
    return _file_storage(reason or "")


def get_token(*, tighten: bool = False) -> tuple[str | None, Storage]:
    """The current token and where it came from; (None, storage) when none is stored yet.

    Raises ``paths.UnsafePath`` when the token file or its directory may be controlled by another
    user. ``tighten``: make a token file others can read 0600 first (with a notice); only callers
    that are about to USE the token pass it, so `oh token show` reports the file as it was."""
    env = os.environ.get(ENV)
    if env:
        return env, Storage("env", ENV)
    kr, reason = _keyring()
    if kr is not None:
        try:
            token = kr.get_password(SERVICE, USERNAME)
        except Exception as exc:  # noqa: BLE001 - locked/broken keyring: fall back, say why
            kr, reason = None, f"keyring {_backend_name(kr)} failed: {type(exc).__name__}: {exc}"
        else:
            if token:
                detail, secure = _keyring_detail(kr)
                return token, Storage("keyring", _backend_name(kr), detail, secure)
    token = _read_file(tighten)
    if token or kr is None:
        return token, _file_storage(reason or "the token was stored in the file earlier")
    detail, secure = _keyring_detail(kr)
    return None, Storage("keyring", _backend_name(kr), detail, secure)


def store_token(token: str) -> Storage:
    """Store ``token`` in the keyring, or in the 0600 file when no keyring works."""
    kr, reason = _keyring()
    if kr is not None:
        try:
            kr.set_password(SERVICE, USERNAME, token)
        except Exception as exc:  # noqa: BLE001
            reason = f"keyring {_backend_name(kr)} failed: {type(exc).__name__}: {exc}"
        else:
            # One store only: a stale file copy would shadow nothing but confuse `oh doctor`.
            try:
                paths.token_file().unlink()
            except (FileNotFoundError, NotADirectoryError):
                pass
            detail, secure = _keyring_detail(kr)
            return Storage("keyring", _backend_name(kr), detail, secure)
    _write_file(token)
    return _file_storage(reason or "")


def get_or_create_token() -> str:
    token, _ = get_token(tighten=True)
    if token:
        return token
    token = new_token()
    store_token(token)
    return token
