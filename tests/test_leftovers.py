"""The end-of-run check of tests/conftest.py finds what a test left running (issue 41)."""

from __future__ import annotations

import os
import subprocess
import sys

import leftovers


def test_scan_finds_a_process_left_under_the_base_temp_and_end_stops_it(tmp_path):
    inside = tmp_path / "ws"
    inside.mkdir()
    by_cwd = subprocess.Popen(["sleep", "300"], cwd=inside)
    by_argv = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", str(inside)], cwd="/")
    elsewhere = subprocess.Popen(["sleep", "300"], cwd="/")
    try:
        found = dict(leftovers.scan(str(tmp_path), os.getpid()))
        assert by_cwd.pid in found and by_argv.pid in found, found
        assert elsewhere.pid not in found
        leftovers.end([(by_cwd.pid, ""), (by_argv.pid, "")])
        assert by_cwd.wait(timeout=10) != 0 and by_argv.wait(timeout=10) != 0
        assert leftovers.scan(str(tmp_path), os.getpid()) == []
    finally:
        for p in (by_cwd, by_argv, elsewhere):
            p.kill()
            p.wait()


def test_another_runs_base_temp_sharing_a_prefix_is_not_ours(tmp_path):
    base = tmp_path / "pytest-25"
    other = tmp_path / "pytest-250"
    (other / "ws").mkdir(parents=True)
    theirs = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", str(other / "ws")], cwd=other)
    try:
        assert theirs.pid not in dict(leftovers.scan(str(base), os.getpid()))
        assert theirs.pid in dict(leftovers.scan(str(other), os.getpid()))
    finally:
        theirs.kill()
        theirs.wait()
