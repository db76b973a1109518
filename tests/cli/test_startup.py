"""`oh status` / `oh --version` stay lazy: heavy modules are imported only by the commands that need them.

Not a timing test (timings live in benchmarks/cli_startup.py); it fails when an import creeps in.
"""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("rich.live", "rich.table", "websockets", "keyring", "psutil", "typer._adapters", "oh.client", "oh.backend")


def _imported(oh, *args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "oh", *args], env=oh.env, capture_output=True, text=True, timeout=30)
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


def test_status_without_backends_imports_nothing_heavy(oh):
    mods = _imported(oh, "status")
    assert "oh.commands.status" in mods
    assert not [m for m in HEAVY if m in mods]


def test_version_imports_nothing_heavy(oh):
    mods = _imported(oh, "--version")
    assert not [m for m in HEAVY if m in mods]
