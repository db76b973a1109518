"""`oh status` / `oh --version` / the agent verbs stay lazy: heavy modules are imported only by the
commands that need them.

Not a timing test (timings live in benchmarks/cli_startup.py); it fails when an import creeps in.
"""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("rich.live", "rich.table", "websockets", "keyring", "psutil", "typer._adapters", "oh.client", "oh.backend")
# The fast path (issue 8 §3) must not even load these: each costs a large share of the 4x budget.
FAST_FORBIDDEN = (
    *HEAVY,
    "typer",
    "click",
    "rich",
    "pydantic",
    "json",
    "socket",
    "asyncio",
    "dataclasses",
    "oh.commands",
    "oh.launcher",
    "platformdirs",
)


def _imported(oh, *args: str, env: dict | None = None) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "oh", *args],
        env=dict(oh.env, **(env or {})),
        cwd=oh.workspace,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


def test_status_without_backends_imports_nothing_heavy(oh):
    mods = _imported(oh, "status", env={"OH_NO_FASTPATH": "1"})  # the typer command
    assert "oh.commands.status" in mods
    assert not [m for m in HEAVY if m in mods]
    mods = _imported(oh, "status")  # the fast path
    assert "oh.fastpath.status" in mods
    assert not [m for m in FAST_FORBIDDEN if m in mods]


def test_version_imports_nothing_heavy(oh):
    mods = _imported(oh, "--version")
    assert not [m for m in FAST_FORBIDDEN if m in mods]


def test_agent_verbs_take_the_fast_path(oh):
    oh.start("local")
    (oh.workspace / "f.txt").write_text("x\n")
    job = oh("run", "--background", "--", "echo in-the-background", check=0).stdout.strip()
    for args in (
        ("run", "--", "true"),
        ("read", "f.txt"),
        ("status",),
        ("status", "--json"),
        ("run", "--background", "--force", "--", "true"),
        ("write", "--append", "g.txt", "--content", "x"),
        ("stat", "f.txt"),
        ("jobs",),
        ("jobs", "wait", job),
        ("jobs", "poll", job),
        ("jobs", "output", job),
        ("jobs", "cancel", job),
    ):
        mods = _imported(oh, *args)
        assert "oh.fastpath.dispatch" in mods, args
        assert not [m for m in FAST_FORBIDDEN if m in mods and not (m == "json" and "--json" in args)], (
            args,
            [m for m in FAST_FORBIDDEN if m in mods],
        )
