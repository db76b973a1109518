"""The token: keyring first (service ``oh``, username ``token``), a 0600 file as the honest fallback.

Lookup order: ``OH_TOKEN`` env > keyring (when a usable backend exists) > ``paths.token_file()``.
Storing goes to the keyring when it works, else to the file; whichever store is used is reported
by ``describe()`` so ``oh token show`` / ``oh doctor`` never claim a keyring that is not there
(the way ``gh auth status`` does). The token itself is never logged or printed unless asked.
"""

from __future__ import annotations

import hashlib
import os
import secrets as _secrets
from dataclasses import dataclass
from pathlib import Path

from . import paths

SERVICE = "oh"
USERNAME = "token"
ENV = "OH_TOKEN"


def new_token() -> str:
    return _secrets.token_urlsafe(32)


def fingerprint(token: str) -> str:
    """First 8 hex digits of sha256(token): enough to compare, useless to attack."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:8]


@dataclass
class Storage:
    kind: str  # "keyring" | "file" | "env"
    backend: str  # keyring backend class path, the file path, or "OH_TOKEN"
    detail: str = ""  # e.g. why the keyring is not used, or where a file-based keyring keeps data
    secure: bool = True  # False for plaintext keyrings

    def describe(self) -> str:
        if self.kind == "env":
            return "environment variable OH_TOKEN (overrides the stored token)"
        if self.kind == "keyring":
            extra = f"; {self.detail}" if self.detail else ""
            return f"keyring ({self.backend}{extra})"
        return f"file {self.backend} (mode 0600; no usable keyring: {self.detail})"


_UNUSABLE = ("keyring.backends.fail.Keyring", "keyring.backends.null.Keyring")


def _backend_name(kr) -> str:
    cls = type(kr)
    return f"{cls.__module__}.{cls.__qualname__}"


def _keyring():
    """(backend, None) when a usable keyring backend exists, else (None, reason)."""
    try:
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


def _read_file() -> str | None:
    try:
        token = paths.token_file().read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return token or None


def _write_file(token: str) -> Path:
    path = paths.token_file()
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
    return Storage("file", str(paths.token_file()), reason or "")


def get_token() -> tuple[str | None, Storage]:
    """The current token and where it came from; (None, storage) when none is stored yet."""
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
    token = _read_file()
    if token or kr is None:
        return token, Storage("file", str(paths.token_file()), reason or "the token was stored in the file earlier")
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
    path = _write_file(token)
    return Storage("file", str(path), reason or "")


def get_or_create_token() -> str:
    token, _ = get_token()
    if token:
        return token
    token = new_token()
    store_token(token)
    return token
