"""Share credentials (issue 28, docs/security.md §9): an agent elsewhere holds a credential that opens the agent role
of this one backend only, expires, and is revoked (alone, or with every other by `oh token rotate`); its agents are
named with where they run; `oh status` lists the shares."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from oh.client.errors import ConnectionLost, OhClientError
from oh.client.sync import SyncClient
from oh.launcher.control import control
from oh.sessions import Session
from waiting import poll_until

from .test_unix_socket import raw_request, upgrade


def token_of(made: dict) -> str:
    return Path(made["token_file"]).read_text().strip()


def test_share_files_are_private_and_never_print_the_credential(mroh):
    made = mroh.share("--ttl", "1h")
    token = token_of(made)
    for f in (made["token_file"], made["connect_file"]):
        assert Path(f).stat().st_mode & 0o777 == 0o600
    assert Path(made["token_file"]).parent.stat().st_mode & 0o777 == 0o700
    proc = mroh("share", "--ttl", "5m")
    assert token not in proc.stdout + proc.stderr and "OH_TOKEN_FILE=" in proc.stdout
    connect = json.loads(Path(made["connect_file"]).read_text())
    assert connect["url"] == made["env"]["OH_URL"] and connect["token"] == token
    s = mroh.session_data
    assert token not in (s["token"], s["editor_token"], s["decider_token"])  # never one of the backend's own


def test_share_credential_opens_the_agent_role_only(mroh):
    s = mroh.session_data
    token = token_of(mroh.share())
    battery = [
        ("/v1/agent", b"101"),
        ("/v1/status", b"200"),
        ("/v1/editor", b"401"),
        ("/v1/monitor", b"403"),
        ("/v1/control", b"403"),
    ]
    for path, code in battery:
        head = raw_request(s["socket"], upgrade("localhost", token, path=path))
        assert head.split(b" ")[1] == code, (path, head[:300])
    # The same over loopback TCP: the credential is the guard, not the transport.
    with socket.create_connection(("127.0.0.1", s["port"]), timeout=10) as c:
        c.sendall(upgrade(f"127.0.0.1:{s['port']}", token, path="/v1/control"))
        assert c.recv(64).split(b" ")[1] == b"403"


def test_only_the_decider_creates_or_revokes_shares(mroh):
    session = Session.from_dict(mroh.session_data)
    for frame in ({"op": "create", "where": "x"}, {"op": "revoke", "share_id": "s00000000"}):
        answer = control(session, {"type": "share", **frame})  # the agent token
        assert answer["error_id"] == "FORBIDDEN", answer


def test_revoke_closes_live_connections_and_other_shares_go_on(mroh):
    url = "unix:" + mroh.session_data["socket"]
    one, two = mroh.share("--where", "box-one"), mroh.share("--where", "box-two")
    t1 = token_of(one)
    c1, c2 = SyncClient.connect(url, t1), SyncClient.connect(url, token_of(two))
    try:
        assert "1" in c1.run("echo 1").content and "2" in c2.run("echo 2").content
        status = mroh("status").stdout
        assert f"share      {one['share_id']} box-one" in status and "@ box-one" in status, status
        out = mroh("share", "revoke", one["share_id"])
        assert out.returncode == 0 and "1 connection(s) closed" in out.stderr, out.stderr
        with pytest.raises((ConnectionLost, OhClientError)):
            c1.run("echo after", timeout=10)
        with pytest.raises(OhClientError) as refused:
            SyncClient.connect(url, t1)
        assert "401" in str(refused.value) or "token" in str(refused.value).lower()
        assert "still" in c2.run("echo still").content
        assert not Path(one["token_file"]).exists()
    finally:
        c1.close()
        c2.close()


def test_expiry_is_checked_at_the_handshake_and_ends_live_connections(mroh):
    url = "unix:" + mroh.session_data["socket"]
    made = mroh.share("--ttl", "3s")
    token = token_of(made)
    c = SyncClient.connect(url, token)
    assert "ok" in c.run("echo ok").content
    poll_until(lambda: c.closed, 15, "the expired share's connection to close")
    with pytest.raises(OhClientError):
        SyncClient.connect(url, token)
    assert made["share_id"] not in mroh("share", "list").stdout


def test_token_rotate_revokes_every_share(roh, backend):
    url = "unix:" + backend["session"]["socket"]
    made = roh.share()
    c = SyncClient.connect(url, token_of(made))
    assert roh("token", "rotate").returncode == 0
    poll_until(lambda: c.closed, 10, "the share's connection to close")
    with pytest.raises(OhClientError):
        SyncClient.connect(url, token_of(made))
    assert roh.json("share", "list", "--json") == []


def test_a_share_expires_by_default_and_never_only_when_asked(mroh):
    """Issue 41: every `oh share` made a credential that never expired."""
    made = mroh.share()
    assert made["expires_at"] is not None and abs(made["expires_at"] - made["created"] - 24 * 3600) < 5, made
    proc = mroh("share")
    assert "expires in" in proc.stderr, proc.stderr
    forever = mroh.share("--ttl", "never")
    assert forever.get("expires_at") is None, forever


def test_bad_share_requests_are_clear(mroh):
    for args, text in (
        (["--ttl", "soon"], "--ttl"),
        (["--map", "relative=/x"], "absolute"),
        (["--docker", "--devcontainer"], "choose one"),
    ):
        proc = mroh("share", *args)
        assert proc.returncode in (1, 2) and text in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    proc = mroh("share", "revoke", "s12345678")
    assert proc.returncode == 1 and "oh share list" in proc.stderr


def test_connect_file_discovery_and_one_that_points_elsewhere(mroh, tmp_path):
    made = mroh.share()
    env = mroh.agent_env(made)
    for k in ("OH_URL", "OH_TOKEN_FILE"):
        env.pop(k)
    env["OH_CONNECT"] = made["connect_file"]
    proc = mroh("run", "echo via-connect-file", env=env, cwd=tmp_path)
    assert proc.returncode == 0 and "via-connect-file" in proc.stdout, proc.stderr
    # A connect file naming a socket that is not there (the share ended, a stale copy): a clear error, exit 5.
    stale = tmp_path / "stale.json"
    data = json.loads(Path(made["connect_file"]).read_text())
    stale.write_text(json.dumps({**data, "url": f"unix:{tmp_path}/gone.sock"}))
    stale.chmod(0o600)
    proc = mroh("run", "true", env={**env, "OH_CONNECT": str(stale)}, cwd=tmp_path)
    assert proc.returncode == 5 and "gone.sock" in proc.stderr, proc.stderr
    # An expired one says so before dialling.
    stale.write_text(json.dumps({**data, "expires_at": time.time() - 1}))
    proc = mroh("run", "true", env={**env, "OH_CONNECT": str(stale), "OH_NO_FASTPATH": "1"}, cwd=tmp_path)
    assert proc.returncode == 3 and "expired" in proc.stderr, proc.stderr


def test_a_shared_agents_claim_is_checked_in_the_workspaces_paths(mroh):
    """A claim through a share with a path map (issue 37, §3.18): the agent claims `/workspace/…` as it sees it;
    another agent's write of the same file in the workspace's own path is refused, and the claim's answer
    shows the agent's path. (Before: the claim kept `/workspace/…`, covered nothing here, and the write landed.)"""
    url = "unix:" + mroh.session_data["socket"]
    made = mroh.share("--where", "box-claim", "--map", f"/workspace={mroh.workspace}")
    target = mroh.workspace / "claimed-by-share.txt"
    with SyncClient.connect(url, token_of(made)) as boxed, SyncClient.connect(url, mroh.session_data["token"]) as here:
        got = boxed.claim(["/workspace/claimed-by-share.txt"], ttl=60)
        assert got.kind == "claim" and got.extras["paths"] == ["/workspace/claimed-by-share.txt"], got.extras
        refused = here.write(str(target), "mine\n")
        assert refused.kind == "error" and refused.error_id == "CLAIMED", refused.content
        assert not target.exists()
        boxed.release()
