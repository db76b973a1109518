"""The battery (battery.py) through real backends (issue 17): the local runtime via `oh start` and the
Python client, and the headless editor (`oh attach`) serving the VS Code runtime. The user's shell is
bash or zsh with the realistic HOME of home.py."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from oh.client.aio import Client

from .battery import CASES
from .drivers import ClientDriver, oh, oh_env, run_battery
from .home import make_home

pytestmark = pytest.mark.timeout(400)
SHELLS = [s for s in ("bash", "zsh") if shutil.which(s)]


async def _client(env, workspace) -> tuple[Client, dict]:
    p = oh(env, workspace, "status", "--json")
    sessions = json.loads(p.stdout)["sessions"]
    assert sessions, p
    sess = json.loads(
        (__import__("pathlib").Path(env["OH_HOME"]) / "sessions" / f"{sessions[0]['instance_id']}.json").read_text()
    )
    return await Client.connect(sess["url"], sess["token"], name="battery"), sess


async def _battery(driver, shell, workspace):
    # the user's rc files ran in the agent's shell
    out, code, _ = await driver.run("fixture_alias; fixture_function x; echo $FIXTURE_VAR; fixture-tool", None, None)
    assert (out, code) == ("alias works\nfunction works x\nfixture-value\nfixture tool ran\n", 0)
    # In the workspace: the agent's shell is sandboxed (README "Sandbox"), the rest of /tmp is private to it.
    failures = await run_battery(driver, shell, workspace / "cases", CASES)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("shell", SHELLS)
async def test_battery_local_runtime(tmp_path, workspace, shell):
    env = oh_env(make_home(tmp_path), shell, tmp_path / "ohhome")
    p = oh(
        env, workspace, "start", "--detach", "--json", "--runtime", "local", "--no-open", "--workspace", str(workspace)
    )
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    try:
        client, sess = await _client(env, workspace)
        assert sess["python"] == sys.executable or os.path.exists(sess["python"])
        driver = ClientDriver(client)
        try:
            await _battery(driver, shell, workspace)
        finally:
            await driver.close()
    finally:
        oh(env, workspace, "stop", info["instance_id"])


@pytest.mark.parametrize("shell", SHELLS)
async def test_battery_headless_editor(tmp_path, workspace, shell):
    env = oh_env(make_home(tmp_path), shell, tmp_path / "ohhome")
    p = oh(
        env, workspace, "start", "--detach", "--json", "--runtime", "vscode", "--no-open", "--workspace", str(workspace)
    )
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    attach = subprocess.Popen(
        [sys.executable, "-m", "oh", "attach"],
        cwd=workspace,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        client, _ = await _client(env, workspace)
        driver = ClientDriver(client)
        try:
            for _ in range(200):  # until the headless editor registered
                obs = await client.run("echo ready", blocking=True)
                if obs.kind == "run":
                    break
                await asyncio.sleep(0.1)
            assert obs.kind == "run" and obs.content == "ready\n", obs.content
            await _battery(driver, shell, workspace)
        finally:
            await driver.close()
    finally:
        oh(env, workspace, "stop", info["instance_id"])
        if attach.poll() is None:
            os.killpg(attach.pid, signal.SIGTERM)
        attach.wait(15)
