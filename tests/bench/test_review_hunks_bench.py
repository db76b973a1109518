"""Smoke test of benchmarks/review_hunks.py (issue 39): a tiny run decides half of a change set's hunks each
way and checks every file's bytes after. No timing is asserted (a loaded machine says nothing about speed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_tiny_run_produces_every_figure(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "review_hunks.py"), "--files", "3", "--lines", "12"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = json.loads(proc.stdout)
    assert (res["changeset_files"], res["hunks"]) == (3, 6)
    assert {"cli_floor_s", "show_s", "accept_hunks_s", "reject_hunks_s"} <= set(res)
