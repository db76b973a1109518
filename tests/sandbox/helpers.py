"""The real `oh` processes the sandbox tests drive (issue 27): ``Oh`` runs `oh` commands against one OH_HOME, one
user HOME and one workspace of a test's own, with a directory outside the workspace for marker files; ``connect_agent``
and ``watch`` connect to the backend it started. One copy for every file of tests/sandbox that starts `oh`
(the ``oh`` fixture of tests/sandbox/conftest.py makes one per test and stops its backends)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from oh.client.aio import Client
from waiting import poll_until

#: How long an agent's `oh` command or client call may take once its answer is given.
AGENT_WAIT = 60


class Oh:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "ohhome"
        self.user_home = tmp / "userhome"
        (self.user_home / ".ssh").mkdir(parents=True)
        self.secret = "ssh-" + secrets.token_hex(8)
        (self.user_home / ".ssh" / "id_ed25519").write_text(self.secret)
        self.workspace = tmp / "ws"
        self.workspace.mkdir()
        self.outside = tmp / "outside"
        self.outside.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "XDG_"))}
        env.update(
            OH_HOME=str(self.home),
            HOME=str(self.user_home),
            PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
            PYTHONDONTWRITEBYTECODE="1",
            OH_USER_SHELL="0",
            # in the backend's environment only (OH_*SECRET never reaches the agent shell): no route may show it
            OH_TEST_BACKEND_SECRET="env-" + secrets.token_hex(8),
        )
        self.env = env
        self.pids: list[int] = []

    def __call__(self, *args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "oh", *args],
            capture_output=True,
            text=True,
            cwd=self.workspace,
            env=dict(self.env, **(env or {})),
            timeout=timeout,
        )

    def start(self, *extra: str, env: dict | None = None) -> dict:
        p = self("start", "--detach", "--json", "--runtime", "local", "--no-open", *extra, env=env)
        assert p.returncode == 0, p.stderr
        info = json.loads(p.stdout)
        self.pids.append(info["pid"])
        return info

    def agent(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "oh", *args],
            cwd=self.workspace,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run_json(self, command: str, *extra: str) -> dict:
        p = self("run", "--json", *extra, command)
        return json.loads(p.stdout)

    def pending(self) -> list[dict]:
        """The approval requests waiting for an answer, once there is one (bounded: 30 s)."""

        def listed():
            rows = json.loads(self("approvals", "--json").stdout)["approvals"]
            return rows or None

        return poll_until(listed, 30, "a pending approval", 0.1)

    def stop(self) -> None:
        self("stop", "--all")

    def session(self) -> dict:
        """The session file of the one backend running (url, token)."""
        [row] = json.loads(self("status", "--json").stdout)["sessions"]
        return json.loads((self.home / "sessions" / f"{row['instance_id']}.json").read_text())


async def connect_agent(oh: Oh) -> Client:
    """An agent connected to the backend ``oh`` started, with the agent token of its session file."""
    sess = oh.session()
    return await Client.connect(sess["url"], sess["token"], name="sandbox-test")


async def watch(oh: Oh):
    """A monitor on the backend (what the live view of `oh start` is): someone can answer now."""
    from websockets.asyncio.client import connect

    sess = oh.session()
    conn = await connect(sess["url"] + "/v1/monitor", additional_headers={"Authorization": f"Bearer {sess['token']}"})
    await asyncio.wait_for(conn.recv(), 10)  # the snapshot: subscribed
    return conn
