"""Runs the OpenHands integration suites inside their own Python 3.12 venvs (the SDK needs 3.12; the V0
package pins its own SDK), built or reused by scripts/integration-venvs. Each suite starts real `oh`
backends and drives the real SDK / V0 runtime; this test passes only when the whole suite passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def venv_for(name: str) -> Path:
    proc = subprocess.run(
        [str(REPO / "scripts" / "integration-venvs"), name],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=REPO,
        env=dict(os.environ, UV=os.environ.get("UV", str(Path(sys.executable).with_name("uv")))),
    )
    assert proc.returncode == 0, f"building the {name} venv failed:\n{proc.stderr[-4000:]}"
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("name,suite", [("openhands-sdk", "openhands_sdk"), ("openhands-v0", "openhands_v0")])
def test_suite_in_its_venv(name: str, suite: str, tmp_path: Path) -> None:
    venv = venv_for(name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        OPENHANDS_SUPPRESS_BANNER="1",
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        # The frameworks' suites drive oh with no human to answer: sandboxed with the network on, `ensure`
        # installs run inside the sandbox (a request to leave would be refused at once; tests/sandbox covers it).
        OH_SANDBOX_NETWORK="true",
    )
    proc = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pytest",
            f"tests/integrations/{suite}",
            "-q",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "t"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=2100,
    )
    tail = "\n".join(proc.stdout.splitlines()[-60:])
    print(tail)
    assert proc.returncode == 0, f"{suite} failed in {venv} (exit {proc.returncode}):\n{tail}\n{proc.stderr[-2000:]}"
    assert " passed" in tail and " failed" not in tail
