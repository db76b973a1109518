#!/usr/bin/env python3
"""Cold start of the `oh` CLI (issue #3): `oh --help`, `oh --version`, `oh status` vs `import typer`.

    .venv/bin/python benchmarks/cli_startup.py            # 15 runs each, markdown table
    .venv/bin/python benchmarks/cli_startup.py -n 30 --json out.json

Each sample is one fresh process (wall time of subprocess.run, so interpreter start-up counts),
with OH_HOME in a temp dir and the file keyring fallback. `status` is measured twice: with no
backend, and with one running backend (a GET /v1/status per backend). Targets: `oh status`
median <= 250 ms and <= 2x the `python -c "import typer"` baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

OH = [sys.executable, "-m", "oh"]
SCRIPT = Path(sys.executable).parent / "oh"


def sample(argv: list[str], env: dict, n: int) -> list[float]:
    subprocess.run(argv, env=env, capture_output=True)  # warm the OS file cache, not Python
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=15)
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args()
    oh = [str(SCRIPT)] if SCRIPT.exists() else OH
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, OH_HOME=tmp, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", PYTHONDONTWRITEBYTECODE="1")
        env.pop("OH_TOKEN", None)
        cases = {
            'python -c "import typer" (baseline)': [sys.executable, "-c", "import typer"],
            "oh --version": [*oh, "--version"],
            "oh --help": [*oh, "--help"],
            "oh status (no backend)": [*oh, "status"],
        }
        results = {name: sample(argv, env, args.n) for name, argv in cases.items()}
        ws = Path(tmp) / "ws"
        ws.mkdir()
        started = subprocess.run([*oh, "start", "--detach", "--json", "--runtime", "vscode", "--no-open", "--workspace", str(ws)], env=env, capture_output=True, text=True)
        if started.returncode == 0:
            try:
                results["oh status (1 backend)"] = sample([*oh, "status"], env, args.n)
            finally:
                subprocess.run([*oh, "stop", "--all"], env=env, capture_output=True)
    base = statistics.median(results['python -c "import typer" (baseline)'])
    rows = []
    for name, xs in results.items():
        med = statistics.median(xs)
        rows.append({"case": name, "median_ms": round(med, 1), "min_ms": round(min(xs), 1), "max_ms": round(max(xs), 1), "x_baseline": round(med / base, 2)})
    status_rows = [r for r in rows if r["case"].startswith("oh status")]
    verdict = {
        "status_le_250ms": all(r["median_ms"] <= 250 for r in status_rows),
        "status_le_2x_baseline": all(r["x_baseline"] <= 2.0 for r in status_rows),
    }
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} CPU, {platform.system()} {platform.release()}",
        "python": sys.version.split()[0], "runs": args.n, "results": rows, "targets": verdict,
    }
    print(f"CLI cold start, median of {args.n} runs ({report['date']}, {report['machine']}, Python {report['python']})\n")
    print("| case | median ms | min | max | × baseline |\n|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['case']} | {r['median_ms']} | {r['min_ms']} | {r['max_ms']} | {r['x_baseline']} |")
    print(f"\ntargets: status <= 250 ms: {'met' if verdict['status_le_250ms'] else 'MISSED'}; status <= 2x baseline: {'met' if verdict['status_le_2x_baseline'] else 'MISSED'}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
