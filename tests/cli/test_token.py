"""`oh token`: both storage paths (0600 file fallback, a real keyring backend), fingerprints, rotation."""

from __future__ import annotations

import hashlib
import json
import stat
import subprocess
import sys

import pytest

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


# What oh's token lookup chose, whether it found the token there, and whether ctypes.util (keyring's macOS
# backend runs its find_library: ldconfig and compiler subprocesses) was loaded on the way.
_LOOKUP = (
    "import json, sys\nfrom oh.config import secrets\ntoken, where = secrets.get_token()\n"
    "print(json.dumps({'kind': where.kind, 'backend': where.backend, 'token': token, "
    "'find_library': 'ctypes.util' in sys.modules}))"
)
_KEYRINGS_OWN = "import keyring\nk = keyring.get_keyring()\nprint(type(k).__module__ + '.' + type(k).__qualname__)"


def _real_keyring_env(oh) -> dict:
    """No PYTHON_KEYRING_BACKEND (keyring detects a backend itself) and no D-Bus session: the Secret Service
    and KWallet backends are then not viable, so nothing reaches the keyring of the person running the tests."""
    return {k: v for k, v in oh.env.items() if k not in ("PYTHON_KEYRING_BACKEND", "DBUS_SESSION_BUS_ADDRESS")}


def _py(code: str, env: dict, *args: str) -> str:
    p = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


@pytest.mark.skipif(sys.platform != "linux", reason="keyring's macOS backend is the real one on macOS")
def test_detected_keyring_is_keyrings_own_choice_without_the_macos_probe(oh):
    """With no PYTHON_KEYRING_BACKEND and no keyringrc, oh uses the backend keyring itself detects (every
    backend's entry point loaded), finds the token stored there, and never runs the macOS backend's library
    search (three subprocesses, most of keyring's start on Linux)."""
    env = _real_keyring_env(oh)
    own = _py(_KEYRINGS_OWN, env)
    rotated = json.loads(
        _py(
            "import sys; from oh.cli import main; sys.argv = ['oh', *sys.argv[1:]]; main()",
            env,
            "token",
            "rotate",
            "--json",
        )
    )
    found = json.loads(_py(_LOOKUP, env))
    assert own != "keyring.backends.fail.Keyring" and found["kind"] == "keyring" and found["backend"] == own
    assert rotated["backend"] == own and fp(found["token"]) == rotated["fingerprint"]
    assert found["find_library"] is False


@pytest.mark.skipif(sys.platform != "linux", reason="keyringrc.cfg's place is XDG_CONFIG_HOME on Linux")
def test_keyringrc_and_env_still_choose_the_backend(oh, tmp_path):
    """keyring's own configuration keeps deciding: keyringrc.cfg names the backend, PYTHON_KEYRING_BACKEND wins
    over it; the token is found wherever it was stored (the file when the chosen backend stores nothing)."""
    env = _real_keyring_env(oh)
    rc = tmp_path / "xdg-config" / "python_keyring" / "keyringrc.cfg"
    rc.parent.mkdir(parents=True)
    rc.write_text("[backend]\ndefault-keyring=keyring.backends.fail.Keyring\n")
    oh("token", "rotate", env={}, check=0)  # PYTHON_KEYRING_BACKEND=fail: the 0600 file
    in_file = json.loads(_py(_LOOKUP, env))
    assert in_file["kind"] == "file" and in_file["token"] == (oh.home / "token").read_text().strip()
    rc.write_text(f"[backend]\ndefault-keyring={PLAIN_KEYRING}\n")
    # The file's token is still found while the configured keyring holds none (lookup: keyring, then the file).
    assert json.loads(_py(_LOOKUP, env))["token"] == in_file["token"]
    rotated = json.loads(
        _py(
            "import sys; from oh.cli import main; sys.argv = ['oh', *sys.argv[1:]]; main()",
            env,
            "token",
            "rotate",
            "--json",
        )
    )
    found = json.loads(_py(_LOOKUP, env))
    assert rotated["backend"] == found["backend"] == PLAIN_KEYRING and found["kind"] == "keyring"
    assert json.loads(_py(_LOOKUP, dict(env, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")))["kind"] == "file"
