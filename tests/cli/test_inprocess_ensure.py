"""`oh ensure` called in-process (run_ensure) against a real backend (`oh start --detach`): a real npm
project (a `file:` dependency, no registry) made ready once, a no-op the second time, JSON output,
exit codes, usage errors."""

from __future__ import annotations

import json
import shutil

import pytest

from ensure_projects import node_project
from oh.commands import ensure

from .inprocess import here, invoke  # noqa: F401 - `here` is a fixture


@pytest.fixture(autouse=True)
def _network_inside(here, monkeypatch) -> None:  # after `here`, which clears OH_*
    """Sandboxed (the default), with the sandbox's network on: installs then run inside it instead of asking
    to leave (nobody here could answer: that path is tests/sandbox/test_backend_sandbox.py)."""
    monkeypatch.setenv("OH_SANDBOX_NETWORK", "true")
    here.env["OH_SANDBOX_NETWORK"] = "true"  # the `oh start` it runs as a process


def test_usage_error_before_any_backend(here):
    r = invoke(ensure.run_ensure, only=["ruby"])
    assert r.code == 2 and "--only takes python or node" in r.err


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is needed (extension/e2e/setup.sh installs it)")
def test_ready_once_then_a_noop_and_the_exit_codes(here):
    node_project(here.workspace)
    here.start("local")
    r = invoke(ensure.run_ensure)
    assert r.code == 0, r
    assert r.out.startswith("Environment ready in ") and "npm ci" in r.out and "node_modules/.bin" in r.out
    r = invoke(ensure.run_ensure, only=["node"], json_=True)
    obs = json.loads(r.out)
    assert r.code == 0 and obs["observation"] == "ensure" and obs["extras"]["targets"][0]["did"] == "nothing"
    (here.workspace / "sub").mkdir()
    (here.workspace / "sub" / "package.json").write_text('{"name": "s", "version": ')  # npm refuses it
    r = invoke(ensure.run_ensure, path="sub")
    assert r.code == 1 and "Environment NOT ready" in r.out and "will be redone" in r.out, r
    r = invoke(ensure.run_ensure, path="/")
    assert r.code == 6 and "PATH_DENIED" in r.err


@pytest.mark.parametrize("setting", ["true", "false"])
def test_the_setup_script_setting_reaches_the_backend(here, setting):
    from oh.commands import agent

    (here.workspace / ".oh").mkdir()
    (here.workspace / ".oh" / "setup.sh").write_text("echo ran > setup-ran.txt\n")
    here("config", "set", "setup_script", setting, check=0)
    here.start("local")
    r = invoke(agent.run_run, command=["test", "-e", "setup-ran.txt"])
    assert r.code == (0 if setting == "true" else 1), r


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is needed (extension/e2e/setup.sh installs it)")
def test_no_wait_prints_the_job_and_oh_jobs_wait_follows_it(here):
    from oh.commands import jobs

    node_project(here.workspace)
    here.start("local")
    r = invoke(ensure.run_ensure, no_wait=True, json_=True)
    node = json.loads(r.out)["extras"]["targets"][0]
    assert r.code == 0 and node["state"] in ("running", "ready") and node["job_id"], r
    w = invoke(
        jobs.run_wait, job_id=node["job_id"], timeout=120
    )  # a job of the backend's oh-ensure shell, reachable from the CLI
    assert w.code == 0, w
    r = invoke(ensure.run_ensure)  # joins the run if it has not written its stamp yet, else finds it
    assert r.code == 0 and r.out.startswith("Environment ready"), r
    r = invoke(ensure.run_ensure)
    assert r.code == 0 and "nothing to do" in r.out, r
