"""`npm ci` with escalation, end to end (issue 27's test list): a real npm against a loopback npm registry this
test serves itself (127.0.0.1, ephemeral port: the package document and the tarball of a package it packs, its
sha512 integrity in the lockfile), a real `oh start` (local runtime, workspace-write, network off).

Inside the sandbox `npm ci` fails (no network) and nothing is installed; `oh run --network ... -- npm ci`
rejected: nothing installed and nothing reached the registry; approved: node_modules there and the package
requireable; `oh ensure` of the same project asks for the network the same way and installs once allowed."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import http.server
import io
import json
import shutil
import tarfile
import threading
from pathlib import Path

import pytest

from sandboxed import needs_bwrap

from .helpers import AGENT_WAIT, Oh, watch

pytestmark = [
    needs_bwrap,
    pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed"),
    pytest.mark.timeout(240),
]

NAME, VERSION = "oh-tiny-pkg", "1.0.0"


def _tarball() -> bytes:
    """An npm package tarball (what `npm pack` makes: a gzipped tar whose entries sit under ``package/``)."""
    files = {
        "package/package.json": json.dumps({"name": NAME, "version": VERSION, "main": "index.js"}),
        "package/index.js": "module.exports = 'tiny says hi';\n",
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


class Registry:
    """A loopback npm registry for one package: ``GET /<name>`` (its document) and its tarball; counts
    every request that reaches it."""

    def __init__(self) -> None:
        self.tgz = _tarball()
        self.integrity = "sha512-" + base64.b64encode(hashlib.sha512(self.tgz).digest()).decode()
        self.requests: list[str] = []
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.requests.append(self.path)
                body, kind = registry.answer(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args) -> None:  # quiet
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    @property
    def tarball_url(self) -> str:
        return f"{self.url}{NAME}/-/{NAME}-{VERSION}.tgz"

    def answer(self, path: str) -> tuple[bytes | None, str]:
        if path.split("?")[0] == f"/{NAME}":
            dist = {
                "tarball": self.tarball_url,
                "integrity": self.integrity,
                "shasum": hashlib.sha1(self.tgz).hexdigest(),
            }
            doc = {
                "name": NAME,
                "dist-tags": {"latest": VERSION},
                "versions": {VERSION: {"name": NAME, "version": VERSION, "main": "index.js", "dist": dist}},
            }
            return json.dumps(doc).encode(), "application/json"
        if path == f"/{NAME}/-/{NAME}-{VERSION}.tgz":
            return self.tgz, "application/octet-stream"
        return None, "text/plain"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def _project(ws: Path, registry: Registry) -> None:
    """package.json + package-lock.json (v3) naming the loopback registry; .npmrc: fail fast without it."""
    (ws / "package.json").write_text(
        json.dumps({"name": "app", "version": "0.0.0", "private": True, "dependencies": {NAME: VERSION}})
    )
    lock = {
        "name": "app",
        "version": "0.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {
            "": {"name": "app", "version": "0.0.0", "dependencies": {NAME: VERSION}},
            f"node_modules/{NAME}": {
                "version": VERSION,
                "resolved": registry.tarball_url,
                "integrity": registry.integrity,
            },
        },
    }
    (ws / "package-lock.json").write_text(json.dumps(lock, indent=2))
    # no retries (npm waits 10 s and more between them) and no calls to the public registry (audit, fund,
    # update check): the test's registry is the only server npm may talk to
    (ws / ".npmrc").write_text(
        f"registry={registry.url}\nfetch-retries=0\nfetch-timeout=20000\naudit=false\nfund=false\n"
        "update-notifier=false\n"
    )


@pytest.fixture
def npm_oh(tmp_path: Path):
    runner = Oh(tmp_path)
    (runner.user_home / ".npm").mkdir()  # npm's cache: writable in the sandbox (sandbox_writable default)
    registry = Registry()
    _project(runner.workspace, registry)
    yield runner, registry
    runner.stop()
    registry.close()


def _requireable(oh: Oh) -> str:
    p = oh("run", "--", "node", "-e", f"console.log(require('{NAME}'))")
    return p.stdout


def test_npm_ci_fails_in_the_sandbox_and_installs_only_when_the_network_is_allowed(npm_oh):
    oh, registry = npm_oh
    modules = oh.workspace / "node_modules" / NAME
    oh.start()  # workspace-write, network off, consent never
    # in the sandbox: no network, nothing installed, nothing reached the registry
    p = oh("run", "--", "npm", "ci", timeout=120)
    assert p.returncode != 0 and not modules.exists(), (p.stdout, p.stderr)
    assert registry.requests == []
    # asked for the network, rejected: nothing installed, nothing reached the registry
    proc = oh.agent("run", "--network", "npm ci fetches the dependencies", "--", "npm", "ci")
    [row] = oh.pending()
    assert "NETWORK on (still sandboxed" in row["reason"] and "npm ci fetches" in row["reason"], row
    oh("reject", row["id"], "--reason", "not now")
    out, err = proc.communicate(timeout=AGENT_WAIT)
    assert proc.returncode != 0 and "not now" in out + err, (out, err)
    assert not modules.exists() and registry.requests == []
    # approved: installed from the loopback registry, and requireable from the agent's (sandboxed) shell
    proc = oh.agent("run", "--network", "npm ci fetches the dependencies", "--", "npm", "ci")
    [row] = oh.pending()
    assert oh("approve", row["id"]).returncode == 0
    out, err = proc.communicate(timeout=AGENT_WAIT * 2)
    assert proc.returncode == 0, (out, err)
    assert (modules / "index.js").exists(), (out, err)
    assert registry.requests, "npm ci did not fetch from the loopback registry"
    assert "tiny says hi" in _requireable(oh)


async def test_oh_ensure_of_an_npm_project_installs_once_allowed(npm_oh):
    oh, registry = npm_oh
    modules = oh.workspace / "node_modules" / NAME
    oh.start()
    conn = await watch(oh)  # someone can answer (as the live view): the install is asked, not refused
    try:
        proc = oh.agent("ensure", "--only", "node", "--json")
        [row] = await asyncio.to_thread(oh.pending)
        assert "NETWORK on (still sandboxed" in row["reason"] and "npm" in row["what"], row
        assert not modules.exists() and registry.requests == []
        assert (await asyncio.to_thread(oh, "approve", row["id"])).returncode == 0
        out, err = await asyncio.to_thread(proc.communicate, timeout=AGENT_WAIT * 2)
        assert proc.returncode == 0, (out, err)
        assert (modules / "index.js").exists() and registry.requests, (out, err)
    finally:
        await conn.close()
    assert "tiny says hi" in await asyncio.to_thread(_requireable, oh)
