"""A mismatched pair in a real VS Code (issue 20): the workbench runs an older release of the extension
(the current .vsix repacked as 0.0.1 and installed with `oh vscode install --vsix`) against this oh. It
connects (the protocol is shared), and every surface names the fix: VS Code's notification and status
bar, `oh status`, `oh doctor`-style JSON from `GET /v1/status`. The refused direction (no shared
protocol) is covered with real sockets in tests/backend/test_versions.py and the extension's manager
tests."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from oh import __version__

from .conftest import CODE_SERVER, E2E_DIR, REPO, VsCode, wait_until

pytestmark = pytest.mark.e2e

EXTENSIONS_FIXTURE = "old_extension"
OLD = "0.0.1"


def _repack(src: Path, dst: Path, version: str) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "extension/package.json":
                manifest = json.loads(data)
                manifest["version"] = version
                data = json.dumps(manifest).encode()
            elif item.filename == "extension.vsixmanifest":
                data = re.sub(rb'(<Identity [^>]*Version=")[^"]+(")', rb"\g<1>" + version.encode() + rb"\g<2>", data)
            zout.writestr(item, data)


@pytest.fixture(scope="module")
def old_extension(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not CODE_SERVER.exists():
        pytest.skip(f"code-server is not installed in {E2E_DIR} (extension/e2e/setup.sh)")
    vsix = REPO / "extension" / "oh-vscode.vsix"
    if not vsix.exists():
        subprocess.run(
            ["npm", "run", "-s", "package"], cwd=REPO / "extension", check=True, timeout=600, capture_output=True
        )
    base = tmp_path_factory.mktemp("oldext")
    old = base / "oh-vscode-old.vsix"
    _repack(vsix, old, OLD)
    exts = base / "exts"
    env = {
        "PATH": "/usr/bin:/bin",
        "XDG_DATA_HOME": str(base / "xdg"),
        "XDG_CONFIG_HOME": str(base / "xdg"),
        "HOME": str(base),
    }
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "oh",
            "vscode",
            "install",
            "--editor",
            str(CODE_SERVER),
            "--extensions-dir",
            str(exts),
            "--vsix",
            str(old),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=base,
    )
    assert p.returncode == 0 and f"installed oh-dev.oh-vscode {OLD}" in p.stdout, p.stdout + p.stderr
    return exts


def test_an_older_extension_is_told_the_fix_everywhere(vscode: VsCode):
    p = vscode.oh("start", "--runtime", "vscode", "--detach", "--no-open", "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout.strip().splitlines()[-1])
    try:
        st = wait_until(
            lambda: next(
                (s for s in vscode.sessions() if s["instance_id"] == info["instance_id"] and s.get("editors")), None
            ),
            90,
            "the older extension to connect",
        )
        (editor,) = st["editors"]
        assert editor["extension_version"] == OLD
        vc = editor["version_check"]
        assert (
            vc["status"] == "warn"
            and f"oh {__version__} and the oh extension {OLD} are from different releases" in vc["message"]
        )
        assert "oh vscode install" in vc["fix"]
        # `oh status` (text)
        text = vscode.oh("status").stdout
        assert "warning    oh " in text and "Run `oh vscode install`" in text
        # VS Code: one notification naming the fix, and the status bar item
        toast = vscode.drive("toastText", text="different releases", timeout=30)["message"]
        assert "oh vscode install" in toast, toast
        items = vscode.drive("statusBar")["items"]
        assert any("oh: connected to" in i for i in items), items  # the warning colour and mark: statusline.ts
        # it still works: the protocol is shared
        r = vscode.oh("run", "echo still-works")
        assert r.returncode == 0 and "still-works" in r.stdout, r.stdout + r.stderr
    finally:
        vscode.oh("stop", info["instance_id"], timeout=60)
