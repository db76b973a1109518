"""start / status / stop / token rotate / logs against real backend processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from .conftest import pid_alive, wait_for


def _connect(url: str, token: str, path: str = "/v1/agent"):
    return connect(url + path, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=5)


def test_start_detach_status_stop(oh):
    info = oh.start("vscode")
    assert set(info) == {"instance_id", "pid", "port", "url", "runtime", "workspace"}
    assert info["runtime"] == "vscode" and info["workspace"] == os.path.realpath(oh.workspace)
    assert info["url"] == f"ws://127.0.0.1:{info['port']}" and info["port"] > 0
    sf = oh.session_file(info["instance_id"])
    assert stat.S_IMODE(sf.stat().st_mode) == 0o600 and stat.S_IMODE(sf.parent.stat().st_mode) == 0o700
    token = oh.session(info["instance_id"])["token"]

    p = oh("status", "--json")
    assert p.returncode == 0
    assert token not in p.stdout and token not in p.stderr
    (s,) = json.loads(p.stdout)["sessions"]
    assert s["instance_id"] == info["instance_id"] and s["pid"] == info["pid"] and s["reachable"] is True
    assert s["editors"] == [] and s["agents"] == [] and s["stats"] == {"done": 0, "pending": 0, "errors": 0}
    assert s["token_fingerprint"] == oh.json("token", "show", "--json")["fingerprint"] and "token" not in s
    assert s["trace"].startswith(str(oh.home))

    text = oh("status", check=0).stdout
    assert info["instance_id"] in text and "waiting for VS Code" in text and token not in text

    p = oh("stop", "--json", check=0)  # picks the backend for cwd (the workspace)
    assert json.loads(p.stdout)["stopped"][0] == {
        "instance_id": info["instance_id"],
        "pid": info["pid"],
        "workspace": info["workspace"],
        "how": "shutdown",
    }
    assert not sf.exists()
    wait_for(lambda: not pid_alive(info["pid"]), 10, what="backend exit")
    p = oh("status", "--json")
    assert p.returncode == 3 and json.loads(p.stdout) == {"sessions": []}


def test_second_start_for_same_workspace_is_refused(oh):
    info = oh.start("vscode")
    sub = oh.workspace / "sub"
    sub.mkdir()
    p = oh("start", "--detach", "--runtime", "vscode", "--no-open", cwd=oh.workspace)
    assert p.returncode == 3
    assert info["instance_id"] in p.stderr and f"oh stop {info['instance_id']}" in p.stderr
    assert len(list((oh.home / "sessions").glob("*.json"))) == 1


def test_stale_session_after_sigkill_is_cleaned(oh):
    info = oh.start("vscode")
    os.kill(info["pid"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(info["pid"]), 10, what="SIGKILL")
    assert oh.session_file(info["instance_id"]).exists()  # nobody removed it yet
    p = oh("status", "--json")
    assert p.returncode == 3 and json.loads(p.stdout)["sessions"] == []
    assert not oh.session_file(info["instance_id"]).exists()
    # and the workspace can be served again (the kernel released the lock)
    again = oh.start("vscode")
    assert again["instance_id"] != info["instance_id"]


def test_stop_escalates_to_sigterm_when_control_fails(oh):
    info = oh.start("vscode")
    sf = oh.session_file(info["instance_id"])
    data = json.loads(sf.read_text())
    data["token"] = "wrong-token"  # the control request will be refused (401)
    sf.write_text(json.dumps(data))
    p = oh("stop", info["instance_id"], "--json", check=0)
    assert json.loads(p.stdout)["stopped"][0]["how"] == "sigterm"
    wait_for(lambda: not pid_alive(info["pid"]), 10, what="backend exit")
    assert not sf.exists()


def test_stop_all_and_nothing_to_stop(oh, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    a = oh.start("vscode")
    b = oh.start("vscode", other)
    assert {s["instance_id"] for s in oh.json("status", "--json")["sessions"]} == {a["instance_id"], b["instance_id"]}
    p = oh("stop", "--all", check=0)
    assert a["instance_id"] in p.stdout and b["instance_id"] in p.stdout
    p = oh("stop", "--all")
    assert p.returncode == 3 and "no backend is running" in p.stderr
    p = oh("stop", "nope")
    assert p.returncode == 3 and "oh status" in p.stderr


def test_port_taken_is_a_clear_error(oh):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        p = oh("start", "--detach", "--runtime", "vscode", "--no-open", "--port", str(port), timeout=40)
    assert p.returncode == 1
    assert str(port) in p.stderr and "port" in p.stderr.lower()
    assert list((oh.home / "sessions").glob("*.json")) == []


def test_token_rotate_switches_running_backends_live(oh):
    info = oh.start("vscode")
    old = oh.session(info["instance_id"])["token"]
    with _connect(info["url"], old) as ws:
        rotated = oh.json("token", "rotate", "--json")
        assert [u["instance_id"] for u in rotated["updated"]] == [info["instance_id"]]
        assert rotated["updated"][0]["closed"] >= 1 and rotated["failed"] == []
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=5)
        assert closed.value.rcvd.code == 4001
    new = oh.session(info["instance_id"])["token"]
    assert new != old and oh("token", "show", "--reveal", check=0).stdout.strip() == new
    with pytest.raises(InvalidStatus) as refused:
        _connect(info["url"], old)
    assert refused.value.response.status_code == 401
    with _connect(info["url"], new):
        pass
    (s,) = oh.json("status", "--json")["sessions"]
    assert s["token_fingerprint"] == rotated["fingerprint"]


def test_instance_completion_and_selection_by_prefix(oh):
    info = oh.start("vscode")
    env = {"_OH_COMPLETE": "complete_bash", "COMP_WORDS": "oh stop ", "COMP_CWORD": "2"}
    p = oh(env=env)
    assert info["instance_id"] in p.stdout.split()
    p = oh("stop", info["instance_id"][:4], cwd=oh.tmp, check=0)
    assert "stopped" in p.stdout
