"""The battery in real VS Code, `oh.terminalMode: shell` (VS Code's shell integration, issue 17 item 2).
See test_vscode_battery.py: every case passes but the listed ones, which this mode cannot do by design."""

from __future__ import annotations

from .conftest import VsCode
from .test_vscode_battery import SHELL_MODE_DIFFERS, USER_SHELL, backend, pytestmark, run_mode_battery  # noqa: F401

TERMINAL_MODE = "shell"


async def test_battery_shell_mode(vscode: VsCode, backend: dict):
    failures = await run_mode_battery(vscode, backend, "shell")
    failed = {f.split(" (step")[0].split(": ")[0] for f in failures}
    unexpected = [f for f in failures if f.split(" (step")[0].split(": ")[0] not in SHELL_MODE_DIFFERS]
    assert not unexpected, "\n".join(unexpected)
    assert failed == set(SHELL_MODE_DIFFERS), f"now passing (update SHELL_MODE_DIFFERS): {set(SHELL_MODE_DIFFERS) - failed}"
