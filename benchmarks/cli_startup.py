#!/usr/bin/env python3
"""Whole-process wall time of the `oh` CLI, side by side with `python -c pass` (issues #3 and #8 §3).

    .venv/bin/python benchmarks/cli_startup.py             # 30 rounds, markdown table
    .venv/bin/python benchmarks/cli_startup.py -n 60 --json out.json
    .venv/bin/python benchmarks/cli_startup.py --only jobs    # the job / file-check verbs (issue 11) only
    .venv/bin/python benchmarks/cli_startup.py --only typed   # the commands people type (issue 30 item 16) only

Each sample is one fresh process started with subprocess (interpreter start-up, imports, session
discovery, the WebSocket handshake and the action's round trip all count), OH_HOME in a temp dir,
the file keyring fallback (except the "keyring detected" row: keyring chooses a backend itself, its data
in the temp dir, no D-Bus session), one running local backend for the agent verbs. The cases run
round-robin (one sample of each per round), so machine load drifts hit every case alike; the
ratio is median / median of the baseline measured in the same rounds. The baseline is the same
interpreter as `oh` (sys.executable) running `-c pass`: on machines where `python3` on PATH is a
pyenv shim (a shell script, ~200 ms) that would flatter every ratio.

Targets (issue #8 §3): `oh run -- true` and `oh read FILE` <= 4x, `oh status` <= 3x the baseline.
Issue 30 item 16: every command a user types interactively (`oh --help`, `oh config get`, `oh approvals`,
`oh doctor`, `oh logs`, `oh status`) <= 3x.
`OH_NO_FASTPATH=1` rows show the full typer CLI doing the same work (the pre-fast-path cost).
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

SCRIPT = Path(sys.executable).parent / "oh"
BASELINE = "python -c pass (baseline)"
TARGETS = {"oh run -- true": 4.0, "oh read FILE": 4.0, "oh status (1 backend)": 3.0}
TYPED = ("oh --help", "oh config get port", "oh approvals", "oh doctor", "oh logs", "oh status (1 backend)")
TARGETS.update({name: 3.0 for name in TYPED})


def once(argv: list[str], env: dict, cwd: str) -> tuple[float, float]:
    """(wall ms, CPU ms = user + system of the process): CPU time moves far less with machine load."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - t0) * 1000
    proc.returncode = 0  # reaped by wait4 above
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=30, help="rounds (one sample of every case per round)")
    ap.add_argument("--json", dest="json_out")
    ap.add_argument(
        "--only",
        choices=("all", "jobs", "typed"),
        default="all",
        help="jobs / typed: only the job and file-check verbs' phase / the commands people type",
    )
    args = ap.parse_args()
    oh = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "oh"]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, OH_HOME=tmp, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
        # PYTHONDONTWRITEBYTECODE would make every sample compile oh from source: an installed oh has
        # its .pyc files (pip compiles them; an editable install writes them on first import).
        for key in ("OH_TOKEN", "OH_NO_FASTPATH", "PYTHONDONTWRITEBYTECODE"):
            env.pop(key, None)
        slow = dict(env, OH_NO_FASTPATH="1")
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "notes.txt").write_text("hello\n" * 20)
        cases: dict[str, tuple[list[str], dict]] = {
            BASELINE: ([sys.executable, "-c", "pass"], env),
            "oh --version": ([*oh, "--version"], env),
            "oh status (no backend)": ([*oh, "status"], env),
        }
        phases: list[dict[str, list[tuple[float, float]]]] = [{}, {}, {}, {}]  # each with its own baseline samples
        if args.only == "all":
            _rounds(cases, phases[0], env, str(ws), args.n)
        started = subprocess.run(
            [*oh, "start", "--detach", "--json", "--runtime", "local", "--workspace", str(ws)],
            env=env,
            capture_output=True,
            text=True,
        )
        if started.returncode != 0:
            print(f"could not start a backend: {started.stderr}", file=sys.stderr)
            return 1
        try:
            verbs = {
                BASELINE: ([sys.executable, "-c", "pass"], env),
                "oh run -- true": ([*oh, "run", "--", "true"], env),
                "oh read FILE": ([*oh, "read", "notes.txt"], env),
                "oh status (1 backend)": ([*oh, "status"], env),
                "python -m oh run -- true": ([sys.executable, "-m", "oh", "run", "--", "true"], env),
                "oh run -- true (OH_NO_FASTPATH=1)": ([*oh, "run", "--", "true"], slow),
                "oh read FILE (OH_NO_FASTPATH=1)": ([*oh, "read", "notes.txt"], slow),
                "oh status (1 backend, OH_NO_FASTPATH=1)": ([*oh, "status"], slow),
            }
            if args.only == "all":
                _rounds(verbs, phases[1], env, str(ws), args.n)
            if args.only in ("all", "typed"):
                _rounds(_typed_cases(oh, env, slow), phases[3], env, str(ws), args.n)
            if args.only == "typed":
                return _report(args, phases)
            # Issue 11's verbs: a long job to list and poll (started once; later starts find it running).
            job = subprocess.run(
                [*oh, "run", "--background", "--", "sleep 3600"], env=env, cwd=str(ws), capture_output=True, text=True
            ).stdout.strip()
            job_verbs = {
                BASELINE: ([sys.executable, "-c", "pass"], env),
                "oh run --background -- CMD": ([*oh, "run", "--background", "--", "sleep 3600"], env),
                "oh jobs": ([*oh, "jobs"], env),
                "oh jobs poll ID": ([*oh, "jobs", "poll", job], env),
                "oh stat FILE": ([*oh, "stat", "notes.txt"], env),
                "oh write --append FILE": ([*oh, "write", "--append", "log.txt", "--content", "x"], env),
                "oh run --background -- CMD (OH_NO_FASTPATH=1)": (
                    [*oh, "run", "--background", "--", "sleep 3600"],
                    slow,
                ),
                "oh jobs (OH_NO_FASTPATH=1)": ([*oh, "jobs"], slow),
                "oh jobs poll ID (OH_NO_FASTPATH=1)": ([*oh, "jobs", "poll", job], slow),
                "oh stat FILE (OH_NO_FASTPATH=1)": ([*oh, "stat", "notes.txt"], slow),
                "oh write --append FILE (OH_NO_FASTPATH=1)": (
                    [*oh, "write", "--append", "log.txt", "--content", "x"],
                    slow,
                ),
            }
            _rounds(job_verbs, phases[2], env, str(ws), args.n)
        finally:
            subprocess.run([*oh, "stop", "--all"], env=env, capture_output=True)
    return _report(args, phases)


def _typed_cases(oh: list[str], env: dict, slow: dict) -> dict[str, tuple[list[str], dict]]:
    """Issue 30 item 16: what a person types, with one backend running (approvals and logs ask it)."""
    cases = {
        BASELINE: ([sys.executable, "-c", "pass"], env),
        "oh --help": ([*oh, "--help"], env),
        "oh config get port": ([*oh, "config", "get", "port"], env),
        "oh approvals": ([*oh, "approvals"], env),
        "oh doctor": ([*oh, "doctor"], env),
        "oh logs": ([*oh, "logs"], env),
        "oh status (1 backend)": ([*oh, "status"], env),
    }
    # TAB in bash (issue 30 item 14): a later word, an option's value, a running instance id
    for line, cword in (("oh config set ", 3), ("oh start --runtime ", 3), ("oh stop ", 2)):
        tab = {"_OH_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(cword)}
        cases[f"TAB: {line}"] = (list(oh), {**env, **tab})
    for name in ("oh --help", "oh config get port", "TAB: oh config set "):
        cases[f"{name} (OH_NO_FASTPATH=1)"] = (cases[name][0], {**cases[name][1], **slow})
    # The real keyring: no PYTHON_KEYRING_BACKEND, so keyring detects a backend (every backend's entry point) and
    # the token lookup asks it before the 0600 file. Its data and config in the temp dir, and no D-Bus session
    # (nothing reaches the keyring of whoever runs this); which backend wins depends on what is installed.
    tmp = env["OH_HOME"]
    detected = {k: v for k, v in env.items() if k not in ("PYTHON_KEYRING_BACKEND", "DBUS_SESSION_BUS_ADDRESS")}
    detected.update(XDG_DATA_HOME=f"{tmp}/xdg-data", XDG_CONFIG_HOME=f"{tmp}/xdg-config")
    cases["oh doctor (keyring detected)"] = ([*oh, "doctor"], detected)
    return cases


def _report(args, phases: list[dict]) -> int:
    rows = [row for phase in phases if phase for row in _table(phase)]
    # The target is on wall time (median vs median); CPU columns explain what the client itself costs.
    verdict = {r["case"]: r["x_baseline"] <= r["target_x"] for r in rows if r["target_x"]}
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": (
            f"{platform.node()} {platform.machine()} {os.cpu_count()} CPU, {platform.system()} {platform.release()}"
        ),
        "python": sys.version.split()[0],
        "rounds": args.n,
        "load_after": load,
        "results": rows,
        "targets_met": verdict,
    }
    print(
        f"CLI whole-process wall time, {args.n} rounds ({report['date']}, {report['machine']}, Python "
        f"{report['python']}, load after {', '.join(f'{x:.2f}' for x in load) if load else '?'})\n"
    )
    print(
        "| case | wall median ms | min | p90 | × baseline (median) | × baseline (min) | CPU ms (median) | × "
        "baseline CPU | target |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        target = f"≤ {r['target_x']:g}×" if r["target_x"] else ""
        print(
            f"| {r['case']} | {r['median_ms']} | {r['min_ms']} | {r['p90_ms']} | {r['x_baseline']} | "
            f"{r['x_baseline_min']} | {r['cpu_ms']} | {r['x_baseline_cpu']} | {target} |"
        )
    print("\ntargets: " + "; ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in verdict.items()))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _table(results: dict[str, list[tuple[float, float]]]) -> list[dict]:
    """Rows with ratios against the baseline measured in the same rounds."""
    base = statistics.median(w for w, _ in results[BASELINE])
    base_min = min(w for w, _ in results[BASELINE])
    base_cpu = statistics.median(c for _, c in results[BASELINE])
    rows = []
    for name, samples in results.items():
        xs = [w for w, _ in samples]
        cpu = statistics.median(c for _, c in samples)
        med = statistics.median(xs)
        rows.append(
            {
                "case": name,
                "median_ms": round(med, 1),
                "min_ms": round(min(xs), 1),
                "p90_ms": round(sorted(xs)[int(len(xs) * 0.9) - 1], 1),
                "x_baseline": round(med / base, 2),
                "x_baseline_min": round(min(xs) / base_min, 2),
                "cpu_ms": round(cpu, 1),
                "x_baseline_cpu": round(cpu / base_cpu, 2),
                "target_x": TARGETS.get(name),
            }
        )
    return rows


def _rounds(cases: dict, results: dict, env: dict, cwd: str, n: int) -> None:
    for argv, e in cases.values():  # warm the OS file cache (and the backend's shell), not Python
        subprocess.run(argv, env=e, cwd=cwd, capture_output=True)
    for _ in range(n):
        for name, (argv, e) in cases.items():
            results.setdefault(name, []).append(once(argv, e, cwd))


if __name__ == "__main__":
    sys.exit(main())
