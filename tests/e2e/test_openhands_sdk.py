"""OpenHands acting in a real VS Code (code-server + headless Chromium) through oh: a scripted,
offline SDK agent (tests/integrations/openhands_sdk/scripted_agent.py, run in the SDK's Python 3.12 venv)
calls install() once and its standard terminal and file-editor tools act in the workbench; then
OpenHands V0's VsCodeRuntime (tests/integrations/openhands_v0/scripted_runtime.py, V0 venv) does the same
kind of work there."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from .conftest import REPO, VsCode, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]


def venv_for(name: str) -> str:
    proc = subprocess.run([str(REPO / "scripts" / "integration-venvs"), name], capture_output=True, text=True, timeout=1800, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
    proc = vscode.oh("start", "--runtime", "vscode", "--workspace", str(vscode.workspace), "--detach", "--no-open", "--json", timeout=60)
    assert proc.returncode == 0, proc
    info = json.loads(proc.stdout)
    wait_until(lambda: any(s.get("instance_id") == info["instance_id"] and s.get("editors") for s in vscode.sessions()), 60,
               "the extension to register")
    yield info
    vscode.oh("stop", "--all", timeout=30)


def test_sdk_agent_acts_in_vscode(vscode: VsCode, backend: dict):
    venv = venv_for("openhands-sdk")
    t0 = time.monotonic()
    env = dict(vscode.env, LITELLM_LOCAL_MODEL_COST_MAP="True", OPENHANDS_SUPPRESS_BANNER="1")
    run = subprocess.run([os.path.join(venv, "bin", "python"), str(REPO / "tests/integrations/openhands_sdk/scripted_agent.py"), str(vscode.workspace)],
                         capture_output=True, text=True, env=env, timeout=900, cwd=vscode.workspace)
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    print(f"scripted SDK agent finished in {time.monotonic() - t0:.1f} s (incl. ~30 s SDK import)")
    ws = os.path.realpath(vscode.workspace)
    problems = []

    def check(cond, what):
        if not cond:
            problems.append(what)

    check(out["_oh_tools"], "the SDK's terminal is oh's")
    check(not out["create"]["is_error"] and out["create"]["new_content"].startswith("def greet"), f"create: {out['create']}")
    check(out["exit3"]["exit_code"] == 3 and "failing" in out["exit3"]["text"], f"exit3: {out['exit3']}")
    check(out["exit3"]["working_dir"] == ws, f"shell starts in the conversation dir: {out['exit3']}")
    check(out["replace"]["old_content"] == "def greet():\n    return 'hi'\n\nprint(greet())\n", f"replace: {out['replace']}")
    check((vscode.workspace / "app.py").read_text() == "def greet():\n    return 'hello'\n\nprint(greet())\n", "app.py edited in VS Code")
    check("     2\t    return 'hello'" in out["view"]["text"], f"view: {out['view']}")
    check(out["run"]["exit_code"] == 0 and "hello" in out["run"]["text"], f"run: {out['run']}")
    check((vscode.workspace / "a.txt").read_text() == "A\n" and (vscode.workspace / "b.txt").read_text() == "B\n", "parallel creates")
    check("parallel-42" in out["par_echo"]["text"], f"par_echo: {out['par_echo']}")
    check(out["soft"]["exit_code"] == -1 and "started" in out["soft"]["text"], f"soft: {out['soft']}")
    check(out["more"]["exit_code"] == 0 and "finished" in out["more"]["text"], f"more: {out['more']}")
    check(not out["reset"]["is_error"] and out["reset"]["command"] == "[RESET]", f"reset: {out['reset']}")
    check("mark=unset" in out["after"]["text"] and out["after"]["working_dir"] == ws, f"after reset: {out['after']}")
    log = vscode.extension_log()
    check("app.py" in log or "str_replace" in log or "edit" in log, "the extension log shows the actions")
    vscode.screenshot("openhands-sdk")
    assert not problems, "\n".join(problems)


def test_v0_runtime_acts_in_vscode(vscode: VsCode, backend: dict):
    venv = venv_for("openhands-v0")
    env = dict(vscode.env, LITELLM_LOCAL_MODEL_COST_MAP="True")
    run = subprocess.run([os.path.join(venv, "bin", "python"), str(REPO / "tests/integrations/openhands_v0/scripted_runtime.py"), str(vscode.workspace)],
                         capture_output=True, text=True, env=env, timeout=900, cwd=vscode.workspace)
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["create"]["type"] == "FileEditObservation", out["create"]
    assert out["exit3"]["type"] == "CmdOutputObservation" and out["exit3"]["exit_code"] == 3 and "v0-failing" in out["exit3"]["content"], out["exit3"]
    assert out["replace"]["type"] == "FileEditObservation", out["replace"]
    assert (vscode.workspace / "v0app.py").read_text() == "print('v0 hello')\n"
    assert out["view"]["type"] == "FileReadObservation" and "     1\tprint('v0 hello')" in out["view"]["content"], out["view"]
    assert out["run"]["exit_code"] == 0 and "v0 hello" in out["run"]["content"], out["run"]
