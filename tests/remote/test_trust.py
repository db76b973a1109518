"""Nothing about trust changes for a shared agent (issue 28, docs/security.md §9): consent asks before its
command runs, the user decides on this machine, and the share credential cannot decide for itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from oh.launcher.control import control
from oh.sessions import Session


def test_consent_asks_for_a_shared_agents_command(roh):
    info = roh.start("local", None, "--consent", "commands")
    made = roh.share("--where", "gpu-box")
    agent_dir = roh.tmp / "elsewhere"
    agent_dir.mkdir()
    agent = subprocess.Popen(
        [sys.executable, "-m", "oh", "run", "touch shared-made.txt"],
        env=roh.agent_env(made),
        cwd=agent_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    rows = roh.pending()
    assert rows[0]["what"] == "touch shared-made.txt" and "gpu-box" in roh("approvals").stdout
    assert not (roh.workspace / "shared-made.txt").exists()
    # The share credential cannot decide: /v1/control refuses it before any frame (403).
    token = Path(made["token_file"]).read_text().strip()
    session = Session.from_dict(roh.session(info["instance_id"]))
    try:
        control(session, {"type": "approvals", "op": "allow", "id": rows[0]["id"]}, token=token)
        raise AssertionError("the share credential opened /v1/control")
    except Exception as exc:  # noqa: BLE001 - BackendUnreachable naming the HTTP status
        assert "403" in str(exc), exc
    roh("reject", rows[0]["id"], "--reason", "not from there", check=0)
    out, err = agent.communicate(timeout=60)
    assert agent.returncode != 0 and "REJECTED" in out + err and "not from there" in out + err
    assert not (roh.workspace / "shared-made.txt").exists()
