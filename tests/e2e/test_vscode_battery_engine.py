"""The battery in real VS Code, `oh.terminalMode: engine` (the default). See test_vscode_battery.py."""

from __future__ import annotations

from .conftest import VsCode
from .test_vscode_battery import USER_SHELL, backend, pytestmark, run_mode_battery  # noqa: F401 (fixtures, marks)

TERMINAL_MODE = "engine"


async def test_battery_engine_mode(vscode: VsCode, backend: dict):
    failures = await run_mode_battery(vscode, backend, "engine")
    assert not failures, "\n".join(failures)
    log = vscode.extension_log()
    assert "(shell engine: bash" in log, log[-3000:]
