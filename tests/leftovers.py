"""The suite leaves no process behind (issue 41: after a full run, a backend a test started was still running,
orphaned). ``scan`` lists the processes still running whose command line or working directory lies under the
run's base temporary directory (every test's workspace, OH_HOME and HOME are there); tests/conftest.py ends the
run with it."""

from __future__ import annotations

import os
import signal


def scan(basetemp: str, me: int) -> list[tuple[int, str]]:
    """(pid, command line) of live processes under ``basetemp`` (not ``me``, the pytest process itself)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if state == "Z":
            continue
        # whole path components only: /tmp/pytest-of-u/pytest-25 must not match another run's pytest-250
        if _names(argv, basetemp) or cwd == basetemp or cwd.startswith(basetemp + "/"):
            found.append((int(entry), argv[:200]))
    return found


def _names(argv: str, basetemp: str) -> bool:
    """Whether the command line names ``basetemp`` or a path under it (followed by "/", a space or its end)."""
    at = argv.find(basetemp)
    while at >= 0:
        after = argv[at + len(basetemp) : at + len(basetemp) + 1]
        if after in ("", "/", " "):
            return True
        at = argv.find(basetemp, at + 1)
    return False


def end(found: list[tuple[int, str]]) -> None:
    for pid, _ in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
