"""Smoke test of the benchmark harness: ``benchmarks/run.py --quick`` completes, produces every
figure of docs/benchmarks.md, and leaves no process behind. No timing is asserted here (a loaded
CI machine says nothing about speed); the figures themselves live in docs/benchmarks.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TRANSPORTS = {"oh", "ws-echo", "ws-relay-floor", "socketio-aiohttp", "socketio-asgi", "http"}


def _leftovers(marker: str) -> list[str]:
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if p.environ().get("OH_BENCH_SMOKE_ID") == marker and p.pid != os.getpid():
                found.append(f"{p.pid}: {' '.join(p.info['cmdline'] or [])[:200]}")
        except (psutil.Error, OSError):
            continue
    return found


@pytest.mark.timeout(400)
def test_quick_run_produces_every_figure(tmp_path: Path) -> None:
    pytest.importorskip("socketio")
    pytest.importorskip("fastapi")
    out, md = tmp_path / "bench.json", tmp_path / "bench.md"
    marker = uuid.uuid4().hex
    env = dict(os.environ, OH_BENCH_SMOKE_ID=marker)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--json", str(out), "--md", str(md)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=360,
    )
    assert proc.returncode == 0, f"run.py failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    res = json.loads(out.read_text())
    assert res["mode"] == "quick" and not res["errors"]
    for key in ("nproc", "cpu_model", "python"):
        assert res["machine"][key]
    figs = res["figures"]
    assert set(figs) == {"P1", "P2", "P3", "P5", "P6", "P7", "P8", "P9"}
    # The SDK task (needs the 3.12 venv) and the real VS Code run are opt-in in quick mode: they say so.
    assert "--sdk" in figs["P7"]["skipped"] and "--vscode" in figs["P8"]["skipped"]

    assert set(figs["P1"]["transports"]) == TRANSPORTS
    for name, s in figs["P1"]["transports"].items():
        assert s["n"] > 0 and 0 < s["p50_us"] <= s["p99_us"], name
        assert s["cpu_us_per_action"]["total"] >= 0, name
    assert set(figs["P2"]["actions_per_s"]) == TRANSPORTS
    assert all(v > 0 for v in figs["P2"]["actions_per_s"].values())
    for key in ("oh_local_run_true", "subprocess_run_bash_c_true"):
        assert figs["P3"][key]["n"] > 0 and figs["P3"][key]["p50_us"] > 0
    assert figs["P5"]["bytes"] == 64 * 1024 * 1024 and figs["P5"]["mb_per_s"] > 0 and figs["P5"]["ws_echo_mb_per_s"] > 0
    assert figs["P5"]["json_mb_per_s"] > 0
    p6 = figs["P6"]
    assert p6["agents"] == 100 and p6["editors"] == 10 and p6["idle_rss_mb"] > 0 and p6["loaded_rss_mb"] > 0
    assert p6["running"] == 50 and p6["running_rss_mb"] > 0
    jobs = p6["jobs"]
    assert jobs["jobs"] == 50 and jobs["jobs_rss_mb"] > 0 and jobs["child_processes"] >= 50, jobs

    # Every target has its verdict: P1 (2 vs echo + 1 vs the relay floor + 2 per peer), P2 (1 + 1 per
    # peer), P3, P5 (MB/s + vs echo), P6 (idle, connected, running, background jobs).
    checks = res["checks"]
    assert all(isinstance(c["pass"], bool) for c in checks)
    per_fig = {f: sum(c["figure"] == f for c in checks) for f in figs}
    # P9 (the shell engine): the old pipes shell as the reference, each pty variant with two verdicts.
    ptys = [name for name in figs["P9"] if name.startswith("pty")]
    assert ptys and any(not name.startswith("pty") for name in figs["P9"]), figs["P9"]
    assert all(f["p50_ms"] > 0 for f in figs["P9"].values())
    assert per_fig == {"P1": 9, "P2": 4, "P3": 1, "P5": 2, "P6": 4, "P7": 0, "P8": 0, "P9": 2 * len(ptys)}

    text = md.read_text()
    for title in ("### P1", "### P2", "### P3", "### P5", "### P6", "### P7", "### P8", "### P9"):
        assert title in text

    deadline = time.monotonic() + 10
    while _leftovers(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _leftovers(marker), "benchmark processes left running"
