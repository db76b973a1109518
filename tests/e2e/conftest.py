"""A real VS Code for the end-to-end tests: code-server 4.99.4 (VS Code 1.99.3) in headless Chromium,
the oh extension installed from its .vsix, real ``oh`` processes with an isolated ``OH_HOME``.

Everything is started by ``extension/e2e/run.sh start`` (which first runs the idempotent
``extension/e2e/setup.sh`` unless ``OH_E2E_SKIP_SETUP=1``) and torn down by ``run.sh stop``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from waiting import poll_until

REPO = Path(__file__).resolve().parents[2]
RUN_SH = REPO / "extension" / "e2e" / "run.sh"
E2E_DIR = Path(os.environ.get("OH_E2E_DIR", REPO / ".e2e"))
CODE_SERVER = E2E_DIR / "code-server" / "node_modules" / ".bin" / "code-server"  # what extension/e2e/setup.sh installs
FAIL_KEYRING = "keyring.backends.fail.Keyring"


def wait_until(cond: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    """Polls ``cond`` until it returns something truthy; fails the test after ``timeout`` seconds."""
    return poll_until(cond, timeout, what, interval)


@dataclass
class VsCode:
    """The running workbench, its extension's log, and an ``oh`` runner sharing its OH_HOME."""

    base: Path
    workspace: Path
    oh_home: Path
    state: Path
    env: dict[str, str]
    info: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ oh
    def oh(
        self, *args: str, input: str | None = None, timeout: float = 60, cwd: Path | None = None
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "oh", *args],
            input=input,
            capture_output=True,
            text=True,
            cwd=cwd or self.workspace,
            env=self.env,
            timeout=timeout,
        )

    def oh_json(self, *args: str, timeout: float = 60) -> Any:
        proc = self.oh(*args, timeout=timeout)
        try:
            return json.loads(proc.stdout)
        except ValueError:
            raise AssertionError(
                f"oh {' '.join(args)}: no JSON (rc {proc.returncode})\n{proc.stdout}\n{proc.stderr}"
            ) from None

    def sessions(self) -> list[dict[str, Any]]:
        return self.oh_json("status", "--json").get("sessions", [])

    def start_backend(self, *extra: str) -> dict[str, Any]:
        """`oh start --runtime vscode` for this window's workspace (detached, ``extra`` options added), once the
        extension has registered with it: its `oh start --json` answer."""
        where = ("--workspace", str(self.workspace), "--detach", "--no-open", "--json")
        proc = self.oh("start", "--runtime", "vscode", *extra, *where, timeout=60)
        assert proc.returncode == 0, f"oh start failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        info = json.loads(proc.stdout)

        def registered() -> bool:
            return any(s.get("instance_id") == info["instance_id"] and s.get("editors") for s in self.sessions())

        wait_until(registered, 60, "the extension to register with the backend")
        return info

    # ------------------------------------------------------------------ the workbench
    def drive(self, op: str, timeout: float = 90, **kw: Any) -> dict[str, Any]:
        """One user action in the workbench through drive.js's control server."""
        body = json.dumps({"op": op, **kw}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.info['control_port']}/", data=body, method="POST")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            answer = json.loads(resp.read())
        assert answer.get("ok"), f"workbench op {op} failed: {answer.get('error')}"
        return answer

    def extension_log(self) -> str:
        try:
            return Path(self.info["extension_log"]).read_text(encoding="utf-8")
        except OSError:
            return ""

    def screenshot(self, name: str) -> None:
        try:
            self.drive("screenshot", path=str(self.state / f"{name}.png"), timeout=20)
        except Exception:  # noqa: BLE001 - a debugging aid only
            pass


def _node_major() -> int | None:
    node = shutil.which("node")
    if not node:
        return None
    try:
        out = subprocess.run(
            [node, "-p", "process.versions.node.split('.')[0]"], capture_output=True, text=True, timeout=10
        )
        return int(out.stdout.strip())
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


@pytest.fixture(scope="module")
def vscode(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    if _node_major() != 20:
        pytest.skip("the VS Code end-to-end test needs node 20 (code-server 4.99 refuses other versions)")
    base = tmp_path_factory.mktemp("vscode-e2e")
    workspace = (base / "ws").resolve()
    workspace.mkdir()
    oh_home = base / "ohhome"
    state = base / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "XDG_")) and k != "PYTHON_KEYRING_BACKEND"}
    env.update(
        OH_HOME=str(oh_home),
        XDG_DATA_HOME=str(base / "xdg-data"),
        XDG_CONFIG_HOME=str(base / "xdg-config"),
        XDG_STATE_HOME=str(base / "xdg-state"),
        PYTHON_KEYRING_BACKEND=FAIL_KEYRING,
        COLUMNS="200",
    )
    for key in ("OH_E2E_DIR", "OH_E2E_SKIP_SETUP", "OH_E2E_TIMEOUT", "OH_VSCODE_TRACE"):
        if key in os.environ:
            env[key] = os.environ[key]
    # A module's USER_SHELL = (make_home, shell): VS Code (its terminals, the extension host and the shell
    # engine it starts) runs with that HOME and $SHELL, as a user's VS Code would (tests/shell/home.py).
    user_shell = getattr(request.module, "USER_SHELL", None)
    if user_shell:
        make_home, shell = user_shell
        env["HOME"] = str(make_home(base))
        env["SHELL"] = shutil.which(shell) or f"/bin/{shell}"
        env.pop("ZDOTDIR", None)
    vs = VsCode(base=base, workspace=workspace, oh_home=oh_home, state=state, env=env)
    # oh.terminalMode from the start (a live settings change may land after the first terminal opens):
    # a module's TERMINAL_MODE, else OH_E2E_TERMINAL_MODE=fast to run any module in fast mode.
    mode = getattr(request.module, "TERMINAL_MODE", None) or os.environ.get("OH_E2E_TERMINAL_MODE")
    if mode:
        (workspace / ".vscode").mkdir()
        (workspace / ".vscode" / "settings.json").write_text(json.dumps({"oh.terminalMode": mode}))
    # A module that installs the extension itself (test_vscode_wheel.py: from a built wheel, with its own
    # `oh vscode install`) names the fixture that returns that extensions directory.
    exts_fixture = getattr(request.module, "EXTENSIONS_FIXTURE", None)
    if exts_fixture:
        env["OH_E2E_EXTENSIONS_DIR"] = str(request.getfixturevalue(exts_fixture))
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", str(RUN_SH), "start", str(state), str(workspace)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if proc.returncode != 0:
        subprocess.run(["bash", str(RUN_SH), "stop", str(state)], capture_output=True, timeout=60)
        pytest.fail(f"run.sh start failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    vs.info = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"VS Code workbench up in {time.monotonic() - started:.1f} s: {vs.info}")
    try:
        yield vs
    finally:
        vs.screenshot("final")
        try:
            vs.oh("stop", "--all", timeout=30)
        except subprocess.SubprocessError:
            pass
        subprocess.run(["bash", str(RUN_SH), "stop", str(state)], capture_output=True, timeout=60)
        # Keep the logs and screenshots where CI (and people) can find them after pytest cleans tmp: one folder
        # per test module, so each module's screenshots of the states it checks (issue 42) stay side by side.
        root = Path(os.environ.get("OH_E2E_ARTIFACTS", REPO / ".e2e" / "last-run"))
        artifacts = root / request.module.__name__.rsplit(".", 1)[-1]
        shutil.rmtree(artifacts, ignore_errors=True)
        artifacts.mkdir(parents=True, exist_ok=True)
        for f in list(state.glob("*.log")) + list(state.glob("*.png")):
            shutil.copy2(f, artifacts / f.name)
        print(f"extension log (all logs in {artifacts}):\n" + vs.extension_log()[-6000:])
