"""Whether bubblewrap works here (README "Sandbox"): found, and able to make the namespaces the agent shell's
sandbox uses; if not, what is wrong and the fix. Its own module, outside ``runtimes/local``, so that `oh doctor`
and `oh start` ask without importing the runtime (a third of a second); ``local/sandbox.py`` builds the sandbox.
"""

from __future__ import annotations

import functools
import os
import select
import time

from .. import programs

PROBE_TIMEOUT = 10.0


class Check:
    """The answer: ``ok``, the bwrap used, and when not ok the problem and its fix. A plain class, not a
    dataclass: `oh doctor` starts without importing dataclasses (docs/benchmarks.md, "Commands people type")."""

    __slots__ = ("ok", "bwrap", "problem", "fix")

    def __init__(self, ok: bool, bwrap: str = "", problem: str = "", fix: str = "") -> None:
        self.ok, self.bwrap, self.problem, self.fix = ok, bwrap, problem, fix

    def __repr__(self) -> str:
        return f"Check(ok={self.ok!r}, bwrap={self.bwrap!r}, problem={self.problem!r}, fix={self.fix!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Check) and (self.ok, self.bwrap, self.problem, self.fix) == (
            other.ok,
            other.bwrap,
            other.problem,
            other.fix,
        )

    def __hash__(self) -> int:  # frozen, as the dataclass it replaces: usable in sets and as a cache value
        return hash((self.ok, self.bwrap, self.problem, self.fix))

    @property
    def message(self) -> str:
        from ..protocol import sandbox as rules  # enum and typing: only when a message is wanted

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


class Probe:
    """A bubblewrap probe under way: started by :func:`start`, answered by :meth:`result`, so that `oh doctor`
    runs its other checks while bwrap makes its namespaces. Spawned with ``os.posix_spawn`` rather than
    ``subprocess`` (whose import is a tenth of the interpreter's start)."""

    def __init__(self, done: Check | None, program: str = "", pid: int = 0, err: int = -1) -> None:
        self._done, self._program, self._pid, self._err = done, program, pid, err

    def result(self, timeout: float = PROBE_TIMEOUT) -> Check:
        if self._done is None:
            self._done = self._finish(timeout)
        return self._done

    @property
    def program(self) -> str:
        """The bwrap this probe runs ("" when it could not even start one)."""
        return self._program

    def cancel(self) -> None:
        """Drop a probe whose answer is no longer wanted: bwrap killed and reaped, its pipe closed."""
        if self._done is None:
            os.kill(self._pid, 9)
            os.waitpid(self._pid, 0)  # bounded: SIGKILL cannot be caught, the child is gone at once
            os.close(self._err)
            self._done = Check(False, self._program, "cancelled")

    def _finish(self, timeout: float) -> Check:
        program, chunks, deadline = self._program, [], time.monotonic() + timeout
        try:
            while (left := deadline - time.monotonic()) > 0 and select.select([self._err], [], [], left)[0]:
                chunk = os.read(self._err, 4096)
                if not chunk:
                    break
                chunks.append(chunk)
            else:
                os.kill(self._pid, 9)
                os.waitpid(self._pid, 0)
                return Check(False, program, f"{program} could not be run (no answer in {timeout:g} s)", _REINSTALL)
        finally:
            os.close(self._err)
        status = os.waitstatus_to_exitcode(os.waitpid(self._pid, 0)[1])
        if status != 0:
            problem, fix = _diagnose(b"".join(chunks)[-8192:].decode("utf-8", "replace"))
            return Check(False, program, problem, fix)
        return Check(True, program)


_REINSTALL = "reinstall bubblewrap"
_UNTRUSTED = (
    "install bubblewrap where the sandbox cannot write (`sudo apt install bubblewrap`), or name it: "
    "`oh config set sandbox_bwrap /usr/bin/bwrap`"
)


def start(bwrap: str = "", path: str | None = None) -> Probe:
    """Begin the probe of :func:`check`; its answer comes from ``Probe.result()``."""
    system = os.uname().sysname if hasattr(os, "uname") else ""
    if system != "Linux":
        return Probe(
            Check(
                False,
                problem=f"the sandbox needs Linux with bubblewrap; this is {system or 'an unknown system'} "
                "(macOS's Seatbelt and Windows are not supported yet)",
                fix="run oh on Linux or in WSL2",
            )
        )
    if (
        "microsoft" in _read("/proc/version").lower()
        and not os.path.isdir("/run/WSL")
        and "WSL2" not in _read("/proc/version")
    ):
        return Probe(
            Check(
                False,
                problem="WSL1 has no user namespaces",
                fix="convert the distribution: `wsl --set-version <distro> 2`",
            )
        )
    if bwrap and os.path.isabs(bwrap) and (why := programs.why_untrusted(bwrap)):
        return Probe(Check(False, problem=f"bubblewrap refused: {why}", fix=_UNTRUSTED))
    program = programs.find(bwrap or "bwrap", path=path) if not os.path.isabs(bwrap) else bwrap
    if not program and (why := programs.refusals.get(bwrap or "bwrap", "")):
        return Probe(Check(False, problem=f"bubblewrap refused: {why}", fix=_UNTRUSTED))
    if not program or not os.access(program, os.X_OK):
        return Probe(
            Check(
                False,
                problem=f"bubblewrap is not installed ({bwrap or 'bwrap'} not found" + (")" if bwrap else " on PATH)"),
                fix="install it: `sudo apt install bubblewrap` (Debian, Ubuntu), `sudo dnf install bubblewrap` "
                "(Fedora), `sudo pacman -S bubblewrap` (Arch)",
            )
        )
    argv = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net"]
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_DUP2, write_end, 2),
    ]
    try:
        pid = os.posix_spawn(program, [*argv, "--", "true"], programs.env(), file_actions=actions)
    except OSError as exc:
        os.close(read_end)
        return Probe(Check(False, program, f"{program} could not be run ({exc})", _REINSTALL))
    finally:
        os.close(write_end)
    return Probe(None, program, pid, read_end)


@functools.lru_cache(maxsize=8)
def check(bwrap: str = "", path: str | None = None) -> Check:
    """Whether bubblewrap works here: found, and able to make the namespaces the sandbox uses."""
    return start(bwrap, path).result(timeout=PROBE_TIMEOUT)
