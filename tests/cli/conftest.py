"""Fixtures for the launcher CLI: real ``oh`` processes with ``OH_HOME`` (and HOME, XDG dirs) under tmp."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from waiting import poll_until

FAIL_KEYRING = "keyring.backends.fail.Keyring"
PLAIN_KEYRING = "keyrings.alt.file.PlaintextKeyring"


class Oh:
    """Runs ``python -m oh`` with an isolated environment."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "ohhome"
        self.user_home = tmp / "userhome"
        self.user_home.mkdir()
        self.workspace = tmp / "ws"
        self.workspace.mkdir()
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("OH_")
            and not k.startswith("XDG_")
            and k not in ("PYTHON_KEYRING_BACKEND", "VISUAL", "EDITOR")
        }
        env.update(
            OH_HOME=str(self.home),
            HOME=str(self.user_home),
            XDG_DATA_HOME=str(tmp / "xdg-data"),
            XDG_CONFIG_HOME=str(tmp / "xdg-config"),
            XDG_STATE_HOME=str(tmp / "xdg-state"),
            PYTHON_KEYRING_BACKEND=FAIL_KEYRING,
            COLUMNS="200",
            PYTHONDONTWRITEBYTECODE="1",
            OH_HISTORY="false",  # on by default (issue 39): tests of history pass --history (tests/conftest.py)
        )
        self.env = env
        self.started: list[dict] = []

    def __call__(
        self,
        *args: str,
        input: str | None = None,
        cwd: Path | None = None,
        env: dict | None = None,
        timeout: float = 30,
        check: int | None = None,
    ) -> subprocess.CompletedProcess:
        full_env = dict(self.env, **(env or {}))
        proc = subprocess.run(
            [sys.executable, "-m", "oh", *args],
            input=input,
            capture_output=True,
            text=True,
            cwd=cwd or self.workspace,
            env=full_env,
            timeout=timeout,
        )
        if check is not None:
            assert proc.returncode == check, (
                f"oh {' '.join(args)} -> {proc.returncode} (wanted {check})\nstdout: {proc.stdout}\nstderr: "
                f"{proc.stderr}"
            )
        return proc

    def json(self, *args: str, **kw) -> dict:
        proc = self(*args, **kw)
        try:
            return json.loads(proc.stdout)
        except ValueError:
            raise AssertionError(
                f"oh {' '.join(args)} did not print JSON (rc {proc.returncode})\nstdout: "
                f"{proc.stdout}\nstderr: {proc.stderr}"
            ) from None

    def start(self, runtime: str = "local", workspace: Path | None = None, *extra: str) -> dict:
        proc = self(
            "start",
            "--detach",
            "--json",
            "--runtime",
            runtime,
            "--no-open",
            "--workspace",
            str(workspace or self.workspace),
            *extra,
            timeout=40,
        )
        assert proc.returncode == 0, f"oh start failed ({proc.returncode}): {proc.stderr}"
        info = json.loads(proc.stdout)
        self.started.append(info)
        return info

    def agent(self, *args: str) -> subprocess.Popen:
        """An `oh` command left running (an agent waiting for its answer): the test reads its output with a bound
        (``communicate(timeout=...)``)."""
        return subprocess.Popen(
            [sys.executable, "-m", "oh", *args],
            cwd=self.workspace,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def pending(self, n: int = 1) -> list[dict]:
        """The approval requests `oh approvals --json` lists, once there are at least ``n`` (bounded: 30 s)."""

        def listed():
            rows = self.json("approvals", "--json")["approvals"]
            return rows if len(rows) >= n else None

        return poll_until(listed, 30, f"{n} pending approval(s)", 0.1)

    def session_file(self, instance_id: str) -> Path:
        return self.home / "sessions" / f"{instance_id}.json"

    def session(self, instance_id: str) -> dict:
        return json.loads(self.session_file(instance_id).read_text())

    def cleanup(self) -> None:
        # Every backend this OH_HOME serves, also one a test started without recording it (`oh start -d` run
        # through `oh(...)`): the suite must leave no process behind (issue 41).
        from oh import sessions
        from oh.config.paths import UnsafePath

        found = list(self.started)
        for sf in sorted((self.home / "sessions").glob("*.json")) if (self.home / "sessions").is_dir() else []:
            try:
                s = sessions.read(sf)
            except (OSError, UnsafePath):  # a session file a test planted as another user's
                continue
            # only a backend that still runs as that session (pid and start time): a session file left by a killed
            # backend names a pid the machine may since have given to another process (pid_max can be 32768)
            if s is not None and sessions.is_alive(s):
                found.append({"pid": s.pid})
        for info in {i["pid"]: i for i in found if isinstance(i.get("pid"), int)}.values():
            pid = info["pid"]
            if not _is_backend(pid):  # it ended, and its pid may be another process's now: never signal that
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _is_backend(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"oh.backend" in f.read().split(b"\0")
    except OSError:
        return False


@pytest.fixture
def oh(tmp_path: Path):
    runner = Oh(tmp_path)
    yield runner
    runner.cleanup()


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.05, what: str = "condition"):
    return poll_until(predicate, timeout, what, interval)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours counts as gone
        import psutil

        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except Exception:  # noqa: BLE001
        return True
