"""An agent in a container (issue 28): `oh share --docker`'s exact flags, applied by a sandbox with its own network
namespace (no route to the host's loopback) and its own root, so the agent sees the workspace at /workspace and
reaches the backend only through the mounted socket. `oh run`, `oh mcp` and the Python client (found the way the
OpenHands integrations find it) act on the host's workspace; paths are mapped both ways."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from waiting import poll_until

from . import container
from .agent import client_read, mcp_run

pytestmark = pytest.mark.skipif(not container.available(), reason="bubblewrap (bwrap) is not installed")


@pytest.fixture(scope="module")
def boxed(mroh):
    """The README's recipe: `docker run --rm -it $(oh share --docker --ttl 8h) IMAGE ...`, its words exactly."""
    (mroh.workspace / "src").mkdir(exist_ok=True)
    (mroh.workspace / "src" / "hello.txt").write_text("hello from the host\n")
    proc = mroh("share", "--docker", "--ttl", "8h", check=0)
    flags = shlex.split(proc.stdout)
    assert "OH_WORKSPACE=/workspace" in flags and f"{mroh.workspace}:/workspace" in flags, flags
    assert "/workspace=" + str(mroh.workspace) in mroh("share", "list").stdout
    return flags, container.bwrap_argv(flags, {"OH_USER_SHELL": "0"})


def box(prefix: list[str], *argv: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    if cwd:
        prefix = [*prefix[:-1], "--chdir", cwd, "--"]
    return subprocess.run([*prefix, *argv], capture_output=True, text=True, timeout=60)


def test_the_container_has_no_route_to_the_host_loopback(mroh, boxed):
    _, prefix = boxed
    port = mroh.session_data["port"]
    probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
    out = box(prefix, sys.executable, "-c", probe)
    assert out.returncode != 0 and ("refused" in out.stderr.lower() or "unreachable" in out.stderr.lower()), out.stderr
    assert box(prefix, "ls", "/workspace/src").stdout.split() == ["hello.txt"]  # the agent's own view


def test_oh_run_read_write_edit_through_the_socket_with_paths_mapped(mroh, boxed):
    _, prefix = boxed
    run = box(prefix, "oh", "run", "echo ran > made-in-box.txt; ls src", cwd="/workspace")
    assert run.returncode == 0 and "hello.txt" in run.stdout, run.stderr
    assert (mroh.workspace / "made-in-box.txt").read_text() == "ran\n"  # ran here, in the mapped directory
    read = box(prefix, "oh", "read", "--json", "/workspace/src/hello.txt")
    obs = json.loads(read.stdout)
    assert obs["content"].endswith("hello from the host\n") and obs["extras"]["path"] == "/workspace/src/hello.txt"
    write = box(prefix, "oh", "write", "/workspace/src/new.txt", "--content", "from the box")
    assert write.returncode == 0, write.stderr
    assert (mroh.workspace / "src" / "new.txt").read_text() == "from the box"
    edit = box(prefix, "oh", "edit", "src/new.txt", "--replace", "box", "container", cwd="/workspace/src/..")
    assert edit.returncode == 0 and (mroh.workspace / "src" / "new.txt").read_text() == "from the container", (
        edit.stderr
    )
    # A path outside the map is not the workspace: refused like any path outside the allowed roots.
    denied = box(prefix, "oh", "read", "/etc/hostname")
    assert denied.returncode == 6 and "outside" in (denied.stdout + denied.stderr).lower(), denied.stderr


def test_mcp_and_the_python_client_through_the_socket(mroh, boxed):
    _, prefix = boxed
    text = mcp_run(prefix[:-1] + ["--chdir", "/workspace", "--"], "echo mcp-$((6*7)) > by-mcp.txt; cat by-mcp.txt")
    assert "mcp-42" in text and (mroh.workspace / "by-mcp.txt").read_text() == "mcp-42\n"
    got = client_read(prefix[:-1] + ["--chdir", "/workspace/src", "--"], "/workspace/src/hello.txt")
    assert got["url"] == "unix:/run/oh/oh.sock" and got["extras"]["path"] == "/workspace/src/hello.txt"
    assert got["content"].endswith("hello from the host\n")


def test_the_container_agent_is_marked_with_where_it_runs(mroh, boxed):
    """The live view names the agent's actions with where it runs: its frames, as the backend's monitor stream
    sends them, through the live view's own state."""
    import asyncio

    from oh.client.monitor import monitor
    from oh.sessions import Session
    from oh.ui.live import LiveState

    _, prefix = boxed
    session = Session.from_dict(mroh.session_data)
    state, lines = LiveState(backend={}), []

    async def watch() -> None:
        stop = asyncio.Event()

        def on_frame(frame: dict) -> None:
            lines.extend(state.apply(frame))
            if frame.get("event") == "action_finished":
                stop.set()

        task = asyncio.create_task(monitor(lambda: session, on_frame, stop))
        await asyncio.sleep(0.5)
        await asyncio.to_thread(box, prefix, "oh", "run", "echo marked")
        await asyncio.wait_for(task, 30)

    asyncio.run(watch())
    assert any("agent connected: oh-cli @ docker" in line for line in lines), lines
    assert [row.agent for row in state.actions.values()][-1] == "oh-cli @ docker"
    assert "docker · expires in" in mroh("status").stdout


def test_the_devcontainer_recipe(mroh):
    """`oh share --devcontainer --write`, then the container the Dev Containers tooling would make from it."""
    target = mroh.workspace / ".devcontainer" / "devcontainer.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps({"image": "x", "mounts": ["source=/cache,target=/cache,type=bind"]}))
    mroh("share", "--devcontainer", "--write", check=0)
    config = json.loads(target.read_text())
    assert config["image"] == "x" and config["mounts"][0] == "source=/cache,target=/cache,type=bind"  # kept
    config["mounts"] = config["mounts"][1:]
    prefix = container.bwrap_argv(
        container.devcontainer_docker_args(config, str(mroh.workspace)), {"OH_USER_SHELL": "0"}
    )
    out = box(prefix, "oh", "run", "echo from-devcontainer > dc.txt && ls .devcontainer")
    assert out.returncode == 0 and "devcontainer.json" in out.stdout, out.stderr
    assert (mroh.workspace / "dc.txt").read_text() == "from-devcontainer\n"
    # Comments (JSONC) are never rewritten: the keys are printed for the user to add.
    target.write_text('{// a comment\n"image": "x"}')
    proc = mroh("share", "--devcontainer", "--write")
    assert proc.returncode == 1 and "not plain JSON" in proc.stderr and target.read_text().startswith("{//")


def sdk_venv() -> Path:
    """The OpenHands SDK's Python 3.12 venv: $OH_SDK_VENV, else the one scripts/integration-venvs builds or reuses."""
    given = os.environ.get("OH_SDK_VENV")
    if given:
        return Path(given)
    from integrations.test_integrations import venv_for

    return venv_for("openhands-sdk")


@pytest.mark.slow
def test_the_openhands_sdk_in_the_box_through_the_socket(mroh, boxed):
    """The SDK's own agent loop in the box (a scripted LLM: no network needed, none there): its file_editor and
    terminal tools reach the backend only through the mounted socket, at /workspace, and act here."""
    flags, _ = boxed
    venv = sdk_venv()
    base = Path(os.path.realpath(venv / "bin" / "python")).parents[1]  # the interpreter the venv was made from
    prefix = container.bwrap_argv(
        flags, {"OH_USER_SHELL": "0", "PYTHONPATH": str(container.REPO / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    )
    prefix[-1:-1] = ["--ro-bind", str(venv), str(venv), "--ro-bind", str(base), str(base)]
    script = str(Path(__file__).with_name("sdk_in_box.py"))
    proc = subprocess.run(
        [*prefix, str(venv / "bin" / "python"), script, "/workspace"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(seen) == 3 and not any("AGENT ERROR" in t for t in seen.values()), seen
    assert (mroh.workspace / "boxed.py").read_text() == "print('sdk ' + 'in the box')\n"
    assert (mroh.workspace / "boxed.txt").read_text() == "sdk in the box\n"  # ran here, in the mapped directory
    run, view = seen["call_2"], seen["call_3"]
    assert "sdk in the box" in run and "/workspace" in run, run  # `pwd` shows the agent's path, mapped back
    assert "sdk in the box" in view, view
    poll_until(lambda: len(sdk_results(mroh)) >= 3, 10, "the SDK's actions in the trace")
    assert {r["agent_name"] for r in sdk_results(mroh)} == {"sdk-in-box @ docker"}  # marked with where it runs


def sdk_results(mroh) -> list[dict]:
    rows = []
    for p in (mroh.home / "traces").glob("*.jsonl"):
        text = p.read_text()
        rows += [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]  # whole lines only
    return [r for r in rows if r.get("kind") == "result" and str(r.get("agent_name", "")).startswith("sdk-in-box")]
