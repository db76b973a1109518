"""From the wheel alone (issue 20): build it (PEP 517, `python -m build --wheel`), install it into a fresh
virtual environment with no repository on the path, let that wheel's own `oh vscode install` put its
bundled extension into a scratch extensions directory of a real code-server, start the workbench on it,
and have VS Code run an agent's action through that same `oh` (`oh start --runtime vscode`, `oh run`).

Nothing from the repository reaches the workbench: run.sh neither builds nor installs a .vsix here
(OH_E2E_EXTENSIONS_DIR, see tests/e2e/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import CODE_SERVER, E2E_DIR, REPO, VsCode, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXTENSIONS_FIXTURE = "wheel_extensions"


def _clean_env(**extra: str) -> dict[str, str]:
    """No PYTHONPATH, no virtualenv of the test run: the venv's `oh` must stand on the wheel alone."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME") and not k.startswith("OH_")
    }
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(REPO)))
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not CODE_SERVER.exists():
        pytest.skip(f"code-server is not installed in {E2E_DIR} (extension/e2e/setup.sh)")
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    p = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=base,
    )
    assert p.returncode == 0, f"python -m build --wheel failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    (whl,) = dist.glob("oh_editor_runtime-*.whl")
    # the wheel carries the extension, as built from extension/ (its version)
    with zipfile.ZipFile(whl) as z:
        vsix = z.read("oh/vsix/oh-vscode.vsix")
    (base / "bundled.vsix").write_bytes(vsix)
    with zipfile.ZipFile(base / "bundled.vsix") as z:
        bundled_version = json.loads(z.read("extension/package.json"))["version"]
    assert bundled_version == json.loads((REPO / "extension" / "package.json").read_text())["version"]
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    p = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(whl)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=base,
        env=_clean_env(),
    )
    assert p.returncode == 0, p.stderr[-3000:]
    oh = venv / "bin" / "oh"
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import oh; print(oh.__file__)"],
        capture_output=True,
        text=True,
        cwd=base,
        env=_clean_env(),
        timeout=60,
    ).stdout.strip()
    assert where.startswith(str(venv)), f"oh imported from {where}, not from the venv"
    return {"base": base, "oh": str(oh), "version": bundled_version}


@pytest.fixture(scope="module")
def wheel_extensions(wheel: dict) -> Path:
    """The wheel's own `oh vscode install --editor <code-server>` into a scratch extensions directory."""
    base: Path = wheel["base"]
    exts = base / "exts"
    env = _clean_env(
        XDG_CONFIG_HOME=str(base / "xdg" / "config"),
        XDG_DATA_HOME=str(base / "xdg" / "data"),
        XDG_CACHE_HOME=str(base / "xdg" / "cache"),
    )
    args = ["--editor", str(CODE_SERVER), "--extensions-dir", str(exts)]
    dry = subprocess.run(
        [wheel["oh"], "vscode", "install", *args, "--dry-run"],
        capture_output=True,
        text=True,
        cwd=base,
        env=env,
        timeout=300,
    )
    assert dry.returncode == 0 and "would install" in dry.stdout and "--install-extension" in dry.stdout, (
        dry.stdout + dry.stderr
    )
    assert not exts.exists() or not any(exts.glob("oh-dev.oh-vscode-*")), "--dry-run installed something"
    p = subprocess.run(
        [wheel["oh"], "vscode", "install", *args], capture_output=True, text=True, cwd=base, env=env, timeout=600
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"installed oh-dev.oh-vscode {wheel['version']} (was: not installed)" in p.stdout
    again = subprocess.run(
        [wheel["oh"], "vscode", "install", *args], capture_output=True, text=True, cwd=base, env=env, timeout=300
    )
    assert again.returncode == 0 and f"already has oh-dev.oh-vscode {wheel['version']}" in again.stdout  # idempotent
    st = subprocess.run(
        [wheel["oh"], "vscode", "status", *args, "--json"],
        capture_output=True,
        text=True,
        cwd=base,
        env=env,
        timeout=300,
    )
    (row,) = json.loads(st.stdout)["editors"]
    assert (row["editor"], row["installed_version"], row["state"]) == ("code-server", wheel["version"], "current")
    # the bundled .vsix came from inside the venv, not from the repository
    assert json.loads(st.stdout)["bundled"]["path"].startswith(str(base / "venv"))
    return exts


def test_the_wheels_oh_drives_vscode(vscode: VsCode, wheel: dict):
    oh = wheel["oh"]
    env = {**vscode.env, "PATH": _clean_env()["PATH"]}
    env.pop("PYTHONPATH", None)

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [oh, *args], capture_output=True, text=True, cwd=vscode.workspace, env=env, timeout=timeout
        )

    p = run("start", "--runtime", "vscode", "--detach", "--no-open", "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout.strip().splitlines()[-1])
    try:
        st = wait_until(
            lambda: next(
                (
                    s
                    for s in json.loads(run("status", "--json").stdout).get("sessions", [])
                    if s.get("instance_id") == info["instance_id"] and s.get("editors")
                ),
                None,
            ),
            90,
            "the VS Code extension (installed by the wheel's oh) to connect",
        )
        (editor,) = st["editors"]
        assert (
            editor["extension_version"] == wheel["version"] and "version_check" not in editor
        )  # one release on both sides
        marker = "ran-in-vscode-from-the-wheel"
        p = run("run", f"echo {marker} > made-by-wheel.txt && cat made-by-wheel.txt")
        assert p.returncode == 0, p.stdout + p.stderr
        assert marker in p.stdout
        assert (vscode.workspace / "made-by-wheel.txt").read_text().strip() == marker
        assert marker in vscode.extension_log(), "the command did not go through the VS Code extension"
    finally:
        run("stop", info["instance_id"], timeout=60)
