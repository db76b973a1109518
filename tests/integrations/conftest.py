"""The OpenHands integration tests run inside their own Python 3.12 venvs (scripts/integration-venvs);
test_integrations.py, collected by the main suite, runs them there. In any other interpreter their
modules are not collected (they import the SDK at module level)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

collect_ignore_glob = []
if importlib.util.find_spec("openhands") is None or importlib.util.find_spec("openhands.sdk") is None:
    collect_ignore_glob.append("openhands_sdk/*")
if importlib.util.find_spec("openhands") is None or importlib.util.find_spec("openhands.runtime") is None:
    collect_ignore_glob.append("openhands_v0/*")


class OhBackend:
    """A real `oh start --detach --runtime local` with an isolated OH_HOME (also set in this process,
    so discovery through the session files finds it)."""

    def __init__(self, tmp: Path, runtime: str = "local", allow: list[Path] | None = None) -> None:
        self.tmp = tmp
        self.home = tmp / "ohhome"
        self.workspace = tmp / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.scratch = tmp / "scratch"  # stands in for /tmp: outside the workspace, allowed with --allow
        self.scratch.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
        env.update(OH_HOME=str(self.home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", PYTHONDONTWRITEBYTECODE="1")
        self.env = env
        args = ["start", "--detach", "--json", "--runtime", runtime, "-C", str(self.workspace)]
        dev_no_allow = os.environ.get("OH_IT_DEV_NO_ALLOW") == "1"  # TEMP until core's --allow lands
        for d in [] if dev_no_allow else (allow if allow is not None else [self.scratch]):
            args += ["--allow", str(d)]
        proc = self.oh(*args, timeout=60)
        assert proc.returncode == 0, f"oh start failed ({proc.returncode}): {proc.stdout}\n{proc.stderr}"
        self.info = json.loads(proc.stdout.strip().splitlines()[-1])

    def oh(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "oh", *args], capture_output=True, text=True, env=self.env, timeout=timeout,
                              cwd=str(self.workspace))

    def trace(self) -> list[dict]:
        path = self.info.get("trace")
        if not path or not Path(path).exists():
            return []
        return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        self.oh("stop", "--all", timeout=60)


@pytest.fixture
def oh_backend(tmp_path: Path, monkeypatch):
    b = OhBackend(tmp_path)
    monkeypatch.setenv("OH_HOME", str(b.home))
    yield b
    b.stop()


def wait_until(cond, timeout: float, what: str, interval: float = 0.05):
    end = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)
