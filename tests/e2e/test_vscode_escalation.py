"""Escalation in a real VS Code (issue 27, docs/protocol.md §3.17): code-server with the oh extension in its default
engine mode, `oh start --runtime vscode` with the default sandbox (workspace-write, network off, consent never: a
request to leave is still asked). Real `oh run --network` / `--unsandboxed` agents and `oh ensure`, answered with
`oh approve` / `oh reject`: an approved network escalation reaches a tiny HTTP server on 127.0.0.1 and still cannot
write outside the workspace, and its one-shot engine host ends with it; a rejected one reaches nothing and nothing
ran; `--unsandboxed` writes outside; `oh ensure` installs a Python project from a loopback package index."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from .conftest import VsCode, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from ensure_projects import PackageIndex  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
    info = vscode.start_backend()
    yield info
    vscode.oh("stop", info["instance_id"], timeout=60)


class HttpServer:
    """A tiny HTTP server on 127.0.0.1 (an ephemeral port) that counts the requests reaching it."""

    def __init__(self) -> None:
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"hello from loopback\n")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _agent(vscode: VsCode, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "oh", *args],
        cwd=vscode.workspace,
        env=vscode.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _pending(vscode: VsCode) -> dict:
    def listed():
        rows = vscode.oh_json("approvals", "--json")["approvals"]
        return rows[0] if rows else None

    return wait_until(listed, 60, "a pending approval", 0.2)


def _finish(proc: subprocess.Popen, timeout: float = 180) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return proc.returncode, out, err


def _one_shot_hosts(workspace: Path, flag: str, value: str) -> list[int]:
    """Engine hosts with ``flag value`` in their command line, serving this workspace."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "oh.runtimes.local.enginehost" in argv and _flag(argv, flag) == value:
            if any(a.startswith(str(workspace)) for a in argv):
                found.append(int(pid))
    return found


def _flag(argv: list[str], flag: str) -> str | None:
    """A sandbox flag's value in an engine host's argv: as a flag, or inside the resolved spec the extension hands on
    whole (``--sandbox-spec JSON``, docs/protocol.md §3.17; ``--sandbox-network`` is its ``network``)."""
    if flag in argv:
        return argv[argv.index(flag) + 1]
    if flag == "--sandbox-network" and "--sandbox-spec" in argv:
        return "on" if json.loads(argv[argv.index("--sandbox-spec") + 1]).get("network") else "off"
    return None


def _sleeping(nap: str) -> bool:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == f"sleep\0{nap}\0".encode():
                return True
        except OSError:
            continue
    return False


@pytest.fixture
def outside():
    # Outside the workspace and not under /tmp (the sandbox's /tmp is private anyway): the root directory.
    path = Path("/") / f"oh-e2e-escalation-{uuid.uuid4().hex[:12]}"
    if not os.access("/", os.W_OK):
        pytest.skip("needs a writable / to tell a write outside the sandbox from one inside it")
    yield path
    path.unlink(missing_ok=True)


def test_network_escalation_approved_reaches_loopback_still_confined_rejected_runs_nothing(
    vscode: VsCode, backend: dict, outside: Path
):
    server = HttpServer()
    fetch = (
        f"python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{server.port}/x', "
        'timeout=5).read().decode())"'
    )
    try:
        # The agent's own terminal: network off.
        done = vscode.oh("run", "--json", fetch, timeout=120)
        assert "hello from loopback" not in done.stdout and server.hits == [], done.stdout
        proc = _agent(vscode, "run", "--network", "fetches from a loopback server", "--", f"{fetch}; touch {outside}")
        row = _pending(vscode)
        assert "NETWORK on (still sandboxed" in row["reason"] and "loopback server" in row["reason"], row
        assert vscode.oh("approve", row["id"]).returncode == 0
        rc, out, err = _finish(proc)
        assert "hello from loopback" in out and server.hits == ["/x"], (rc, out, err)
        assert not outside.exists(), (out, err)  # the network alone: a write outside the workspace still fails
        # It ran in a terminal of its own (closed once the command ended: the extension's log says it opened).
        assert '"oh · oh-cli · with the network" terminal ready' in vscode.extension_log(), vscode.extension_log()
        # Its one-shot engine host ended with the command; the agent's own is still there.
        wait_until(
            lambda: not _one_shot_hosts(vscode.workspace, "--sandbox-network", "on"), 30, "the one-shot host to end"
        )
        assert _one_shot_hosts(vscode.workspace, "--sandbox-network", "off"), "the agent's engine host is gone"

        marker = vscode.workspace / "escalation-ran.txt"
        proc = _agent(vscode, "run", "--network", "again", "--", f"touch {marker}; {fetch}")
        row = _pending(vscode)
        assert vscode.oh("reject", row["id"], "--reason", "not now").returncode == 0
        rc, out, err = _finish(proc)
        assert rc != 0 and "not now" in out + err, (rc, out, err)
        assert server.hits == ["/x"] and not marker.exists(), "a rejected escalation ran"
        # The agent's own terminal kept its network off.
        done = vscode.oh("run", "--json", fetch, timeout=120)
        assert "hello from loopback" not in done.stdout and server.hits == ["/x"], done.stdout
    except Exception:
        vscode.screenshot("escalation-network-failed")
        raise
    finally:
        server.close()


def test_unsandboxed_escalation_writes_outside_once_approved(vscode: VsCode, backend: dict, outside: Path):
    done = vscode.oh("run", "--json", f"touch {outside}", timeout=120)
    assert not outside.exists(), done.stdout
    proc = _agent(vscode, "run", "--unsandboxed", "writes a marker outside the workspace", "--", "touch", str(outside))
    row = _pending(vscode)
    assert "OUTSIDE the sandbox" in row["reason"], row
    assert vscode.oh("approve", row["id"]).returncode == 0
    rc, out, err = _finish(proc)
    assert rc == 0 and outside.exists(), (rc, out, err)
    outside.unlink()
    vscode.oh("run", "--json", f"touch {outside}", timeout=120)
    assert not outside.exists(), "the agent's terminal left the sandbox"


def test_ensure_installs_from_a_loopback_index_after_approval(vscode: VsCode, backend: dict, tmp_path: Path):
    index = PackageIndex(tmp_path / "index")
    project = index.project(vscode.workspace / "pyapp")
    try:
        proc = _agent(vscode, "ensure", "--json", "pyapp")
        row = _pending(vscode)
        assert "NETWORK on (still sandboxed" in row["reason"] and "install" in row["what"], row
        assert not (project / ".venv").exists()
        assert vscode.oh("approve", row["id"]).returncode == 0
        rc, out, err = _finish(proc, 600)
        assert rc == 0, (out, err)
        result = json.loads(out)
        assert result["extras"]["state"] == "ready", out
        assert list((project / ".venv" / "lib").glob("python3*/site-packages/ohtiny.py")), out
        assert any(p.startswith("/files/ohtiny-") for p in index.requested), index.requested
    except Exception:
        vscode.screenshot("escalation-ensure-failed")
        raise
    finally:
        index.close()


def test_escalated_and_extra_terminals_start_with_the_agent_shells_exports_and_directory(vscode: VsCode, backend: dict):
    """As under the local runtime: the one-shot host of an approved escalation and the extra terminal of a command
    arriving while the agent's terminal is busy both start with the agent shell's exports (the one-shot where the
    agent's shell is; `oh run` itself sends its own cwd with each command)."""
    value = f"v-{uuid.uuid4().hex[:8]}"
    sub = vscode.workspace / "exports-sub"
    show = "printf 'FOO=%s|' \"$OH_E2E_FOO\"; pwd"
    try:
        done = vscode.oh("run", "--json", f"mkdir -p {sub} && cd {sub} && export OH_E2E_FOO={value}", timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        proc = _agent(vscode, "run", "--unsandboxed", "shows its environment", "--", show)
        row = _pending(vscode)
        assert vscode.oh("approve", row["id"]).returncode == 0
        rc, out, err = _finish(proc)
        assert f"FOO={value}|" in out, (rc, out, err)
        # `oh run` sends its own cwd with each command; the host itself started where the agent's shell was.
        assert '"oh · oh-cli · outside the sandbox" terminal ready' in vscode.extension_log()
        assert f"in {sub})" in vscode.extension_log().split('outside the sandbox" terminal ready')[-1].split("\n")[0]
        # The agent's terminal busy: the next command runs in an extra terminal, with the exports too.
        nap = f"8.{uuid.uuid4().int % 10**6}"
        busy = _agent(vscode, "run", f"sleep {nap}; echo MAIN")
        wait_until(lambda: _sleeping(nap), 60, "the busy command to start", 0.2)
        extra = vscode.oh("run", "--json", show, timeout=120)
        assert f"FOO={value}|" in extra.stdout and "with the agent terminal's exports" in extra.stdout, extra.stdout
        rc, out, err = _finish(busy)
        assert "MAIN" in out, (rc, out, err)
    except Exception:
        vscode.screenshot("escalation-exports-failed")
        raise
    finally:
        vscode.oh("run", "--json", f"cd {vscode.workspace}", timeout=120)
