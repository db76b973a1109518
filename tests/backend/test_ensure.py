"""Issue 22 through a real backend (docs/protocol.md §3.14): the `ensure` action on a real Python project
(venv + pip from a local wheel: no index) and a real Node project (npm ci of a `file:` dependency: no
registry), stamps (a second call is a no-op, a changed input re-runs only its target, an interrupted
install is redone), two agents sharing one install, job routing, and the setup script, in both
runtimes (local; vscode through the real headless editor of `oh attach`)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from ensure_projects import make_wheel, node_project, python_project, uv_project

from .conftest import TOKEN
from .peers import serve_headless

_ids = itertools.count(1)


@pytest.fixture(autouse=True)
def _network_inside(monkeypatch) -> None:
    """The installs here fetch from a loopback index run by the test: sandboxed (the default) with the
    sandbox's network on, they run inside it (leaving it is asked: tests/sandbox/ covers that path)."""
    monkeypatch.setenv("OH_SANDBOX_NETWORK", "true")


pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None, reason="npm is needed (extension/e2e/setup.sh installs it)"
)


def no_uv(tool: str) -> str | None:
    """The backend's tool lookup without uv: the venv + pip route, whatever this machine has."""
    return None if tool == "uv" else shutil.which(tool)


async def backend(make_backend, workspace, runtime, **kw):
    b = await make_backend(runtime, **kw)
    b.runtime._which = no_uv
    task = None
    if runtime == "vscode":
        _, task = await serve_headless(b, workspace, max_shells=b.config.max_shells)
    return b, task


async def stop(b, task):
    if task is not None:
        await b.stop("test")
        await asyncio.wait_for(task, 10)


async def agent(b, **headers):
    return await connect(
        f"ws://127.0.0.1:{b.port}/v1/agent", additional_headers={"Authorization": f"Bearer {TOKEN}", **headers}
    )


async def send(ws, action: str, timeout: float | None = None, **args) -> int:
    aid = next(_ids)
    frame = {"id": aid, "action": action, "args": args}
    if timeout is not None:
        frame["timeout"] = timeout
    await ws.send(json.dumps(frame))
    return aid


async def ask(ws, action: str, timeout: float | None = None, **args):
    aid = await send(ws, action, timeout, **args)
    obs = json.loads(await asyncio.wait_for(ws.recv(), 300))
    assert obs["cause"] == aid
    return obs


def target(obs, name):
    assert obs["observation"] == "ensure", obs
    return next(t for t in obs["extras"]["targets"] if t["target"] == name)


def venv_python(ws: Path) -> str:
    return str(ws / ".venv" / "bin" / "python")


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["local", "vscode"])
async def test_python_project_ready_once_then_noop_then_only_the_changed_requirement(make_backend, workspace, runtime):
    python_project(workspace)
    b, task = await backend(make_backend, workspace, runtime)
    try:
        ws = await agent(b)
        first = await ask(ws, "ensure")
        py = target(first, "python")
        assert first["extras"]["state"] == "ready", first["content"]
        assert (
            py["did"] == "installed"
            and py["job_id"]
            and "-m venv .venv" in py["command"]
            and "pip install" in py["command"]
        )
        assert py["ready"] == {"interpreter": ".venv/bin/python", "bin": ".venv/bin"}
        check = await ask(ws, "run", command=".venv/bin/python -c 'import ohtiny; print(ohtiny.VALUE)'")
        assert check["content"].strip() == "0.1"
        stamp = json.loads((workspace / ".venv" / ".oh-ensure.json").read_text())
        assert stamp["target"] == "python"
        cfg_inode = os.stat(workspace / ".venv" / "pyvenv.cfg").st_ino

        second = await ask(ws, "ensure")
        assert target(second, "python")["did"] == "nothing" and "job_id" not in target(second, "python")
        assert "nothing to do" in second["content"]

        python_project(workspace, version="0.2")  # a changed requirement (another wheel)
        (workspace / "wheels" / "ohtiny-0.1-py3-none-any.whl").unlink()
        third = await ask(ws, "ensure")
        py3 = target(third, "python")
        assert py3["did"] == "installed" and "-m venv" not in py3["command"] and "inputs changed" in py3["why"]
        assert os.stat(workspace / ".venv" / "pyvenv.cfg").st_ino == cfg_inode  # the venv was kept
        check = await ask(ws, "run", command=".venv/bin/python -c 'import ohtiny; print(ohtiny.VALUE)'")
        assert check["content"].strip() == "0.2"
        await ws.close()
    finally:
        await stop(b, task)


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["local", "vscode"])
async def test_node_project_npm_ci_then_noop_then_lockfile_change(make_backend, workspace, runtime):
    node_project(workspace)
    b, task = await backend(make_backend, workspace, runtime)
    try:
        ws = await agent(b)
        first = await ask(ws, "ensure", targets=["node"])
        node = target(first, "node")
        assert (
            node["did"] == "installed"
            and " ci " in node["command"] + " "
            and node["ready"] == {"bin": "node_modules/.bin"}
        ), first["content"]
        run = await ask(ws, "run", command="node_modules/.bin/tiny")
        assert run["content"].strip() == "tiny 42"
        assert target(await ask(ws, "ensure", targets=["node"]), "node")["did"] == "nothing"
        lock = json.loads((workspace / "package-lock.json").read_text())
        lock["name"] = "app2"
        (workspace / "package-lock.json").write_text(json.dumps(lock))
        again = target(await ask(ws, "ensure", targets=["node"]), "node")
        assert again["did"] == "installed" and "inputs changed" in again["why"]
        await ws.close()
    finally:
        await stop(b, task)


async def test_a_node_package_without_dependencies_is_ready_then_a_noop(make_backend, workspace):
    (workspace / "package.json").write_text('{"name": "empty", "version": "1.0.0"}')
    (workspace / "package-lock.json").write_text(
        json.dumps(
            {
                "name": "empty",
                "version": "1.0.0",
                "lockfileVersion": 3,
                "requires": True,
                "packages": {"": {"name": "empty", "version": "1.0.0"}},
            }
        )
    )
    b, task = await backend(make_backend, workspace, "local")
    try:
        ws = await agent(b)
        first = target(await ask(ws, "ensure"), "node")
        assert first["state"] == "ready" and first["did"] == "installed", (
            first
        )  # npm ci made no node_modules: the backend did
        assert target(await ask(ws, "ensure"), "node")["did"] == "nothing"
        await ws.close()
    finally:
        await stop(b, task)


@pytest.mark.parametrize("runtime", ["local", "vscode"])
async def test_two_agents_at_once_share_one_install_and_the_live_view_sees_one_job(
    make_backend, workspace, runtime, tmp_path
):
    handler, server, wheel = _stall_server(tmp_path)
    (workspace / "requirements.txt").write_text(f"ohtiny @ http://127.0.0.1:{server.server_port}/{wheel.name}\n")
    (workspace / "empty").mkdir()
    b, task = await backend(make_backend, workspace, runtime)
    started: list[dict] = []
    inner = b.runtime.on_job_event

    def spy(name, job):
        if name == "job_started":
            started.append(job)
        inner(name, job)

    b.runtime.on_job_event = spy
    try:
        a1, a2 = await agent(b, **{"X-OH-Agent": "one"}), await agent(b, **{"X-OH-Agent": "two"})
        await ask(
            a1, "ensure", path="empty"
        )  # the interpreter's identity is probed once; from here nothing waits before the join
        mon = await connect(
            f"ws://127.0.0.1:{b.port}/v1/monitor", additional_headers={"Authorization": f"Bearer {TOKEN}"}
        )
        i1, i2 = await send(a1, "ensure"), await send(a2, "ensure")
        # The install cannot end before the release: both asks are in (their action_started seen) first.
        seen = set()
        while len(seen) < 2:
            frame = json.loads(await asyncio.wait_for(mon.recv(), 60))
            if frame.get("event") == "action_started" and frame.get("kind") == "ensure":
                seen.add(frame["agent_id"])
        assert await asyncio.to_thread(handler.asked.wait, 120), "pip never asked for the wheel"
        handler.release.set()
        r1, r2 = [json.loads(await asyncio.wait_for(ws.recv(), 300)) for ws in (a1, a2)]
        assert (r1["cause"], r2["cause"]) == (i1, i2)
        p1, p2 = target(r1, "python"), target(r2, "python")
        assert (
            p1["state"] == p2["state"] == "ready"
            and p1["did"] == p2["did"] == "installed"
            and p1["job_id"] == p2["job_id"]
        ), (p1, p2)
        assert len([j for j in started if "pip install" in str(j.get("command") or j.get("summary"))]) == 1, started
        await mon.close()
        await a1.close()
        await a2.close()
    finally:
        handler.release.set()
        server.shutdown()
        await stop(b, task)


def _stall_server(tmp_path):
    wheel = make_wheel(tmp_path / "dist")
    handler = type(
        "Stall", (_Stall,), {"wheel": wheel.read_bytes(), "asked": threading.Event(), "release": threading.Event()}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return handler, server, wheel


class _Stall(BaseHTTPRequestHandler):
    """Serves the wheel only once the test releases it: an install that hangs for as long as we like."""

    wheel: bytes = b""
    asked = threading.Event()
    release = threading.Event()

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).asked.set()
        type(self).release.wait(60)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(self.wheel)))
        self.end_headers()
        self.wfile.write(self.wheel)

    def log_message(self, *args):
        pass


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["local", "vscode"])
async def test_an_interrupted_install_is_not_trusted_and_is_redone(make_backend, workspace, runtime, tmp_path):
    handler, server, wheel = _stall_server(tmp_path)
    (workspace / "requirements.txt").write_text(f"ohtiny @ http://127.0.0.1:{server.server_port}/{wheel.name}\n")
    b, task = await backend(make_backend, workspace, runtime)
    try:
        ws, other = await agent(b), await agent(b)
        pending = target(await ask(ws, "ensure", wait=False), "python")
        assert pending["state"] == "running", pending
        assert await asyncio.to_thread(handler.asked.wait, 120), "pip never asked for the wheel"
        again = target(await ask(other, "ensure", wait=False), "python")
        assert again["state"] == "running" and again["job_id"] == pending["job_id"]  # shared, not a second install
        jid = pending["job_id"]
        cancelled = await ask(other, "job", op="cancel", job_id=jid)  # another agent may cancel the workspace's install
        assert cancelled["observation"] == "job" and cancelled["extras"]["job"]["state"] == "CANCELLED", cancelled
        failed = target(await ask(ws, "ensure", wait=False), "python")
        # The cancelled run is over: this call found no stamp and started the install again.
        assert failed["state"] == "running" and failed["job_id"] != jid and "no stamp" in failed["why"], failed
        assert not (workspace / ".venv" / ".oh-ensure.json").exists()
        handler.release.set()
        done = target(await ask(ws, "ensure"), "python")
        assert done["state"] == "ready" and (workspace / ".venv" / ".oh-ensure.json").exists(), done
        check = await ask(ws, "run", command=".venv/bin/python -c 'import ohtiny; print(ohtiny.VALUE)'")
        assert check["content"].strip() == "1"
        await ws.close()
        await other.close()
    finally:
        handler.release.set()
        server.shutdown()
        await stop(b, task)


async def test_a_broken_venv_is_rebuilt_and_a_failed_install_is_reported_not_stamped(make_backend, workspace):
    (workspace / "requirements.txt").write_text("./wheels/missing-0.1-py3-none-any.whl\n")
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / ".venv" / "bin" / "python").symlink_to(workspace / "gone" / "python3")  # its interpreter is gone
    b, task = await backend(make_backend, workspace, "local")
    try:
        ws = await agent(b)
        obs = await ask(ws, "ensure")
        py = target(obs, "python")
        assert obs["extras"]["state"] == "failed" and py["state"] == "failed" and py["exit_code"] not in (0, None)
        assert "rm -rf .venv" in py["command"] and "broken" in py["why"]
        assert "Environment NOT ready" in obs["content"] and "missing-0.1" in obs["content"]  # pip's own words
        assert (workspace / ".venv" / "bin" / "python").exists() and not (
            workspace / ".venv" / ".oh-ensure.json"
        ).exists()
        await ws.close()
    finally:
        await stop(b, task)


async def test_nothing_to_do_other_ecosystems_named_and_bad_paths(make_backend, workspace, tmp_path):
    (workspace / "go.mod").write_text("module x\n")
    (workspace / "sub").mkdir()
    b, task = await backend(make_backend, workspace, "local")
    try:
        ws = await agent(b)
        obs = await ask(ws, "ensure")
        assert (
            obs["extras"]["targets"] == []
            and obs["extras"]["other"][0]["file"] == "go.mod"
            and "not handled" in obs["content"]
        )
        assert (await ask(ws, "ensure", path="sub"))["content"].startswith("Nothing to set up")
        assert (await ask(ws, "ensure", path=str(tmp_path)))["extras"]["error_id"] == "PATH_DENIED"
        assert (await ask(ws, "ensure", path="nope"))["extras"]["error_id"] == "TOOL_ERROR"
        assert (await ask(ws, "ensure", targets=["ruby"]))["extras"]["error_id"] == "BAD_REQUEST"
        await ws.close()
    finally:
        await stop(b, task)


@pytest.mark.parametrize("runtime", ["local", "vscode"])
@pytest.mark.parametrize("script", [".oh/setup.sh", ".openhands/setup.sh"])
async def test_setup_script_runs_once_before_the_first_action_and_a_failure_is_told_once(
    make_backend, workspace, runtime, script
):
    path = workspace / script
    path.parent.mkdir()
    path.write_text("echo ran >> setup-count.txt\necho 'setting up'\necho 'it broke' >&2\nexit 3\n")
    b, task = await backend(make_backend, workspace, runtime)
    try:
        ws, other = await agent(b), await agent(b)
        first = await ask(ws, "run", command="cat setup-count.txt")
        assert first["content"] == "ran\n"  # the script ran before the action
        prefix = first["extras"]["metadata"]["prefix"]
        assert f"setup script {script} FAILED" in prefix and "exit code 3" in prefix and "it broke" in prefix
        second = await ask(other, "read", path="setup-count.txt")
        assert "setup script" not in second["content"] and "ran" in second["content"]
        third = await ask(ws, "run", command="cat setup-count.txt")
        assert (
            third["content"] == "ran\n" and "setup script" not in third["extras"]["metadata"]["prefix"]
        )  # not retried
        setup = b.status()["setup"]
        assert setup["script"] == script and setup["state"] == "FAILED" and setup["exit_code"] == 3, setup
        jid = prefix.split("as job ")[1].split()[0]
        out = await ask(ws, "job", op="output", job_id=jid)  # its whole output, from any agent
        assert "setting up" in out["content"] and out["extras"]["job"]["exit_code"] == 3
        await ws.close()
        await other.close()
    finally:
        await stop(b, task)


async def test_no_setup_script_no_note_and_setup_can_be_off(make_backend, workspace):
    (workspace / ".oh").mkdir()
    (workspace / ".oh" / "setup.sh").write_text("echo ran >> setup-count.txt\n")
    b, task = await backend(make_backend, workspace, "local", setup_script=False)
    try:
        ws = await agent(b)
        obs = await ask(ws, "run", command="ls setup-count.txt 2>&1; echo $?")
        assert obs["content"].strip().endswith("2") and "setup script" not in obs["extras"]["metadata"]["prefix"]
        await ws.close()
    finally:
        await stop(b, task)


def _uv() -> str | None:
    here = os.path.join(os.path.dirname(__import__("sys").executable), "uv")  # the test venv's (pip install .[test])
    return shutil.which("uv") or (here if os.access(here, os.X_OK) else None)


@pytest.mark.skipif(_uv() is None, reason="uv is not installed")
async def test_with_uv_the_venv_and_install_use_uv(make_backend, workspace):
    python_project(workspace)
    b, task = await backend(make_backend, workspace, "local")
    uv = _uv()
    b.runtime._which = lambda tool: uv if tool == "uv" else shutil.which(tool)
    try:
        ws = await agent(b)
        py = target(await ask(ws, "ensure"), "python")
        assert py["state"] == "ready" and py["installer"] == "uv-pip" and f"{uv} venv --python" in py["command"], py
        assert (await ask(ws, "run", command=".venv/bin/python -c 'import ohtiny; print(ohtiny.VALUE)'"))[
            "content"
        ].strip() == "0.1"
        assert target(await ask(ws, "ensure"), "python")["did"] == "nothing"
        await ws.close()
    finally:
        await stop(b, task)


async def test_an_environment_linked_outside_the_roots_is_refused_not_written_to(make_backend, workspace, tmp_path):
    python_project(workspace)
    outside = tmp_path / "elsewhere"
    (outside / "bin").mkdir(parents=True)
    (workspace / ".venv").symlink_to(outside)
    (outside / ".oh-ensure.json").write_text("keep me")
    b, task = await backend(make_backend, workspace, "local")
    try:
        ws = await agent(b)
        obs = await ask(ws, "ensure")
        py = target(obs, "python")
        assert (
            py["state"] == "failed"
            and "outside the allowed roots" in py["error"]
            and "job_id" in py
            and py["job_id"] is None
        ), py
        assert (outside / ".oh-ensure.json").read_text() == "keep me"
        await ws.close()
    finally:
        await stop(b, task)


async def test_the_setup_note_never_lands_in_a_files_content(make_backend, workspace):
    (workspace / ".oh").mkdir()
    (workspace / ".oh" / "setup.sh").write_text("exit 2\n")
    (workspace / "a.txt").write_text("exact content\n")
    b, task = await backend(make_backend, workspace, "local")
    try:
        ws = await agent(b)
        read = await ask(ws, "read", path="a.txt")
        assert read["content"] == "exact content\n"  # the script ran first, but a read carries no note
        run = await ask(ws, "run", command="true")
        assert (
            "setup script .oh/setup.sh FAILED" in run["extras"]["metadata"]["prefix"]
        )  # told with the next answer instead
        again = await ask(ws, "run", command="true")
        assert "setup script" not in again["extras"]["metadata"]["prefix"]
        await ws.close()
    finally:
        await stop(b, task)


@pytest.mark.parametrize("runtime", ["local", "vscode"])
async def test_a_long_setup_script_is_named_to_the_agent_who_may_answer_it(make_backend, workspace, runtime):
    (workspace / ".oh").mkdir()
    (workspace / ".oh" / "setup.sh").write_text('echo "continue?"; read answer; echo "got $answer"\n')
    b, task = await backend(make_backend, workspace, runtime)
    try:
        ws = await agent(b)
        first = await ask(ws, "run", timeout=2, command="echo first")  # waits at most half its time for the script
        prefix = first["extras"]["metadata"]["prefix"]
        assert first["content"] == "first\n" and "setup script .oh/setup.sh is still running as job" in prefix, prefix
        jid = prefix.split("as job ")[1].split(":")[0]
        await ask(ws, "run", command="yes", is_input=True, job_id=jid)  # its input, from the agent's connection
        done = await ask(ws, "job", op="wait", job_id=jid, timeout=30)
        assert done["extras"]["job"]["state"] == "SUCCEEDED" and "got yes" in done["content"], done
        later = await ask(ws, "run", command="echo later")
        assert "setup script .oh/setup.sh ran as job" in later["extras"]["metadata"]["prefix"]  # its end, told once
        await ws.close()
    finally:
        await stop(b, task)


@pytest.mark.skipif(_uv() is None, reason="uv is not installed")
async def test_a_uv_lock_project_is_synced_with_uv_then_a_noop(make_backend, workspace):
    uv = _uv()
    uv_project(workspace, uv)
    b, task = await backend(make_backend, workspace, "local")
    b.runtime._which = lambda tool: uv if tool == "uv" else shutil.which(tool)
    try:
        ws = await agent(b)
        py = target(await ask(ws, "ensure"), "python")
        assert py["state"] == "ready" and py["installer"] == "uv-sync" and f"{uv} sync --frozen" in py["command"], py
        assert (await ask(ws, "run", command=".venv/bin/python -c 'import ohtiny; print(ohtiny.VALUE)'"))[
            "content"
        ].strip() == "1"
        assert target(await ask(ws, "ensure"), "python")["did"] == "nothing"
        with open(workspace / "uv.lock", "a") as fh:
            fh.write("\n")  # a changed lockfile: synced again
        again = target(await ask(ws, "ensure"), "python")
        assert again["did"] == "installed" and "uv.lock" in again["why"], again
        await ws.close()
    finally:
        await stop(b, task)
