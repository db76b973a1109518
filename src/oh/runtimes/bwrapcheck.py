"""Whether bubblewrap works here (README "Sandbox"): found, and able to make the namespaces the agent shell's
sandbox uses; if not, what is wrong and the fix. Its own module, outside ``runtimes/local``, so that `oh doctor`
and `oh start` ask without importing the runtime (a third of a second); ``local/sandbox.py`` builds the sandbox.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass

from ..protocol import sandbox as rules

PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Check:
    ok: bool
    bwrap: str = ""
    problem: str = ""
    fix: str = ""

    @property
    def message(self) -> str:
        return rules.unavailable_message(self.problem, self.fix)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(4096).strip()
    except OSError:
        return ""


def _diagnose(stderr: str) -> tuple[str, str]:
    """(problem, fix) for a bubblewrap that did not start a namespace."""
    if _read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        return (
            (
                "user namespaces are restricted by AppArmor (Ubuntu 23.10+: "
                "kernel.apparmor_restrict_unprivileged_userns=1)"
            ),
            "allow bwrap with an AppArmor profile (Ubuntu ships one in the apparmor package: "
            "`sudo apt install apparmor-profiles`, or write /etc/apparmor.d/bwrap with `userns,` and "
            "`sudo systemctl reload apparmor`), or `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`",
        )
    if _read("/proc/sys/user/max_user_namespaces") == "0":
        return (
            "user namespaces are disabled (user.max_user_namespaces=0)",
            "`sudo sysctl user.max_user_namespaces=15000` (and the same in /etc/sysctl.d/ to keep it)",
        )
    if _read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        return (
            "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)",
            "`sudo sysctl kernel.unprivileged_userns_clone=1`",
        )
    tail = " ".join(stderr.strip().splitlines()[-2:])[:300] or "no message"
    return f"bubblewrap failed to start a sandbox ({tail})", "check that bwrap works: `bwrap --ro-bind / / true`"


@functools.lru_cache(maxsize=8)
def check(bwrap: str = "", path: str | None = None) -> Check:
    """Whether bubblewrap works here: found, and able to make the namespaces the sandbox uses."""
    system = platform.system()
    if system != "Linux":
        return Check(
            False,
            problem=f"the sandbox needs Linux with bubblewrap; this is {system or 'an unknown system'} "
            "(macOS's Seatbelt and Windows are not supported yet)",
            fix="run oh on Linux or in WSL2",
        )
    if (
        "microsoft" in _read("/proc/version").lower()
        and not os.path.isdir("/run/WSL")
        and "WSL2" not in _read("/proc/version")
    ):
        return Check(
            False, problem="WSL1 has no user namespaces", fix="convert the distribution: `wsl --set-version <distro> 2`"
        )
    program = shutil.which(bwrap or "bwrap", path=path) if not os.path.isabs(bwrap) else bwrap
    if not program or not os.access(program, os.X_OK):
        return Check(
            False,
            problem=f"bubblewrap is not installed ({bwrap or 'bwrap'} not found" + (")" if bwrap else " on PATH)"),
            fix="install it: `sudo apt install bubblewrap` (Debian, Ubuntu), `sudo dnf install bubblewrap` (Fedora), "
            "`sudo pacman -S bubblewrap` (Arch)",
        )
    argv = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net"]
    try:
        done = subprocess.run(
            [*argv, "--", "true"], capture_output=True, text=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(False, program, f"{program} could not be run ({exc})", "reinstall bubblewrap")
    if done.returncode != 0:
        problem, fix = _diagnose(done.stderr)
        return Check(False, program, problem, fix)
    return Check(True, program)
