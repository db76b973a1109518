"""`oh doctor` says whether the agent's shell can be sandboxed here, and what to do when not (issue 27 item 3): a
real `oh doctor` process with the settings a user would have; a missing or broken bubblewrap is a real file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _doctor(tmp_path: Path, **env: str) -> tuple[int, dict]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    base.update(OH_HOME=str(tmp_path / "ohhome"), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", **env)
    done = subprocess.run(
        [sys.executable, "-m", "oh", "doctor", "--json"], env=base, capture_output=True, text=True, timeout=60
    )
    checks = json.loads(done.stdout)
    checks = checks["checks"] if isinstance(checks, dict) else checks
    (row,) = [c for c in checks if c["check"] == "sandbox"]
    return done.returncode, row


@pytest.fixture
def broken_bwrap(tmp_path: Path) -> str:
    """A bubblewrap that cannot make namespaces (as under a user-namespace restriction)."""
    p = tmp_path / "bwrap"
    p.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    p.chmod(0o755)
    return str(p)


def test_missing_bubblewrap_fails_with_the_install_command(tmp_path):
    code, row = _doctor(tmp_path, OH_SANDBOX_BWRAP=str(tmp_path / "no-such-bwrap"))
    assert code == 1 and row["status"] == "fail", row
    assert "not installed" in row["detail"] and "commands will be refused" in row["detail"]
    assert "apt install bubblewrap" in row["fix"] and "sandbox_fallback unconfined" in row["fix"]


def test_a_broken_bubblewrap_is_diagnosed(tmp_path, broken_bwrap):
    code, row = _doctor(tmp_path, OH_SANDBOX_BWRAP=broken_bwrap)
    assert code == 1 and row["status"] == "fail", row
    assert row["fix"]  # a fix for the cause found (AppArmor, sysctl) or how to check bwrap by hand


def test_unconfined_by_setting_is_a_warning_and_off_is_said(tmp_path):
    code, row = _doctor(tmp_path, OH_SANDBOX_BWRAP=str(tmp_path / "none"), OH_SANDBOX_FALLBACK="unconfined")
    assert row["status"] == "warn" and "commands run as you" in row["detail"], row
    code, row = _doctor(tmp_path, OH_SANDBOX="off")
    assert row["status"] == "ok" and "unconfined" in row["detail"], row


@pytest.mark.skipif(
    subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode != 0, reason="bwrap"
)
def test_a_working_bubblewrap_is_ok(tmp_path):
    code, row = _doctor(tmp_path)
    assert row["status"] == "ok" and "workspace-write" in row["detail"], row
