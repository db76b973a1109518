"""Issue 30 (what a new user hits), the CLI polish items: real ``oh`` processes (the ``oh`` fixture)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

# Every command that writes into OH_HOME (config.toml, the token file, config edit's working copy).
WRITERS = [
    ("config", "set", "port", "0"),
    ("config", "add", "consent_allow", "run: ls *"),
    ("config", "remove", "consent_allow", "run: ls *"),
    ("config", "unset", "port"),
    ("config", "edit"),
    ("token", "rotate"),
]


def _read_only_mount_works() -> bool:
    """A read-only bind mount in a private mount namespace stops root too (chmod does not)."""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind -o ro / /"], capture_output=True, timeout=10)
    return probe.returncode == 0


def _clean_failure(p: subprocess.CompletedProcess, args: tuple[str, ...]) -> None:
    assert p.returncode in (1, 2), (args, p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and "Error:" not in p.stderr, (args, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert lines and lines[0].startswith("oh: cannot "), (args, p.stderr)
    assert "OH_HOME" in p.stderr and len(lines) <= 2, (args, p.stderr)  # one line and its fix


@pytest.mark.parametrize("args", WRITERS, ids=" ".join)
def test_oh_home_under_a_file_is_one_clear_line(oh, args):
    """OH_HOME below a regular file (ENOTDIR: fails for root as for anyone)."""
    blocker = oh.tmp / "afile"
    blocker.write_text("not a directory\n")
    p = oh(*args, env={"OH_HOME": str(blocker / "oh"), "EDITOR": "true"}, input="")
    _clean_failure(p, args)


@pytest.mark.skipif(not _read_only_mount_works(), reason="needs unshare -m and mount (root or user namespaces)")
def test_read_only_oh_home_is_one_clear_line(oh, tmp_path):
    """OH_HOME on a read-only mount: every writer says which file and the fix, exit 1, no traceback."""
    home = tmp_path / "rohome"
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text('port = 7\nconsent_allow = ["run: ls *"]\n')
    os.chmod(home / "config.toml", 0o600)
    for args in WRITERS:
        p = subprocess.run(
            ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(home)]
            + [sys.executable, "-m", "oh", *args],
            capture_output=True,
            text=True,
            input="",
            cwd=oh.workspace,
            env=dict(oh.env, OH_HOME=str(home), EDITOR="true"),
            timeout=60,
        )
        _clean_failure(p, args)
        assert p.returncode == 1 and f"cannot write {home}" in p.stderr and "Read-only file system" in p.stderr, (
            args,
            p.stderr,
        )
    assert (home / "config.toml").read_text() == 'port = 7\nconsent_allow = ["run: ls *"]\n'
