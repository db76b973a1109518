"""Helpers for running the real MCP clients (Claude Code, Gemini CLI, Codex CLI) in an isolated HOME.

The clients are the npm packages pinned in tests/mcp/clients/package-lock.json, installed by
scripts/mcp-clients into .cache/mcp-clients (idempotent; a no-op when cached). Every client process
runs with HOME, XDG_*, CODEX_HOME and OH_HOME inside the test's tmp_path, telemetry and auto-update
off, and a timeout: nothing reads or writes the real user's files, nothing waits on the network.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLIENT_BIN = REPO / ".cache" / "mcp-clients" / "node_modules" / ".bin"
CLIENT_TIMEOUT = 90  # s, per client command (a loaded CI machine; the clients start in ~1-10 s)

# Variables of the developer's or CI's own setup that would leak into a client (their keys, their
# homes, their endpoints) or into oh (its home, its token).
_DROP_PREFIXES = (
    "OH_",
    "XDG_",
    "ANTHROPIC_",
    "CLAUDE_",
    "OPENAI_",
    "CODEX_",
    "GEMINI_",
    "GOOGLE_",
    "VERTEX",
    "NODE_OPTIONS",
)


def install_clients() -> None:
    """Run scripts/mcp-clients (fast when cached); fail with its output when it cannot install."""
    proc = subprocess.run([str(REPO / "scripts" / "mcp-clients")], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"scripts/mcp-clients failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"


class Sandbox:
    """An isolated user (HOME and friends), an oh home, and a workspace with a running local backend."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.oh_home = tmp / "ohhome"
        self.workspace = tmp / "ws"
        for d in (self.home, self.workspace):
            d.mkdir(parents=True)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(_DROP_PREFIXES) and k not in ("PYTHON_KEYRING_BACKEND", "PYTHONDONTWRITEBYTECODE")
        }
        env.update(
            HOME=str(self.home),
            USERPROFILE=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            CODEX_HOME=str(self.home / ".codex"),
            OH_HOME=str(self.oh_home),
            PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
            # Claude Code: no auto-update, no telemetry / error reporting / feedback surveys
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_TELEMETRY="1",
            DISABLE_ERROR_REPORTING="1",
            # Gemini CLI: no telemetry, no relaunch into a child process with a bigger heap
            GEMINI_TELEMETRY_ENABLED="false",
            GEMINI_CLI_NO_RELAUNCH="true",
            NO_COLOR="1",
            TERM="dumb",
        )
        self.env = env
        self.backend: dict | None = None
        self.procs: list[subprocess.Popen] = []

    def oh(self, *args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        # `python -m oh`: `oh mcp install` then writes the `oh` script next to this interpreter (the venv's)
        return subprocess.run(
            [sys.executable, "-m", "oh", *args],
            capture_output=True,
            text=True,
            cwd=cwd or self.workspace,
            env=self.env,
            timeout=timeout,
        )

    def start_backend(self) -> dict:
        proc = self.oh(
            "start",
            "--detach",
            "--json",
            "--runtime",
            "local",
            "--no-open",
            "--workspace",
            str(self.workspace),
            timeout=60,
        )
        assert proc.returncode == 0, f"oh start failed ({proc.returncode}): {proc.stderr}"
        self.backend = json.loads(proc.stdout)
        return self.backend

    def client(
        self, name: str, *args: str, cwd: Path | None = None, timeout: float = CLIENT_TIMEOUT, env: dict | None = None
    ) -> subprocess.CompletedProcess:
        """Run a client to completion; on timeout kill its whole process group (its `oh mcp` children too)."""
        exe = CLIENT_BIN / name
        assert exe.exists(), f"{exe} is missing: run scripts/mcp-clients"
        proc = subprocess.Popen(
            [str(exe), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=cwd or self.workspace,
            env=dict(self.env, **(env or {})),
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            out, err = proc.communicate()
            raise AssertionError(
                f"{name} {' '.join(args)} did not finish in {timeout} s\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}"
            ) from None
        finally:
            _kill_group(proc.pid)  # whatever it left running in its group (it should leave nothing)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def write_json(self, path: Path, data: dict) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2))

    def cleanup(self) -> None:
        if self.backend:
            _terminate(self.backend["pid"])


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _terminate(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
