"""The editor leg in a real VS Code, with real ``oh`` processes: confinement to the backend's workspace, run options
(cwd, input, interrupt, reset, env, max_output, BUSY / NO_COMMAND), encodings, one terminal per agent shell.

One workbench per module, opened on ``ws``; the first backend serves the NESTED folder ``ws/sub`` (the
window's folder is wider than what the backend serves), so every confinement test here would pass the
old window-folder check and fail the backend-workspace one. Order matters: the last tests kill that
backend mid-command and start another one on ``ws``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from .conftest import VsCode, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]


def _start(vscode: VsCode, workspace: Path) -> dict[str, Any]:
    proc = vscode.oh(
        "start", "--runtime", "vscode", "--workspace", str(workspace), "--detach", "--no-open", "--json", timeout=60
    )
    assert proc.returncode == 0, f"oh start failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    info = json.loads(proc.stdout)

    def registered():
        return any(s.get("instance_id") == info["instance_id"] and s.get("editors") for s in vscode.sessions())

    wait_until(registered, 60, "the extension to register with the backend")
    info["session_file"] = json.loads((vscode.oh_home / "sessions" / f"{info['instance_id']}.json").read_text())
    return info


def _client(info: dict[str, Any], name: str = "e2e"):
    from oh.client.sync import SyncClient

    s = info["session_file"]
    return SyncClient.connect(s["url"], s["token"], name=name)


def _wave2_backend(vscode: VsCode) -> bool:
    """The backend sends `agent` / `allowed_roots` (SPEC-wave2 A/B/E): the extension logs the roots it got."""
    return "allowed roots" in vscode.extension_log()


@pytest.fixture(scope="module")
def nested(vscode: VsCode):
    sub = vscode.workspace / "sub"
    sub.mkdir()
    return _start(vscode, sub)


def test_run_cwd_confined_to_the_backend_workspace(vscode: VsCode, nested: dict):
    """#14: window on ws, backend on ws/sub: a cwd of ws (absolute or relative) is PATH_DENIED; '.' is ws/sub."""
    sub = os.path.realpath(vscode.workspace / "sub")
    with _client(nested) as c:
        obs = c.run("pwd", timeout=30)  # a new terminal starts in the backend's workspace, not the window's folder
        assert obs["content"] == sub + "\n", obs
        for cwd in (str(vscode.workspace), "..", "../sub/.."):
            obs = c.run("pwd", cwd=cwd, timeout=30)
            assert obs["observation"] == "error" and obs["extras"]["error_id"] == "PATH_DENIED", (cwd, obs)
        obs = c.run("pwd", cwd=".", timeout=30)
        assert obs["content"] == sub + "\n", obs
        md = obs["extras"]["metadata"]
        assert md["working_dir"] == sub and md["username"] and md["hostname"], md
    log = vscode.extension_log()
    assert re.search(r"terminal ready (with shell integration|in \d+ ms \(shell engine)", log), log[-3000:]


def test_listing_hides_a_symlinked_folder_outside(vscode: VsCode, nested: dict):
    """#7: `view` of a directory does not list what a symlink to an outside folder holds."""
    outside = vscode.base / "outside-dir"
    outside.mkdir()
    (outside / "secret-name.txt").write_text("s")
    (vscode.workspace / "sub" / "link_out").symlink_to(outside)
    (vscode.workspace / "sub" / "visible.txt").write_text("v")
    with _client(nested) as c:
        obs = c.edit(str(vscode.workspace / "sub"), "view")
    assert obs["observation"] == "edit", obs
    assert "visible.txt" in obs["content"], obs
    assert "secret-name" not in obs["content"] and "link_out" not in obs["content"], obs["content"]


def test_edit_never_saves_the_users_unsaved_text(vscode: VsCode, nested: dict):
    """#16: the agent's edit lands in the buffer; with the user's unsaved text there, nothing is written to disk."""
    f = vscode.workspace / "sub" / "dirty.txt"
    f.write_text("first line\nOLD value\n")
    vscode.drive("openFile", path="sub/dirty.txt")
    vscode.drive("focusEditor")
    vscode.drive("press", keys=["Control+End"])
    vscode.drive("type", text="user draft")
    wait_until(lambda: "user draft" in vscode.drive("editorText")["text"], 10, "the typed text")
    proc = vscode.oh("edit", str(f), "--replace", "OLD", "NEW", "--json", cwd=vscode.workspace / "sub")
    assert proc.returncode == 0, proc
    obs = json.loads(proc.stdout)
    assert "NOT saved" in obs["content"], obs
    assert obs["extras"]["old_content"] == "first line\nOLD value\nuser draft"  # whole file, as the SDK wants
    assert obs["extras"]["new_content"] == "first line\nNEW value\nuser draft"
    assert f.read_text() == "first line\nOLD value\n", "the user's unsaved text (or the edit) reached the disk"
    wait_until(lambda: "NEW value" in vscode.drive("editorText")["text"], 10, "the edit in the editor")
    assert "user draft" in vscode.drive("editorText")["text"]
    # the user decides: saving writes both
    vscode.drive("focusEditor")
    vscode.drive("press", keys=["Control+s"])
    wait_until(lambda: f.read_text() == "first line\nNEW value\nuser draft", 15, "the user's save")
    # a clean document is saved by the edit itself
    assert vscode.oh("edit", str(f), "--replace", "NEW", "NEWER", cwd=vscode.workspace / "sub").returncode == 0
    assert f.read_text() == "first line\nNEWER value\nuser draft"


def test_input_echo_and_interrupt_match_the_local_runtime(vscode: VsCode, nested: dict):
    """#17: is_input text comes back once (as the program printed it); a hard timeout's output has no ^C."""
    with _client(nested) as c:
        obs = c.run("read answer; echo got $answer", timeout=1)
        assert obs["extras"]["metadata"]["exit_code"] == -1, obs
        obs = c.run("hello", is_input=True, timeout=20)
        assert obs["content"] == "got hello\n", obs
        obs = c.run("cat", timeout=1)
        obs = c.run("ping", is_input=True, timeout=2)
        assert obs["content"] == "ping\n", obs  # cat's copy only, not the terminal's echo too
        obs = c.run("C-c", is_input=True, timeout=10)
        assert "^C" not in obs["content"], obs
        obs = c.run("sleep 30", blocking=True, timeout=1)
        assert obs["extras"]["metadata"]["exit_code"] == -1 and "timed out" in obs["extras"]["metadata"]["suffix"], obs
        assert obs["content"] == "", obs


def test_run_reset_env_max_output_busy_no_command(vscode: VsCode, nested: dict):
    """SPEC-wave2 C through the real backend: reset, env (never logged), max_output, BUSY, NO_COMMAND."""
    secret = "s3cr3t-value-4711"
    with _client(nested) as c:
        obs = c.send(
            {"action": "run", "args": {"command": "echo $OH_E2E_SECRET", "env": {"OH_E2E_SECRET": secret}}}, timeout=60
        )
        assert obs["content"] == secret + "\n", obs
        obs = c.run("echo again $OH_E2E_SECRET", timeout=30)  # exported: it persists in that shell
        assert obs["content"] == f"again {secret}\n", obs
        obs = c.send({"action": "run", "args": {"command": "seq 1 1000", "max_output": 100}}, timeout=60)
        assert "characters truncated" in obs["content"] and len(obs["content"]) < 200, obs
        obs = c.send({"action": "run", "args": {"command": "seq 1 10000", "max_output": 0}}, timeout=60)
        assert obs["content"] == "".join(f"{i}\n" for i in range(1, 10001)), len(obs["content"])
        obs = c.run("", timeout=10)
        assert obs["observation"] == "error" and obs["extras"]["error_id"] == "NO_COMMAND", obs
        obs = c.run("sleep 20", timeout=0.5)
        # The terminal is busy: since §3.8 the command runs in an extra terminal (was BUSY before).
        obs = c.run("echo blocked", timeout=30)
        assert obs["observation"] == "run" and obs["content"] == "blocked\n", obs
        assert obs["extras"]["metadata"]["job_id"], obs
        obs = c.send({"action": "run", "args": {"command": "", "reset": True}}, timeout=60)
        assert obs["observation"] == "run" and obs["content"] == "Terminal session has been reset.", obs
        assert obs["extras"]["metadata"]["exit_code"] == 0
        obs = c.run("echo fresh ${OH_E2E_SECRET:-unset}; pwd", timeout=30)  # a fresh shell, in the workdir
        assert obs["content"] == f"fresh unset\n{os.path.realpath(vscode.workspace / 'sub')}\n", obs
    assert secret not in vscode.extension_log(), "an env value reached the extension's log"
    assert "run exports OH_E2E_SECRET (values not logged)" in vscode.extension_log()


def test_read_write_encodings(vscode: VsCode, nested: dict):
    """SPEC-wave2 D: base64 read (+ mime type), base64 write, non-UTF-8 text edited in its own encoding, parents
    created."""
    sub = vscode.workspace / "sub"
    png = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, 0x49, 0x48, 0x44, 0x52])
    (sub / "img.png").write_bytes(png)
    (sub / "latin.txt").write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
    with _client(nested) as c:
        obs = c.send({"action": "read", "args": {"path": str(sub / "img.png"), "encoding": "base64"}}, timeout=60)
        assert base64.b64decode(obs["content"]) == png, obs
        assert obs["extras"]["encoding"] == "base64" and obs["extras"]["mime_type"] == "image/png", obs
        obs = c.read(str(sub / "img.png"))
        assert obs["observation"] == "error" and "base64" in obs["content"], obs
        assert "encoding" not in c.read(str(sub / "latin.txt"))["extras"]  # extras only when asked
        assert c.read(str(sub / "latin.txt"))["content"] == "café crème\n"
        obs = c.edit(str(sub / "latin.txt"), "str_replace", old_str="crème", new_str="brûlée")
        assert obs["observation"] == "edit", obs
        assert (sub / "latin.txt").read_bytes() == "caf\xe9 br\xfbl\xe9e\n".encode("latin-1")
        obs = c.send(
            {
                "action": "write",
                "args": {
                    "path": str(sub / "new" / "deep" / "b.bin"),
                    "content": base64.b64encode(b"\x00\x01\xff").decode(),
                    "encoding": "base64",
                },
            },
            timeout=60,
        )
        assert obs["observation"] == "write", obs
        assert (sub / "new" / "deep" / "b.bin").read_bytes() == b"\x00\x01\xff"
        obs = c.edit(str(sub / "missing.txt"), "view")
        assert obs["content"] == (
            f"Invalid `path` parameter: {sub / 'missing.txt'}. The path {sub / 'missing.txt'} does not exist. "
            "Please provide a valid path."
        ), obs


def _agent(info: dict[str, Any], name: str, *, shell: str | None = None, workdir: Path | None = None):
    """An agent connection with the wave-2 handshake headers (X-OH-Shell / X-OH-Workdir)."""
    from oh.client.sync import SyncClient

    s = info["session_file"]
    # SyncClient.connect, not a bare websockets connect(): that one warns (DeprecationWarning, an error in pytest).
    return SyncClient.connect(s["url"], s["token"], name=name, shell=shell, workdir=str(workdir) if workdir else None)


def test_one_terminal_per_agent_shell(vscode: VsCode, nested: dict):
    """SPEC-wave2 E: a terminal per agent shell named `oh · <agent>`, started in the agent's workdir; agents
    sharing an X-OH-Shell key share it (it outlives them); a private shell's terminal goes with its agent."""
    if not _wave2_backend(vscode):
        pytest.skip("needs the wave-2 backend (agent field; core branch)")
    deeper = vscode.workspace / "sub" / "deeper"
    deeper.mkdir(exist_ok=True)
    with _agent(nested, "claude-code", shell="team", workdir=deeper) as a:
        obs = a.run("pwd; export TEAM_VAR=shared", timeout=30)
        assert obs["content"] == os.path.realpath(deeper) + "\n", obs
    assert re.search(
        r'"oh · claude-code" terminal ready (with shell integration|in \d+ ms \(shell engine)', vscode.extension_log()
    )
    with _agent(nested, "second-agent", shell="team") as b:  # same key: same terminal, its exports still there
        obs = b.run("echo $TEAM_VAR", timeout=30)
        assert obs["content"] == "shared\n", obs
    assert 'agent gone: closing the "oh · claude-code"' not in vscode.extension_log()
    with _agent(nested, "private-one") as c:
        # a process of the private shell, found by its name: in the sandbox (a pid namespace) `$$` is not a
        # pid of this machine's /proc
        c.run("sleep 987654 &", timeout=30)
        wait_until(lambda: _proc_running("sleep 987654"), 15, "the private shell's process")
    wait_until(
        lambda: 'agent gone: closing the "oh · private-one" terminal' in vscode.extension_log(),
        15,
        "agent_gone to close the private terminal",
    )
    wait_until(lambda: not _proc_running("sleep 987654"), 15, "the private shell and its processes to end")


def _proc_running(needle: str) -> bool:
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmd and state != "Z":
            return True
    return False


def test_backend_killed_mid_command(vscode: VsCode, nested: dict):
    """#15 (+#13): kill -9 of the backend while a command runs: the status bar stops spinning, the user is
    asked whether to interrupt the orphaned command, and the next backend's first run is not blocked."""
    holder: dict = {}

    def long_run():
        try:
            with _client(nested) as c:
                holder["obs"] = c.run("sleep 307", blocking=True, timeout=600)
        except Exception as exc:  # noqa: BLE001 - the backend dies under it
            holder["error"] = exc

    t = threading.Thread(target=long_run, daemon=True)
    t.start()
    wait_until(lambda: _proc_running("sleep 307"), 30, "the command to run in the terminal")
    wait_until(
        lambda: any("sleep 307" in i for i in vscode.drive("statusBar")["items"]),
        15,
        "the status bar to show the action",
    )
    os.kill(nested["pid"], signal.SIGKILL)
    t.join(30)
    wait_until(
        lambda: not any("sleep 307" in i for i in vscode.drive("statusBar")["items"]),
        30,
        "the status bar to stop showing the dead action",
    )
    wait_until(
        lambda: f"oh {nested['instance_id']} is gone" in vscode.extension_log(),
        30,
        "the extension to notice the backend is gone",
    )
    assert _proc_running("sleep 307"), "nobody asked to kill the orphaned command yet"
    answer = vscode.drive("notification", button="Interrupt it", text="sleep 307", timeout=30)
    assert "backend went away" in answer["message"], answer
    wait_until(lambda: not _proc_running("sleep 307"), 20, "the orphaned command to be interrupted")
    # the next backend (on the window's folder this time) runs its first command at once
    info = _start(vscode, vscode.workspace)
    proc = vscode.oh("run", "--", "echo", "after the crash", timeout=90)
    assert proc.returncode == 0 and proc.stdout == "after the crash\n", proc
    assert "NOT executed" not in proc.stdout + proc.stderr
    nested["next"] = info


def test_cli_from_outside_runs_where_the_backend_says(vscode: VsCode, nested: dict):
    """#18: `oh run` from a directory outside the workspace runs in the workspace root (args.cwd from the
    backend), never in the shared terminal's last directory."""
    if not _wave2_backend(vscode):
        pytest.skip("needs the wave-2 backend (agent field and args.cwd from the backend; core branch)")
    (vscode.workspace / "deeper").mkdir(exist_ok=True)
    assert vscode.oh("run", "--", "cd deeper").returncode == 0
    proc = vscode.oh("run", "-C", str(vscode.workspace), "--", "pwd", cwd=vscode.base)
    assert proc.returncode == 0 and proc.stdout == os.path.realpath(vscode.workspace) + "\n", proc
