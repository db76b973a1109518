"""`oh token`: both storage paths (0600 file fallback, a real keyring backend), fingerprints, rotation."""

from __future__ import annotations

import hashlib
import stat

from .conftest import PLAIN_KEYRING


def fp(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:8]


def test_file_fallback_when_no_keyring(oh):
    info = oh.json("token", "show", "--json")
    assert info["stored"] is False and info["storage"] == "file" and info["fingerprint"] is None
    assert "keyring.backends.fail.Keyring" in info["detail"]
    rotated = oh.json("token", "rotate", "--json")
    token_file = oh.home / "token"
    token = token_file.read_text().strip()
    assert len(token) >= 43  # token_urlsafe(32)
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(oh.home.stat().st_mode) == 0o700
    assert rotated["fingerprint"] == fp(token) and rotated["updated"] == [] and rotated["storage"] == "file"
    info = oh.json("token", "show", "--json")
    assert info == {**info, "stored": True, "storage": "file", "path": str(token_file), "fingerprint": fp(token)}
    text = oh("token", "show", check=0).stdout
    assert str(token_file) in text and "no usable keyring" in text and token not in text
    assert oh("token", "show", "--reveal", check=0).stdout == token + "\n"


def test_real_keyring_backend_is_used_and_reported(oh, tmp_path):
    env = {"PYTHON_KEYRING_BACKEND": PLAIN_KEYRING}
    rotated = oh.json("token", "rotate", "--json", env=env)
    assert rotated["storage"] == "keyring" and rotated["backend"] == PLAIN_KEYRING
    assert not (oh.home / "token").exists()  # nothing in the fallback file
    keyring_files = list((tmp_path / "xdg-data").rglob("*.cfg"))
    assert keyring_files, "PlaintextKeyring should keep its data under XDG_DATA_HOME"
    token = oh("token", "show", "--reveal", env=env, check=0).stdout.strip()
    assert fp(token) == rotated["fingerprint"]
    info = oh.json("token", "show", "--json", env=env)
    assert info["storage"] == "keyring" and info["secure"] is False and "not encrypted" in info["detail"]
    assert "unencrypted" in oh("token", "show", env=env, check=0).stderr
    # The same token is not visible to a process without that keyring: it falls back honestly.
    assert oh.json("token", "show", "--json")["stored"] is False


def test_oh_token_env_overrides_and_blocks_rotate(oh):
    oh("token", "rotate", check=0)
    info = oh.json("token", "show", "--json", env={"OH_TOKEN": "from-env-123"})
    assert info["storage"] == "env" and info["fingerprint"] == fp("from-env-123")
    p = oh("token", "rotate", env={"OH_TOKEN": "from-env-123"})
    assert p.returncode == 2 and "OH_TOKEN" in p.stderr


def test_reveal_without_token_fails(oh):
    p = oh("token", "show", "--reveal")
    assert p.returncode == 1 and p.stdout == "" and "no token" in p.stderr
