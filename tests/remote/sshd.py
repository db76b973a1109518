"""A real OpenSSH server for the tests (Debian's openssh-server): its own host key, config and authorized key, on a
free loopback port, run in a private mount namespace whose /run is a tmpfs (sshd wants /run/sshd; the machine's own
/run is left alone). The "remote" side is this user with its own HOME (sshd_config SetEnv) and a PATH whose `oh` the
test can take away."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from waiting import poll_until

REPO = Path(__file__).resolve().parents[2]
SSHD = "/usr/sbin/sshd"


def available() -> bool:
    return (
        os.path.exists(SSHD)
        and shutil.which("ssh") is not None
        and shutil.which("unshare") is not None
        and os.geteuid() == 0
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="ohssh", dir="/tmp"))  # short: the remote socket path must fit
        d = self.dir
        for key in ("hostkey", "id", "otherid"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
        (d / "authorized_keys").write_text((d / "id.pub").read_text())
        self.home = d / "rh"
        self.home.mkdir()
        self.bin = d / "bin"
        self.bin.mkdir()
        self.give_oh(True)
        self.port = _free_port()
        (d / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\nPidFile {d}/sshd.pid\n"
            f"AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin prohibit-password\n"
            "AllowStreamLocalForwarding yes\nStreamLocalBindUnlink yes\n"
            f"SetEnv HOME={self.home} OH_USER_SHELL=0 PATH={self.bin}:/usr/bin:/bin\n"
        )
        (d / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {(d / 'hostkey.pub').read_text()}")
        self.log = open(d / "sshd.log", "w")  # noqa: SIM115 - closed in stop()
        script = (
            f"mount -t tmpfs -o mode=755 tmpfs /run && mkdir -m 755 /run/sshd && exec {SSHD} -D -e -f {d}/sshd_config"
        )
        self.proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script], stderr=self.log)
        poll_until(
            lambda: "Server listening" in (d / "sshd.log").read_text() or self.proc.poll() is not None,
            15,
            "sshd to listen",
        )
        assert self.proc.poll() is None, (d / "sshd.log").read_text()

    def give_oh(self, present: bool) -> None:
        link = self.bin / "oh"
        if present and not link.exists():
            link.symlink_to(REPO / ".venv" / "bin" / "oh")
        elif not present and link.exists():
            link.unlink()

    def options(self, *, identity: str = "id", known_hosts: str = "known_hosts") -> list[str]:
        d = self.dir
        return [
            "-F", "/dev/null", "-p", str(self.port), "-i", str(d / identity), "-o", "IdentitiesOnly=yes",
            "-o", f"UserKnownHostsFile={d / known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes",
        ]  # fmt: skip

    def remote_env(self) -> dict[str, str]:
        """What an agent on the remote side has: its HOME and PATH, nothing of this side's oh."""
        return {"HOME": str(self.home), "PATH": f"{self.bin}:/usr/bin:/bin", "OH_USER_SHELL": "0", "LANG": "C.UTF-8"}

    def state(self) -> Path:
        return self.home / ".local" / "state" / "oh"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
