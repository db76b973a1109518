"""The system, processes, privileges, the network and secrets; shell builtins that only print or name."""

from __future__ import annotations

from oh.protocol.programs.record import Program

_PROCESSES = "stops processes"
_SYSTEM = "changes the system (services, mounts, firewall, schedules)"
_PRIVILEGES = "changes users or their rights"
_NETWORK = "talks to the network"
_SECRETS = "reads or changes secrets"

SYSTEM = (
    Program(("kill",), risky=_PROCESSES, opens_args=False, match=("kill -9 1",)),
    Program(("killall", "pkill"), risky=_PROCESSES, match=("pkill -f x",)),
    Program(
        ("reboot", "shutdown", "halt", "poweroff", "service", "launchctl", "crontab", "at"),
        risky=_SYSTEM,
        match=("shutdown now", "crontab -r"),
    ),
    Program(("systemctl",), risky=_SYSTEM, subcommands=True, match=("systemctl stop sshd",)),
    Program(("mount", "umount", "iptables", "nft", "ufw"), risky=_SYSTEM, match=("mount /dev/sdb /mnt",)),
    Program(
        ("passwd", "useradd", "userdel", "usermod", "visudo"),
        risky=_PRIVILEGES,
        match=("passwd", "useradd bob"),
    ),
    Program(
        ("curl", "wget", "scp", "sftp", "ssh", "nc", "ncat", "netcat", "socat", "telnet", "ftp"),
        risky=_NETWORK,
        network=True,
        match=("curl https://example.com", "ssh host ls"),
    ),
    Program(("docker", "podman", "kubectl"), risky=_SYSTEM, subcommands=True, match=("docker ps",)),
    Program(("terraform",), risky=_SYSTEM, subcommands=True, match=("terraform apply",)),
    Program(("security", "keyctl", "secret-tool", "gpg"), risky=_SECRETS, match=("gpg --export-secret-keys",)),
    # shell builtins and friends that print, test or name what they are given
    Program(
        ("echo", "printf", "test", "[", "true", ":", "cd", "pushd"),
        role="lister",
        opens_args=False,
        not_match=("echo hi", "printf '%s' x", "test -f x", "cd /tmp"),
    ),
    Program(
        ("false", "expr", "seq", "sleep", "export", "unset", "shift", "return", "exit", "wait"),
        opens_args=False,
        not_match=("seq 3", "sleep 1"),
    ),
)
