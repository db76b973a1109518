"""Smoke test of benchmarks/history.py (issue 29): a tiny run produces every figure of docs/benchmarks.md's
"History and undo" section. No timing is asserted (a loaded machine says nothing about speed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_tiny_run_produces_every_figure(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "history.py"), "--files", "1200", "--ignored-mb", "3"]
        + ["--rounds", "2", "--shadow-rounds", "1", "--start-rounds", "1", "--fixture", str(tmp_path / "fixture")],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OH_HOME": str(tmp_path / "oh")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = json.loads(proc.stdout)
    snap = res["first_snapshot"]
    assert snap["files"] >= 1200 and snap["ignored"] >= 1  # node_modules counted by its top, never walked
    assert 0 < snap["pack_bytes"] < 3 * 1024 * 1024  # no copy of the 3 MiB ignored tree
    # The snapshot's own clock: wall and CPU seconds (oh's, and the git it ran: ls-files, diff-files).
    assert snap["took_s"] > 0 and snap["cpu_s"] > 0 and snap["git_cpu_s"] >= 0
    assert res["undo_1000"]["files"] == 1000
    first = res["start_to_first_run"]  # issue 39: history on vs off, from the start to the first answered run
    assert set(first) == {"off_ms", "on_ms", "listed_ms", "difference_ms", "rounds"} and first["on_ms"] > 0
    for name in ("run_true", "run_10_files"):
        assert set(res[name]) == {"off_ms", "on_ms", "overhead_ms"}
    assert set(res["shadow_git"]) == {"first_s", "first_bytes", "run_true_ms", "run_10_files_ms"}
