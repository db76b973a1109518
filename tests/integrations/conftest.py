"""The OpenHands integration tests run inside their own Python 3.12 venvs (scripts/integration-venvs);
test_integrations.py, collected by the main suite, runs them there. In any other interpreter their
modules are not collected (they import the SDK at module level)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from waiting import poll_until

collect_ignore_glob = []
if importlib.util.find_spec("openhands") is None or importlib.util.find_spec("openhands.sdk") is None:
    collect_ignore_glob.append("openhands_sdk/*")
if importlib.util.find_spec("openhands") is None or importlib.util.find_spec("openhands.runtime") is None:
    collect_ignore_glob.append("openhands_v0/*")


class OhBackend:
    """A real `oh start --detach --runtime local` with an isolated OH_HOME (also set in this process,
    so discovery through the session files finds it)."""

    def __init__(
        self, tmp: Path, runtime: str = "local", allow: list[Path] | None = None, extra: tuple[str, ...] = ()
    ) -> None:
        self.tmp = tmp
        self.home = tmp / "ohhome"
        self.workspace = tmp / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.scratch = tmp / "scratch"  # stands in for /tmp: outside the workspace, allowed with --allow
        self.scratch.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
        env.update(
            OH_HOME=str(self.home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", PYTHONDONTWRITEBYTECODE="1"
        )
        # Sandboxed (the default) with the sandbox's network on: `ensure` installs run inside it. No human answers
        # here, so a request to leave would be refused at once (tests/sandbox covers asking).
        env["OH_SANDBOX_NETWORK"] = "true"
        env["OH_HISTORY"] = "false"  # on by default (issue 39); these tests are not about it
        # The Unix socket's path must fit the OS limit (107 bytes): pytest's nested tmp paths do not.
        env["OH_SOCKET_DIR"] = tempfile.mkdtemp(prefix="ohs", dir="/tmp")
        self.env = env
        args = ["start", "--detach", "--json", "--runtime", runtime, "-C", str(self.workspace)]
        for d in allow if allow is not None else [self.scratch]:
            args += ["--allow", str(d)]
        proc = self.oh(*args, *extra, timeout=60)
        assert proc.returncode == 0, f"oh start failed ({proc.returncode}): {proc.stdout}\n{proc.stderr}"
        self.info = json.loads(proc.stdout.strip().splitlines()[-1])

    def oh(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "oh", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            cwd=str(self.workspace),
        )

    def _read_trace(self) -> list[dict]:
        out: list[dict] = []
        for path in sorted((self.home / "traces").glob("*.jsonl")):
            out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return out

    def trace(self) -> list[dict]:
        """Every record of this backend's JSONL trace under OH_HOME/traces, once it has settled (the backend
        flushes it every 0.25 s): non-empty and unchanged over two reads."""
        seen: list[list[dict]] = []

        def settled():
            seen.append(self._read_trace())
            return len(seen) >= 2 and seen[-1] and seen[-1] == seen[-2]

        wait_until(settled, 10, "the trace to settle", interval=0.3)
        return seen[-1]

    def stop(self) -> None:
        self.oh("stop", "--all", timeout=60)


@pytest.fixture
def oh_backend(tmp_path: Path, monkeypatch):
    b = OhBackend(tmp_path)
    monkeypatch.setenv("OH_HOME", str(b.home))
    yield b
    b.stop()


@pytest.fixture
def make_oh_backend(tmp_path: Path, monkeypatch):
    """A backend with extra `oh start` flags (e.g. --review), stopped after the test."""
    made: list[OhBackend] = []

    def make(*extra: str) -> OhBackend:
        b = OhBackend(tmp_path, extra=extra)
        monkeypatch.setenv("OH_HOME", str(b.home))
        made.append(b)
        return b

    yield make
    for b in made:
        b.stop()


def wait_until(cond, timeout: float, what: str, interval: float = 0.05):
    return poll_until(cond, timeout, what, interval)


@pytest.fixture
def shared_only(oh_backend: OhBackend, tmp_path: Path, monkeypatch):
    """Issue 28: this process (the agent side) reaches ``oh_backend`` only as an agent elsewhere would, through
    `oh share`: ``OH_URL=unix:…`` and ``OH_TOKEN_FILE``, and an OH_HOME of its own without session files, so no
    TCP address or local token is known to it. Returns the share's ``--json`` (its label is ``where``)."""
    proc = oh_backend.oh("share", "--where", "agent-box", "--json")
    assert proc.returncode == 0, f"oh share failed ({proc.returncode}): {proc.stdout}\n{proc.stderr}"
    share = json.loads(proc.stdout)
    assert share["env"]["OH_URL"].startswith("unix:")
    agent_home = tmp_path / "agent-ohhome"  # empty: no session file, no token, nothing but what the share gives
    agent_home.mkdir(mode=0o700)
    monkeypatch.setenv("OH_HOME", str(agent_home))
    for key, value in share["env"].items():
        monkeypatch.setenv(key, value)
    return share


def shared_actions(backend: OhBackend, share: dict) -> list[dict]:
    """The trace's results of actions from agents of ``share`` (their name carries ``@ WHERE``); asserts that
    no other agent acted."""
    results = [r for r in backend.trace() if r.get("kind") == "result" and r.get("agent")]
    strangers = [r for r in results if not str(r.get("agent_name", "")).endswith(f"@ {share['where']}")]
    assert not strangers, f"actions not made through the share: {strangers}"
    return results
