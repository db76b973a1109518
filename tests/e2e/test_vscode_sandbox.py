"""The agent's shell sandboxed in a real VS Code (issue 27): code-server with the oh extension and its engine
terminal (the default mode), `oh start --runtime vscode` with the default sandbox (workspace-write), VS Code run with
a test-made HOME holding a fake ssh key. Real `oh run` agents: the workspace is writable, a marker outside it is not
written, the key and oh's session files are invisible, a loopback server on this machine is unreachable (network
off), the user's rc file still ran (its alias works), and the first observation says the shell is sandboxed."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from shell.home import make_home

from .conftest import VsCode

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

USER_SHELL = (make_home, "bash")  # conftest: VS Code runs with this HOME and $SHELL


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
    ssh = vscode.base / "home-good" / ".ssh"
    ssh.mkdir(mode=0o700)
    (ssh / "id_test").write_text("PRIVATE-KEY-MATERIAL\n")
    info = vscode.start_backend()
    yield info
    vscode.oh("stop", info["instance_id"], timeout=60)


def _run(vscode: VsCode, command: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "oh", "run", "--json", command],
        cwd=vscode.workspace,
        env=vscode.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"no JSON from oh run (rc {done.returncode}): {done.stdout!r} {done.stderr!r}") from None


def _code(obs: dict) -> int:
    return obs.get("extras", {}).get("metadata", {}).get("exit_code", obs.get("extras", {}).get("exit_code"))


def test_the_engine_terminal_is_confined_to_the_workspace(vscode: VsCode, backend: dict):
    # Outside the workspace and not under /tmp (the sandbox's /tmp is private anyway): the root directory, which
    # this user (root) could write unconfined.
    outside = Path("/") / f"oh-e2e-sandbox-{uuid.uuid4().hex[:12]}"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        first = _run(vscode, "echo inside > in.txt && fixture_alias")
        assert _code(first) == 0 and "alias works" in first["content"], first
        assert (vscode.workspace / "in.txt").read_text() == "inside\n"
        said = first["extras"]["metadata"]
        assert "[Sandbox: workspace-write" in said["prefix"] + said["suffix"], first  # said at once
        cases = {
            f"touch {outside}": lambda: not outside.exists(),
            "cat ~/.ssh/id_test": lambda: True,
            f"ls {vscode.oh_home}/sessions": lambda: True,
            f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {server.server_port}), 3)\"": lambda: (
                True
            ),
        }
        for command, unchanged in cases.items():
            obs = _run(vscode, command)
            assert _code(obs) != 0, (command, obs)
            assert "PRIVATE-KEY-MATERIAL" not in obs["content"] and backend["instance_id"] not in obs["content"]
            assert unchanged(), command
    finally:
        server.shutdown()
        outside.unlink(missing_ok=True)
