"""Fixtures: real backends on ephemeral loopback ports, in-process and as real processes."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oh.backend.server import Backend, BackendConfig

TOKEN = "test-token-" + secrets.token_urlsafe(16)


@pytest.fixture
async def make_backend(workspace: Path, oh_home: Path):
    """Factory: start an in-process backend; all are stopped at teardown."""
    started = StartedBackends()

    async def factory(runtime: str = "local", **kw) -> Backend:
        cfg = BackendConfig(
            workspace=str(kw.pop("workspace", workspace)),
            runtime=runtime,
            trace_path=oh_home / "traces" / "t.jsonl",
            **kw,
        )
        return await started.start(cfg, kw.pop("token", TOKEN))

    yield factory
    await started.stop_all("test teardown")


class StartedBackends:
    """In-process backends a test started, to stop them all at teardown (each stop bounded)."""

    def __init__(self) -> None:
        self.backends: list[Backend] = []

    async def start(self, cfg: BackendConfig, *tokens: str) -> Backend:
        b = Backend(cfg, *tokens)
        await b.start()
        self.backends.append(b)
        return b

    async def stop_all(self, why: str) -> None:
        for b in self.backends:
            await asyncio.wait_for(b.stop(why), 15)


def start_backend_process(
    workspace: Path, env: dict, runtime: str = "local", extra: list[str] | None = None, token: str = TOKEN
):
    """`python -m oh.backend` exactly as the launcher runs it: token on stdin, ready line on a pipe."""
    r, w = os.pipe()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "oh.backend",
            "--workspace",
            str(workspace),
            "--runtime",
            runtime,
            "--token-stdin",
            "--ready-fd",
            str(w),
            *(extra or []),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(w,),
        env=env,
        start_new_session=True,
    )
    os.close(w)
    proc.stdin.write((token + "\n").encode())
    proc.stdin.close()
    with os.fdopen(r, "rb") as f:
        deadline = time.monotonic() + 20
        line = b""
        while not line.endswith(b"\n") and time.monotonic() < deadline:
            chunk = f.read(1)
            if not chunk:
                break
            line += chunk
    ready = json.loads(line) if line else {"ready": False, "error": "no ready line"}
    return proc, ready
