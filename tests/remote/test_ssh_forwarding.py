"""`oh share ssh` lends nothing but the share's socket (issue 36, item 6; docs/security.md §11.6), against a real sshd:
the user's ssh config forwards the agent, X11 and ports for every host, and a real ssh-agent runs here. While the share
is up, the remote side's session has no SSH_AUTH_SOCK and no DISPLAY, and none of the config's ports listens; the
share itself works (an agent there runs a command here)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import psutil
import pytest

from waiting import poll_until

from . import sshd as sshd_mod

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sshd_mod.available(), reason="needs root, /usr/sbin/sshd, ssh and unshare"),
    pytest.mark.skipif(not os.path.exists("/usr/bin/ssh-agent"), reason="needs ssh-agent"),
]


@pytest.fixture(scope="module")
def sshd():
    server = sshd_mod.Sshd()
    yield server
    server.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _link_shells() -> list[psutil.Process]:
    """The remote side's `sh -c <LINK>` of the share (sshd's child; this machine is also the remote)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if len(cmd) >= 4 and cmd[0] == "sh" and cmd[1] == "-c" and "oh-link" in cmd:
            out.append(p)
    return out


def test_the_share_carries_no_agent_no_x11_and_no_configured_forward(mroh, sshd, tmp_path):
    agent_sock = tmp_path / "agent.sock"
    agent = subprocess.run(
        ["ssh-agent", "-a", str(agent_sock)], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    agent_pid = int(agent.split("SSH_AGENT_PID=", 1)[1].split(";", 1)[0])
    local, dynamic, remote = _free_port(), _free_port(), _free_port()
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host *\n  ForwardAgent yes\n  ForwardX11 yes\n  ForwardX11Trusted yes\n"
        f"  LocalForward 127.0.0.1:{local} 127.0.0.1:{sshd.port}\n  DynamicForward 127.0.0.1:{dynamic}\n"
        f"  RemoteForward 127.0.0.1:{remote} 127.0.0.1:{sshd.port}\n"
    )
    options = sshd.options()
    options[options.index("-F") + 1] = str(config)
    env = dict(mroh.env, SSH_AUTH_SOCK=str(agent_sock), DISPLAY=":77")
    share = subprocess.Popen(
        [sys.executable, "-m", "oh", "share", "ssh", "root@127.0.0.1", "--ttl", "1h", "--", *options],
        cwd=mroh.workspace,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    connect_file = sshd.state() / "connect.json"
    try:
        poll_until(lambda: connect_file.exists() or share.poll() is not None, 40, "the remote connect file")
        assert share.poll() is None, share.communicate()
        # the share works: an agent on the remote side runs a command here
        out = subprocess.run(
            ["oh", "run", "echo over-ssh > from-remote.txt"],
            capture_output=True, text=True, timeout=60, env=sshd.remote_env(), cwd=sshd.home,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert (mroh.workspace / "from-remote.txt").read_text() == "over-ssh\n"
        assert json.loads(connect_file.read_text())["url"].startswith("unix:")
        [link] = poll_until(lambda: _link_shells() or None, 20, "the remote link shell")
        remote_env = link.environ()
        assert "SSH_AUTH_SOCK" not in remote_env, remote_env.get("SSH_AUTH_SOCK")
        assert "DISPLAY" not in remote_env
        for port in (local, dynamic, remote):
            assert not _listening(port), f"port {port} of the user's ssh config was forwarded"
    finally:
        share.send_signal(signal.SIGINT)
        share.communicate(timeout=30)
        os.kill(agent_pid, signal.SIGTERM)
    assert share.returncode == 0


def test_the_same_config_forwards_everything_with_plain_ssh(sshd, tmp_path):
    """The control: plain ssh with that config forwards the agent and the ports here (so the test above shows oh's
    options at work, not a server that refuses them)."""
    agent_sock = tmp_path / "agent.sock"
    agent = subprocess.run(
        ["ssh-agent", "-a", str(agent_sock)], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    agent_pid = int(agent.split("SSH_AGENT_PID=", 1)[1].split(";", 1)[0])
    local = _free_port()
    config = tmp_path / "ssh_config"
    config.write_text(f"Host *\n  ForwardAgent yes\n  LocalForward 127.0.0.1:{local} 127.0.0.1:{sshd.port}\n")
    options = sshd.options()
    options[options.index("-F") + 1] = str(config)
    env = dict(os.environ, SSH_AUTH_SOCK=str(agent_sock))
    probe = subprocess.Popen(
        ["ssh", "-o", "BatchMode=yes", *options, "root@127.0.0.1", 'echo "agent=${SSH_AUTH_SOCK:-none}"; cat'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert probe.stdout is not None
        line = probe.stdout.readline()
        assert line.startswith("agent=/"), line
        assert poll_until(lambda: _listening(local) or None, 20, "the configured LocalForward")
    finally:
        probe.communicate(input="", timeout=30)
        os.kill(agent_pid, signal.SIGTERM)
