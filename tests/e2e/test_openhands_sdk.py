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
    proc = subprocess.run(
        [str(REPO / "scripts" / "integration-venvs"), name], capture_output=True, text=True, timeout=1800, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
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
    assert proc.returncode == 0, proc
    info = json.loads(proc.stdout)
    wait_until(
        lambda: any(s.get("instance_id") == info["instance_id"] and s.get("editors") for s in vscode.sessions()),
        60,
        "the extension to register",
    )
    yield info
    vscode.oh("stop", "--all", timeout=30)


def test_sdk_agent_acts_in_vscode(vscode: VsCode, backend: dict):
    venv = venv_for("openhands-sdk")
    t0 = time.monotonic()
    env = dict(vscode.env, LITELLM_LOCAL_MODEL_COST_MAP="True", OPENHANDS_SUPPRESS_BANNER="1")
    run = subprocess.run(
        [
            os.path.join(venv, "bin", "python"),
            str(REPO / "tests/integrations/openhands_sdk/scripted_agent.py"),
            str(vscode.workspace),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        cwd=vscode.workspace,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    print(f"scripted SDK agent finished in {time.monotonic() - t0:.1f} s (incl. ~30 s SDK import)")
    ws = os.path.realpath(vscode.workspace)
    problems = []

    def check(cond, what):
        if not cond:
            problems.append(what)

    check(out["_oh_tools"], "the SDK's terminal is oh's")
    check(
        not out["create"]["is_error"] and out["create"]["new_content"].startswith("def greet"),
        f"create: {out['create']}",
    )
    check(out["exit3"]["exit_code"] == 3 and "failing" in out["exit3"]["text"], f"exit3: {out['exit3']}")
    check(out["exit3"]["working_dir"] == ws, f"shell starts in the conversation dir: {out['exit3']}")
    check(
        out["replace"]["old_content"] == "def greet():\n    return 'hi'\n\nprint(greet())\n",
        f"replace: {out['replace']}",
    )
    check(
        (vscode.workspace / "app.py").read_text() == "def greet():\n    return 'hello'\n\nprint(greet())\n",
        "app.py edited in VS Code",
    )
    check("     2\t    return 'hello'" in out["view"]["text"], f"view: {out['view']}")
    check(out["run"]["exit_code"] == 0 and "hello" in out["run"]["text"], f"run: {out['run']}")
    check(
        (vscode.workspace / "a.txt").read_text() == "A\n" and (vscode.workspace / "b.txt").read_text() == "B\n",
        "parallel creates",
    )
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
    run = subprocess.run(
        [
            os.path.join(venv, "bin", "python"),
            str(REPO / "tests/integrations/openhands_v0/scripted_runtime.py"),
            str(vscode.workspace),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        cwd=vscode.workspace,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["create"]["type"] == "FileEditObservation", out["create"]
    assert (
        out["exit3"]["type"] == "CmdOutputObservation"
        and out["exit3"]["exit_code"] == 3
        and "v0-failing" in out["exit3"]["content"]
    ), out["exit3"]
    assert out["replace"]["type"] == "FileEditObservation", out["replace"]
    assert (vscode.workspace / "v0app.py").read_text() == "print('v0 hello')\n"
    assert out["view"]["type"] == "FileReadObservation" and "     1\tprint('v0 hello')" in out["view"]["content"], out[
        "view"
    ]
    assert out["run"]["exit_code"] == 0 and "v0 hello" in out["run"]["content"], out["run"]


def test_sdk_agent_asks_vscode_through_editor_knowledge(vscode: VsCode, backend: dict):
    """oh's own `editor_knowledge` SDK tool (tests/integrations/openhands_sdk/knowledge_agent.py): the type error
    VS Code's TypeScript reports, go-to-definition, and the file the agent opened for the user."""
    src = vscode.workspace / "src"
    src.mkdir(exist_ok=True)
    (vscode.workspace / "tsconfig.json").write_text(
        json.dumps({"compilerOptions": {"strict": True, "target": "es2020", "module": "commonjs"}, "include": ["src"]})
    )
    (src / "greet.ts").write_text("export function greet(name: string): string {\n  return `hello ${name}`;\n}\n")
    (src / "main.ts").write_text(
        "import { greet } from './greet';\n\nconst shout: string = greet('world');\nconst count: number = "
        "greet('again');\nconsole.log(shout, count);\n"
    )
    venv = venv_for("openhands-sdk")
    env = dict(vscode.env, LITELLM_LOCAL_MODEL_COST_MAP="True", OPENHANDS_SUPPRESS_BANNER="1")
    run = subprocess.run(
        [
            os.path.join(venv, "bin", "python"),
            str(REPO / "tests/integrations/openhands_sdk/knowledge_agent.py"),
            str(vscode.workspace),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        cwd=vscode.workspace,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    main_ts, greet_ts = os.path.realpath(src / "main.ts"), os.path.realpath(src / "greet.ts")

    assert not out["open"][0]["is_error"], out["open"]
    found = [d for obs in out["diagnostics"] for d in obs["data"].get("diagnostics", []) if d.get("code") == 2322]
    assert found, [o["text"] for o in out["diagnostics"]]
    assert (found[0]["path"], found[0]["line"], found[0]["severity"]) == (main_ts, 4, "error"), found[0]
    assert any("not assignable to type 'number'" in obs["text"] for obs in out["diagnostics"])
    definition = out["definition"][0]
    assert not definition["is_error"] and any(
        loc.get("path") == greet_ts for loc in definition["data"].get("locations", [])
    ), definition
    editors = out["editors"][0]
    assert not editors["is_error"] and editors["data"].get("active") == main_ts, editors
    vscode.screenshot("openhands-sdk-knowledge")
