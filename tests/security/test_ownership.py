"""Issue 9 #1, #2, #22: whose oh directory, token file and session files `oh` trusts, and what
`oh token show` says about them. Real `oh` processes; "another user" is uid 65534 (nobody), made
with os.chown (the suite runs as root here; skipped elsewhere)."""

from __future__ import annotations

import hashlib
import json
import os
import stat

import pytest

OTHER = 65534
needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another uid needs root"
)


def fp(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:8]


def _planted_home(oh, *, owner: int | None = OTHER, mode: int = 0o777, token_owner: int | None = OTHER) -> str:
    """OH_HOME as another user would leave it under /tmp: their directory, their token."""
    oh.home.mkdir(mode=0o700)
    os.chmod(oh.home, mode)
    planted = "planted-by-another-user-" + "x" * 30
    (oh.home / "token").write_text(planted + "\n")
    os.chmod(oh.home / "token", 0o644)
    if token_owner is not None:
        os.chown(oh.home / "token", token_owner, token_owner)
    if owner is not None:
        os.chown(oh.home, owner, owner)
    return planted


def _assert_refused(proc, path) -> None:
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert f"refusing to use {path}" in proc.stderr, proc.stderr
    assert "fix:" in proc.stderr.lower() or "Fix:" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


@needs_root
def test_start_refuses_an_oh_home_planted_by_another_user(oh):
    planted = _planted_home(oh)
    proc = oh(
        "start", "--detach", "--json", "--runtime", "local", "--no-open", "--workspace", str(oh.workspace), timeout=40
    )
    _assert_refused(proc, oh.home)
    assert "uid 65534" in proc.stderr and "OH_HOME" in proc.stderr
    assert planted not in proc.stdout + proc.stderr
    assert not (oh.home / "sessions").exists() or not list((oh.home / "sessions").glob("*.json"))  # nothing started
    # The commands that would use the token refuse too; `token show` reports instead of using it.
    _assert_refused(oh("token", "show", "--reveal"), oh.home)
    _assert_refused(oh("token", "rotate"), oh.home)
    _assert_refused(oh("status"), oh.home)
    shown = oh("token", "show", "--json")
    info = json.loads(shown.stdout)
    assert shown.returncode == 1 and info["secure"] is False and info["owner_uid"] == OTHER and info["mode"] == "0644"
    assert info["refused"]["path"] == str(oh.home) and info["fingerprint"] is None
    assert planted not in shown.stdout + shown.stderr
    doctor = oh("doctor", "--json")
    report = json.loads(doctor.stdout)
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    failed = {c["check"]: c for c in report["checks"] if c["status"] == "fail"}
    assert "owned by uid 65534" in failed["token"]["detail"] and "owned by uid 65534" in failed["sessions"]["detail"]


@needs_root
def test_own_oh_home_writable_by_others_is_refused(oh):
    _planted_home(oh, owner=None, token_owner=None)  # ours, but 0777: anyone could have swapped the token
    proc = oh("start", "--detach", "--runtime", "local", "--no-open", "--workspace", str(oh.workspace), timeout=40)
    _assert_refused(proc, oh.home)
    assert "writable by other users (mode 0777)" in proc.stderr and f"chmod 700 {oh.home}" in proc.stderr


@needs_root
def test_a_token_file_of_another_user_in_your_home_is_refused(oh):
    _planted_home(oh, owner=None, mode=0o700)  # our 0700 directory, their token file
    proc = oh("start", "--detach", "--runtime", "local", "--no-open", "--workspace", str(oh.workspace), timeout=40)
    _assert_refused(proc, oh.home / "token")
    assert "owned by uid 65534" in proc.stderr


@needs_root
def test_a_parent_directory_of_another_user_is_refused(oh, tmp_path):
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chown(parent, OTHER, OTHER)  # they could rename our OH_HOME away and put theirs in its place
    home = parent / "ohhome"
    proc = oh("token", "rotate", env={"OH_HOME": str(home)})
    _assert_refused(proc, home)
    assert f"parent directory {parent}" in proc.stderr


@needs_root
def test_a_planted_session_file_is_refused(oh):
    info = oh.start()
    session = oh.session(info["instance_id"])
    fake = oh.home / "sessions" / "feedfacecafe.json"
    fake.write_text(json.dumps({**session, "instance_id": "feedfacecafe", "port": 1, "token": "theirs-" + "y" * 40}))
    os.chown(fake, OTHER, OTHER)
    proc = oh("run", "true")
    _assert_refused(proc, fake)
    assert "session file" in proc.stderr


def test_own_token_file_readable_by_others_is_reported_then_tightened(oh):
    oh("token", "rotate", check=0)
    token_file = oh.home / "token"
    os.chmod(token_file, 0o644)
    info = oh.json("token", "show", "--json")
    assert info["mode"] == "0644" and info["secure"] is False and "readable by other users" in info["problem"]
    text = oh("token", "show")
    assert "mode 0644" in text.stdout and "INSECURE" in text.stdout and "mode 0600" not in text.stdout
    assert "chmod 600" in text.stderr and "oh token rotate" in text.stderr
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o644  # `show` only reports
    # Using it (oh start) makes it private first and says so.
    proc = oh(
        "start", "--detach", "--json", "--runtime", "local", "--no-open", "--workspace", str(oh.workspace), timeout=40
    )
    assert proc.returncode == 0, proc.stderr
    oh.started.append(json.loads(proc.stdout))
    assert "was readable by other users (mode 0644); it is now 0600" in proc.stderr and "oh token rotate" in proc.stderr
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    info = oh.json("token", "show", "--json")
    assert info["mode"] == "0600" and info["secure"] is True and info["problem"] is None


def test_own_token_file_writable_by_others_is_refused(oh):
    oh("token", "rotate", check=0)
    os.chmod(oh.home / "token", 0o666)
    proc = oh("start", "--detach", "--runtime", "local", "--no-open", "--workspace", str(oh.workspace), timeout=40)
    _assert_refused(proc, oh.home / "token")
    assert "writable by other users (mode 0666)" in proc.stderr


def test_oh_token_set_while_a_backend_runs_is_explained(oh):
    """Issue 9 #22: `oh status` showed the running backend's fingerprint, `oh token show` the one of
    OH_TOKEN, with nothing saying why they differ."""
    info = oh.start()
    stored = (oh.home / "token").read_text().strip()
    env = {"OH_TOKEN": "exported-later-" + "z" * 30}
    shown = oh("token", "show", "--json", env=env)
    data = json.loads(shown.stdout)
    assert data["storage"] == "env" and data["fingerprint"] == fp(env["OH_TOKEN"])
    assert data["backends"] == [{"instance_id": info["instance_id"], "fingerprint": fp(stored), "same": False}]
    assert info["instance_id"] in shown.stderr and "keep the token" in shown.stderr
    status = oh.json("status", "--json")
    backend = (
        status[0] if isinstance(status, list) else (status.get("backends") or status.get("sessions") or [status])[0]
    )
    assert backend.get("token_fingerprint") == fp(stored)
    # Without OH_TOKEN the two agree and nothing is explained.
    same = oh("token", "show", "--json")
    assert json.loads(same.stdout)["backends"][0]["same"] is True and "note:" not in same.stderr
