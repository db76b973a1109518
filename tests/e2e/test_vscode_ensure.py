"""Workspace bootstrap in a real VS Code (docs/protocol.md §3.14): the repository's `.oh/setup.sh` runs
once, as a job in a terminal of its own, before the first action; `oh ensure` installs a real npm project
(a `file:` dependency, no registry) as a job in a VS Code terminal once its request for the network is approved (the
editor's shell is sandboxed without it), and a second `oh ensure` is a no-op."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import VsCode, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from ensure_projects import node_project  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
    if shutil.which("npm") is None:
        pytest.skip("npm is needed")
    node_project(vscode.workspace)
    (vscode.workspace / ".oh").mkdir()
    (vscode.workspace / ".oh" / "setup.sh").write_text("echo setup-ran >> setup-count.txt\n")
    proc = vscode.oh(
        "start",
        "--runtime",
        "vscode",
        "--workspace",
        str(vscode.workspace),
        "--detach",
        "--no-open",
        "--json",
        timeout=60,
    )
    assert proc.returncode == 0, f"oh start failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    info = json.loads(proc.stdout)
    wait_until(
        lambda: any(s.get("instance_id") == info["instance_id"] and s.get("editors") for s in vscode.sessions()),
        60,
        "the extension to register with the backend",
    )
    yield info
    vscode.oh("stop", info["instance_id"], timeout=60)


def test_setup_script_then_ensure_in_vscode_terminals_then_a_noop(vscode: VsCode, backend: dict):
    agent = subprocess.Popen(
        [sys.executable, "-m", "oh", "ensure", "--json"],
        cwd=vscode.workspace,
        env=vscode.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The editor's shell is sandboxed without network: the install asks for it, as under the local runtime
        # (docs/protocol.md §3.18), and VS Code (an editor that answers consent) is someone who can answer.
        row = wait_until(lambda: (vscode.oh_json("approvals", "--json")["approvals"] or [None])[0], 120, "the ask")
        assert "NETWORK on (still sandboxed" in row["reason"] and " ci " in row["what"] + " ", row
        assert vscode.oh("approve", row["id"]).returncode == 0
        out, err = agent.communicate(timeout=300)
    finally:
        if agent.poll() is None:
            agent.kill()
    assert agent.returncode == 0, (out, err)
    obs = json.loads(out)
    node = obs["extras"]["targets"][0]
    assert obs["extras"]["state"] == "ready" and node["did"] == "installed" and " ci " in node["command"] + " ", obs
    assert "Workspace setup script .oh/setup.sh ran as job" in obs["content"], obs["content"]
    setup_job = obs["content"].split("ran as job ")[1].split()[0]
    assert (vscode.workspace / "setup-count.txt").read_text() == "setup-ran\n"
    assert (vscode.workspace / "node_modules" / ".bin" / "tiny").exists()
    # Both ran in terminals of their own, named after their jobs, that the user can watch.
    names = vscode.drive("terminals")["names"]
    assert any(node["job_id"] in n for n in names) and any(setup_job in n for n in names), names

    again = vscode.oh("ensure", timeout=120)
    assert again.returncode == 0 and "nothing to do" in again.stdout and "setup script" not in again.stdout, (
        again.stdout,
        again.stderr,
    )
    assert (vscode.workspace / "setup-count.txt").read_text() == "setup-ran\n"  # once per backend
