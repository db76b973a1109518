"""A real backend running in its own thread and event loop, for tests that drive it with blocking
clients (hypothesis examples are synchronous)."""

from __future__ import annotations

import asyncio
import secrets
import threading
from pathlib import Path

import pytest

from oh.backend.server import Backend, BackendConfig

TOKEN = "sec-token-" + secrets.token_urlsafe(16)
# The editor leg's own credential (/v1/editor accepts only this one; docs/security.md §2).
EDITOR_TOKEN = "sec-editor-" + secrets.token_urlsafe(16)
EDITOR_AUTH = {"Authorization": f"Bearer {EDITOR_TOKEN}"}


class ThreadedBackend:
    def __init__(self, config: BackendConfig, token: str = TOKEN) -> None:
        self.config, self.token = config, token
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> Backend:
        self.thread.start()
        self.backend = asyncio.run_coroutine_threadsafe(self._make(), self.loop).result(15)
        return self.backend

    async def _make(self) -> Backend:
        b = Backend(self.config, self.token, EDITOR_TOKEN)
        await b.start()
        return b

    def call(self, coro, timeout: float = 15):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def __exit__(self, *exc) -> None:
        try:
            self.call(self.backend.stop("test teardown"), 20)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)


@pytest.fixture
def threaded_backend(workspace, oh_home):
    made: list[ThreadedBackend] = []

    def factory(runtime: str = "vscode", **kw) -> tuple[ThreadedBackend, Backend]:
        cfg = BackendConfig(
            workspace=str(workspace), runtime=runtime, trace_path=oh_home / "traces" / "fuzz.jsonl", **kw
        )
        tb = ThreadedBackend(cfg)
        b = tb.__enter__()
        made.append(tb)
        return tb, b

    yield factory
    for tb in made:
        tb.__exit__(None, None, None)


# ----------------------------------------------------------------------------- figures
# Measured numbers (latencies, counts, RSS) that docs/security.md and docs/reliability.md report.
# Printed in pytest's terminal summary; also written as JSON to $OH_FIGURES when it is set.
FIGURES: dict[str, object] = {}


def record(name: str, value: object) -> None:
    FIGURES[name] = value


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest hook
    if not FIGURES:
        return
    import json
    import os

    terminalreporter.section("security / reliability figures")
    for name, value in FIGURES.items():
        terminalreporter.write_line(f"{name}: {json.dumps(value, default=str)}")
    out = os.environ.get("OH_FIGURES")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(FIGURES, f, indent=2, default=str)


# ----------------------------------------------------------------------------- real `oh` processes
@pytest.fixture
def oh(tmp_path: Path):
    """`python -m oh` with an isolated OH_HOME/HOME/XDG (the CLI suite's runner), cleaned up after."""
    from cli.conftest import Oh

    runner = Oh(tmp_path)
    yield runner
    runner.cleanup()
