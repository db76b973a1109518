"""An agent on another machine acting in a real VS Code (issue 28 item 4): code-server with the oh extension,
`oh start --runtime vscode`, `oh share ssh` to a real sshd started by the test (tests/remote/sshd.py: its own host
key, port and HOME for the "remote" side). The remote agent, with no flags and none of this side's session files,
runs `oh run` and `oh mcp`'s run tool and reads a file with the Python client: each action is executed by the
editor (the backend's only executor), and the share's end leaves nothing on the remote."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from remote import sshd as sshd_mod
from remote.agent import client_read, mcp_run
from waiting import poll_until

from .conftest import VsCode

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not sshd_mod.available(), reason="needs root, /usr/sbin/sshd, ssh and unshare"),
]


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
    info = vscode.start_backend()
    yield info
    vscode.oh("stop", info["instance_id"], timeout=60)


@pytest.fixture(scope="module")
def sshd():
    server = sshd_mod.Sshd()
    yield server
    server.stop()


def _remote(sshd, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=120, env=sshd.remote_env(), cwd=sshd.home)


def test_an_agent_over_ssh_acts_through_vs_code(vscode: VsCode, backend: dict, sshd):
    share = subprocess.Popen(
        [sys.executable, "-m", "oh", "share", "ssh", "root@127.0.0.1", "--ttl", "1h", "--", *sshd.options()],
        cwd=vscode.workspace,
        env=vscode.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    connect_file = sshd.state() / "connect.json"
    try:
        poll_until(lambda: connect_file.exists() or share.poll() is not None, 60, "the remote connect file")
        assert share.poll() is None, share.communicate()
        ran = _remote(sshd, "oh", "run", "--json", "echo over-ssh > ssh-made.txt && echo done-remote")
        assert ran.returncode == 0, (ran.stdout, ran.stderr)
        obs = json.loads(ran.stdout)
        assert obs["observation"] == "run" and "done-remote" in obs["content"], obs
        assert (vscode.workspace / "ssh-made.txt").read_text() == "over-ssh\n"
        assert "mcp-over-ssh" in mcp_run(["env"], "echo mcp-over-ssh", cwd=str(sshd.home), env=sshd.remote_env())
        (vscode.workspace / "host-note.txt").write_text("written on the host\n")
        got = client_read([], str(vscode.workspace / "host-note.txt"), cwd=str(sshd.home), env=sshd.remote_env())
        assert got["url"].startswith("unix:") and got["content"].endswith("written on the host\n")
        # The editor executed them: this backend's runtime is VS Code, and the shared agent's actions are counted.
        (row,) = [s for s in vscode.sessions() if s.get("instance_id") == backend["instance_id"]]
        assert row["runtime"] == "vscode" and row["editors"], row
    except Exception:
        vscode.screenshot("vscode-over-ssh-failed")
        raise
    finally:
        share.send_signal(signal.SIGINT)
        _, err = share.communicate(timeout=30)
    assert share.returncode == 0, err
    assert not connect_file.exists() and not any((sshd.state() / "sock").iterdir())
