"""Shares outlive the backend process (issue 28): `oh stop; oh start` keeps every live share, so an agent elsewhere
with only its connect file goes on working; what was revoked, expired or rotated away never comes back; the share
book on disk holds digests only, and one that is not the user's private file is not trusted."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oh.backend import sharestore
from oh.client.errors import OhClientError
from oh.client.sync import SyncClient
from oh.launcher.control import control
from oh.sessions import Session
from waiting import poll_until

from .test_share import token_of


def agent_run(roh, made: dict, command: str) -> subprocess.CompletedProcess:
    """`oh run` as the agent elsewhere runs it: nothing but the connect file (no OH_URL, no token, its own home)."""
    env = roh.agent_env(made, OH_CONNECT=made["connect_file"])
    for k in ("OH_URL", "OH_TOKEN_FILE"):
        env.pop(k)
    agent_dir = roh.tmp / "elsewhere"
    agent_dir.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "oh", "run", command],
        env=env,
        cwd=agent_dir,
        capture_output=True,
        text=True,
        timeout=60,
    )


def restart(roh) -> dict:
    roh("stop", check=0)
    info = roh.start()
    info["session"] = roh.session(info["instance_id"])
    return info


def admitted(url: str, token: str) -> bool:
    try:
        SyncClient.connect(url, token).close()
    except OhClientError as exc:
        assert "401" in str(exc) or "token" in str(exc).lower(), exc
        return False
    return True


def book(roh) -> Path:
    return roh.home / "sharebook" / sharestore.default_path(str(roh.workspace)).name


def test_a_share_survives_stop_and_start(roh, backend):
    made = roh.share("--ttl", "1h", "--where", "box")
    assert agent_run(roh, made, "touch before.txt").returncode == 0
    f = book(roh)
    assert f.stat().st_mode & 0o777 == 0o600 and f.parent.stat().st_mode & 0o777 == 0o700
    text = f.read_text()
    assert token_of(made) not in text and made["share_id"] in text  # the digest, never the credential
    old_socket = backend["session"]["socket"]

    info = restart(roh)
    assert info["session"]["socket"] == old_socket  # the path the agent holds is the same
    proc = agent_run(roh, made, "echo after > after.txt")
    assert proc.returncode == 0, proc.stderr
    assert (roh.workspace / "after.txt").read_text() == "after\n"  # it ran here, through the restored share
    rows = roh.json("share", "list", "--json")
    assert [(r["share_id"], r["where"], r["kind"]) for r in rows] == [(made["share_id"], "box", "env")]
    assert rows[0]["expires_at"] == made["expires_at"]
    assert Path(made["token_file"]).exists()  # `oh share list` keeps the files of a share the backend still has


def test_revoked_expired_and_rotated_shares_do_not_come_back(roh, backend):
    revoked, short, kept = roh.share(), roh.share("--ttl", "4s"), roh.share()
    tokens = {name: token_of(m) for name, m in (("revoked", revoked), ("short", short), ("kept", kept))}
    assert roh("share", "revoke", revoked["share_id"]).returncode == 0
    roh("stop", check=0)
    # `short` expires while no backend runs: the next one must not admit it.
    poll_until(lambda: time.time() > short["expires_at"] + 0.5, 15, "the short share's expiry")
    info = roh.start()
    url = "unix:" + roh.session(info["instance_id"])["socket"]
    assert not admitted(url, tokens["revoked"]) and not admitted(url, tokens["short"])
    assert admitted(url, tokens["kept"])
    assert [r["share_id"] for r in roh.json("share", "list", "--json")] == [kept["share_id"]]
    assert {r["share_id"] for r in json.loads(book(roh).read_text())["shares"]} == {kept["share_id"]}

    assert roh("token", "rotate").returncode == 0
    assert not book(roh).exists()  # rotation purges the book, not only the memory
    info = restart(roh)
    assert not admitted("unix:" + info["session"]["socket"], tokens["kept"])
    assert agent_run(roh, kept, "true").returncode != 0
    assert roh.json("share", "list", "--json") == []


@pytest.mark.parametrize("tamper", ["group-writable", "symlink"])
def test_a_book_that_is_not_the_users_private_file_is_not_trusted(roh, backend, tamper):
    made = roh.share()
    roh("stop", check=0)
    f = book(roh)
    if tamper == "group-writable":
        f.chmod(0o620)
    else:
        real = roh.tmp / "elsewhere-book.json"
        f.rename(real)
        f.symlink_to(real)
    info = roh.start()
    assert not admitted("unix:" + roh.session(info["instance_id"])["socket"], token_of(made))
    assert roh.json("share", "list", "--json") == []
    log = "".join(p.read_text() for p in (roh.home / "logs").glob("*.log"))
    assert "shares not restored" in log, log[-2000:]


def test_an_ssh_share_comes_back_down_with_the_command_that_brings_it_back(roh, backend):
    session = Session.from_dict(backend["session"])
    frame = {"type": "share", "op": "create", "where": "ssh me@gpu-box", "kind": "ssh", "host": "me@gpu-box"}
    made = control(session, frame, token=session.decider_token)
    assert made["share"]["kind"] == "ssh" and "link" not in made["share"]
    restart(roh)
    (row,) = roh.json("share", "list", "--json")
    sid = made["share"]["share_id"]
    assert row["link"]["state"] == "down"
    assert f"oh share ssh me@gpu-box --resume {sid}" in row["link"]["reason"], row
    assert f"oh share revoke {sid}" in row["link"]["reason"]
    assert "--resume" in roh("status").stdout


def test_the_book_keeps_digests_and_forgets_what_ended(tmp_path):
    """ShareBook on a real file: every change rewrites it, expiry too; a fresh book reads back only live,
    well-formed records."""
    from oh.backend.shares import ShareBook

    path = tmp_path / "state" / "sharebook" / "w.json"
    b = ShareBook(path)
    live, token = b.create("box", None, ["/workspace=/srv/ws"], "docker")
    brief, _ = b.create("gone-soon", 0.2)
    assert token not in path.read_text() and path.stat().st_mode & 0o777 == 0o600
    poll_until(lambda: b.sweep() == [brief], 10, "the short share's expiry")
    records = json.loads(path.read_text())["shares"]
    assert [r["share_id"] for r in records] == [live.share_id]
    records.append({**records[0], "share_id": "s00000000", "digest": "zz"})  # malformed: dropped
    records.append({**records[0], "share_id": "s11111111", "expires_at": time.time() - 1})  # expired: dropped
    path.write_text(json.dumps({"version": 1, "shares": records}))
    again = ShareBook(path)
    assert again.load() == 1
    got = again.match(token)
    assert got is not None and got.kind == "docker" and got.pathmap.describe() == ["/workspace=/srv/ws"]
    assert [r["share_id"] for r in json.loads(path.read_text())["shares"]] == [live.share_id]  # rewritten clean
    again.revoke(live.share_id)
    assert not path.exists()
