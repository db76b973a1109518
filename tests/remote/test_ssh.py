"""Another machine over OpenSSH (issue 28): `oh share ssh` against a real sshd started by the test. The agent on the
"remote" side (its own HOME, no session files) runs `oh run`, `oh mcp` and the Python client with no flags; they
execute here. The ssh process killed: the link comes back, the action in flight gets a clear error and is not run
again. The share stopped: the remote socket and connect file are gone. Failures retrying cannot fix are clear."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from waiting import poll_until

from . import sshd as sshd_mod
from .agent import client_read, mcp_run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sshd_mod.available(), reason="needs root, /usr/sbin/sshd, ssh and unshare"),
]


@pytest.fixture(scope="module")
def sshd():
    server = sshd_mod.Sshd()
    yield server
    server.stop()


def start_share(mroh, sshd, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "oh", "share", "ssh", "root@127.0.0.1", "--ttl", "8h", *extra, "--", *sshd.options()],
        cwd=mroh.workspace,
        env=mroh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def remote(sshd, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout, env=sshd.remote_env(), cwd=sshd.home
    )


def link_state(mroh) -> str:
    rows = mroh.json("share", "list", "--json")
    return next((r.get("link", {}).get("state", "") for r in rows if r["where"].startswith("ssh ")), "")


def ssh_child(share: subprocess.Popen) -> psutil.Process | None:
    kids = [p for p in psutil.Process(share.pid).children() if p.name() == "ssh"]
    return kids[0] if kids else None


def test_agent_elsewhere_over_ssh(mroh, sshd):
    share = start_share(mroh, sshd)
    connect_file = sshd.state() / "connect.json"
    try:
        poll_until(lambda: connect_file.exists() or share.poll() is not None, 40, "the remote connect file")
        assert share.poll() is None, share.communicate()
        assert connect_file.stat().st_mode & 0o777 == 0o600
        rsock = json.loads(connect_file.read_text())["url"][5:]
        assert (sshd.state() / "sock").stat().st_mode & 0o777 == 0o700 and rsock.startswith(str(sshd.state()))
        # The remote agent, with no flags: `oh run` (fast path and full CLI), MCP, the Python client.
        for fast in ("", "1"):
            out = remote(sshd, "env", f"OH_NO_FASTPATH={fast}", "oh", "run", f"echo remote{fast} >> from-remote.txt")
            assert out.returncode == 0, out.stderr
        assert (mroh.workspace / "from-remote.txt").read_text() == "remote\nremote1\n"
        assert "mcp-over-ssh" in mcp_run(["env"], "echo mcp-over-ssh", cwd=str(sshd.home), env=sshd.remote_env())
        (mroh.workspace / "here.txt").write_text("on the host\n")
        got = client_read([], str(mroh.workspace / "here.txt"), cwd=str(sshd.home), env=sshd.remote_env())
        assert got["url"] == f"unix:{rsock}" and got["content"].endswith("on the host\n")
        assert link_state(mroh) == "up" and "ssh root@127.0.0.1" in mroh("status").stdout
        _link_drops_and_comes_back(mroh, sshd, share)
    finally:
        share.send_signal(signal.SIGINT)
        _, err = share.communicate(timeout=30)
    assert share.returncode == 0, err
    assert "ended" in err
    assert not connect_file.exists() and not any((sshd.state() / "sock").iterdir())  # nothing left on the remote
    assert mroh.json("share", "list", "--json") == [] or all(
        not r["where"].startswith("ssh") for r in mroh.json("share", "list", "--json")
    )


def test_the_openhands_sdk_on_the_remote_side(mroh, sshd):
    """The SDK's own agent loop (its 3.12 venv, a scripted LLM) on the remote side, with only what the share wrote
    there (the connect file in its HOME): its file_editor and terminal tools act here, marked as the ssh share's."""
    from .container import REPO
    from .test_container import sdk_results, sdk_venv

    venv = sdk_venv()
    share = start_share(mroh, sshd)
    connect_file = sshd.state() / "connect.json"
    try:
        poll_until(lambda: connect_file.exists() or share.poll() is not None, 40, "the remote connect file")
        assert share.poll() is None, share.communicate()
        script = str(Path(__file__).with_name("sdk_in_box.py"))
        env = {**sshd.remote_env(), "PYTHONPATH": str(REPO / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run(
            [str(venv / "bin" / "python"), script, str(mroh.workspace)],
            capture_output=True, text=True, timeout=300, env=env, cwd=sshd.home,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        seen = json.loads(proc.stdout.strip().splitlines()[-1])
        assert len(seen) == 3 and not any("AGENT ERROR" in t for t in seen.values()), seen
        assert (mroh.workspace / "boxed.txt").read_text() == "sdk in the box\n"  # ran here
        assert "sdk in the box" in seen["call_2"] and "sdk in the box" in seen["call_3"], seen
        poll_until(lambda: len(sdk_results(mroh)) >= 3, 10, "the SDK's actions in the trace")
        names = {r["agent_name"] for r in sdk_results(mroh)}
        assert len(names) == 1 and "ssh" in names.pop()  # marked with where it runs
    finally:
        share.send_signal(signal.SIGINT)
        share.communicate(timeout=30)
    assert not connect_file.exists()


def _link_drops_and_comes_back(mroh, sshd, share) -> None:
    """An action in flight when the ssh process dies: the agent gets a clear error (exit 5) and oh does not run it
    again; the link comes back by itself and the next action runs once."""
    inflight = subprocess.Popen(
        ["oh", "run", "touch started.txt; sleep 3; echo late >> late.txt"],
        env=sshd.remote_env(),
        cwd=sshd.home,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = mroh.workspace / "started.txt"
    poll_until(lambda: started.exists() or inflight.poll() is not None, 20, "the action to be in flight")
    ssh = ssh_child(share)
    assert ssh is not None
    ssh.kill()
    _, err = inflight.communicate(timeout=30)
    assert inflight.returncode == 5 and "connection" in err.lower(), (inflight.returncode, err)
    poll_until(
        lambda: (c := ssh_child(share)) is not None and c.pid != ssh.pid and link_state(mroh) == "up",
        40,
        "the link to come back",
    )
    out = remote(sshd, "oh", "run", "echo after >> after.txt")
    assert out.returncode == 0, out.stderr
    time.sleep(3.5)  # past the interrupted command's own end: had it been re-sent or left running, late.txt would exist
    assert not (mroh.workspace / "late.txt").exists()
    assert (mroh.workspace / "after.txt").read_text() == "after\n"


@pytest.mark.parametrize(
    "case, expect",
    [
        ("host key", "host key"),
        ("auth", "refused the authentication"),
        ("no oh", "has no `oh`"),
        ("long path", "over the limit"),
    ],
)
def test_what_retrying_cannot_fix_is_a_clear_error(mroh, sshd, tmp_path, case, expect):
    extra, options = [], sshd.options()
    if case == "host key":
        (sshd.dir / "wrong_hosts").write_text(f"[127.0.0.1]:{sshd.port} {(sshd.dir / 'otherid.pub').read_text()}")
        options = sshd.options(known_hosts="wrong_hosts")
    elif case == "auth":
        options = sshd.options(identity="otherid")
    elif case == "no oh":
        sshd.give_oh(False)
    else:
        extra = ["--remote-dir", "/tmp/" + "x" * 100]
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "oh", "share", "ssh", "root@127.0.0.1", *extra, "--", *options],
            cwd=mroh.workspace, env=mroh.env, capture_output=True, text=True, timeout=90,
        )  # fmt: skip
    finally:
        sshd.give_oh(True)
    assert proc.returncode == 1 and expect in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert all(not r["where"].startswith("ssh") for r in mroh.json("share", "list", "--json"))  # no share left behind
    assert not (sshd.state() / "connect.json").exists()


def test_an_ssh_share_is_resumed_after_the_backend_restarts(roh, backend, sshd):
    """`oh stop` ends the link (its `oh share ssh` stops with its backend) but not the share; after `oh start` the
    share is listed down with the command that brings it back, and `--resume ID` links the same credential again."""
    connect_file = sshd.state() / "connect.json"
    share = start_share(roh, sshd)
    poll_until(lambda: connect_file.exists() or share.poll() is not None, 40, "the remote connect file")
    assert share.poll() is None, share.communicate()
    first = json.loads(connect_file.read_text())
    assert remote(sshd, "oh", "run", "echo one >> resumed.txt").returncode == 0
    roh("stop", check=0)
    _, err = share.communicate(timeout=30)
    assert share.returncode == 1 and "backend stopped" in err, err
    assert not connect_file.exists()  # the link's end cleaned the remote side

    roh.start()
    (row,) = roh.json("share", "list", "--json")
    assert row["share_id"] == first["share_id"] and row["link"]["state"] == "down"
    assert f"--resume {row['share_id']}" in row["link"]["reason"]
    again = subprocess.Popen(
        [sys.executable, "-m", "oh", "share", "ssh", "root@127.0.0.1", "--resume", row["share_id"], "--"]
        + sshd.options(),
        cwd=roh.workspace,
        env=roh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        poll_until(lambda: connect_file.exists() or again.poll() is not None, 40, "the resumed connect file")
        assert again.poll() is None, again.communicate()
        assert json.loads(connect_file.read_text())["token"] == first["token"]  # the same credential, no new share
        out = remote(sshd, "oh", "run", "echo two >> resumed.txt")
        assert out.returncode == 0, out.stderr
        assert (roh.workspace / "resumed.txt").read_text() == "one\ntwo\n"
        assert roh.json("share", "list", "--json")[0]["link"]["state"] == "up"
        # A second link of the same share would take the remote socket from the first: refused at once.
        twice = subprocess.run(
            [sys.executable, "-m", "oh", "share", "ssh", "root@127.0.0.1", "--resume", row["share_id"], "--"]
            + sshd.options(),
            cwd=roh.workspace,
            env=roh.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert twice.returncode == 1 and "linked already" in twice.stderr, twice.stderr
        assert again.poll() is None and connect_file.exists()
        out = remote(sshd, "oh", "run", "echo three >> resumed.txt")
        assert out.returncode == 0, out.stderr
        assert roh.json("share", "list", "--json")[0]["link"]["state"] == "up"
    finally:
        again.send_signal(signal.SIGINT)
        again.communicate(timeout=30)
    assert roh.json("share", "list", "--json") == []  # ending the resumed link ends the share, as always
