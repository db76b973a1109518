"""Real projects for the ensure tests, installable with no package index: a wheel built here (a zip
with METADATA, WHEEL, RECORD) named by path in requirements.txt, and an npm package with a local
``file:`` dependency and the lockfile npm itself wrote."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import zipfile
from pathlib import Path


def make_wheel(dest: Path, name: str = "ohtiny", version: str = "0.1", body: str = "VALUE = 1\n") -> Path:
    """A pure-Python wheel ``name-version-py3-none-any.whl`` with one module ``name``."""
    dest.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": body.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: oh-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = dest / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return wheel


def python_project(root: Path, *, version: str = "0.1") -> Path:
    """requirements.txt naming a local wheel (relative to the project: the install runs there)."""
    root.mkdir(parents=True, exist_ok=True)
    wheel = make_wheel(root / "wheels", version=version, body=f"VALUE = {version!r}\n")
    (root / "requirements.txt").write_text(f"./wheels/{wheel.name}\n")
    return root


def node_project(root: Path, *, lock: bool = True) -> Path:
    """package.json depending on ./tiny (file:), with package-lock.json written by npm (no registry)."""
    tiny = root / "tiny"
    tiny.mkdir(parents=True, exist_ok=True)
    (tiny / "package.json").write_text(
        json.dumps({"name": "tiny", "version": "1.0.0", "main": "index.js", "bin": {"tiny": "cli.js"}})
    )
    (tiny / "index.js").write_text("module.exports = 42;\n")
    (tiny / "cli.js").write_text("#!/usr/bin/env node\nconsole.log('tiny', require('./index.js'));\n")
    (root / "package.json").write_text(
        json.dumps({"name": "app", "version": "1.0.0", "private": True, "dependencies": {"tiny": "file:./tiny"}})
    )
    if lock:
        subprocess.run(
            ["npm", "install", "--package-lock-only", "--no-audit", "--no-fund", "--offline"],
            cwd=root,
            check=True,
            capture_output=True,
            timeout=120,
        )
    return root


def uv_project(root: Path, uv: str) -> Path:
    """pyproject.toml (a virtual project: nothing to build) depending on a local wheel, locked by uv (offline)."""
    root.mkdir(parents=True, exist_ok=True)
    wheel = make_wheel(root / "wheels")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "uvp"\nversion = "0.1.0"\nrequires-python = ">=3.8"\ndependencies = ["ohtiny"]\n\n'
        "[tool.uv]\npackage = false\n\n"
        f'[tool.uv.sources]\nohtiny = {{ path = "wheels/{wheel.name}" }}\n'
    )
    subprocess.run([uv, "lock", "--offline"], cwd=root, check=True, capture_output=True, timeout=120)
    return root


class PackageIndex:
    """A PEP 503 "simple" package index on 127.0.0.1 (an ephemeral port) serving one hand-built wheel: what an
    install needs the network for, without leaving this machine. ``requested`` lists the paths fetched."""

    def __init__(self, root: Path, name: str = "ohtiny", version: str = "0.1") -> None:
        import functools
        import http.server
        import threading

        wheel = make_wheel(root / "files", name, version, body=f"VALUE = 'from the index {version}'\n")
        page = root / "simple" / name / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f'<a href="../../files/{wheel.name}">{wheel.name}</a>\n')
        (root / "simple" / "index.html").write_text(f'<a href="{name}/">{name}</a>\n')
        self.name = name
        self.requested: list[str] = []
        requested = self.requested

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                requested.append(self.path)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.server.server_port}/simple/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def project(self, root: Path) -> Path:
        """requirements.txt installing the index's package from this index only (pip's --index-url)."""
        root.mkdir(parents=True, exist_ok=True)
        (root / "requirements.txt").write_text(f"--index-url {self.url}\n{self.name}\n")
        return root

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
