"""Issue 29 measurements: history and undo on a big repository, against a shadow git per action.

    python benchmarks/history.py [--files 100000] [--ignored-mb 1024] [--rounds 30] [--fixture DIR]

A generated git work tree of ``files`` small text files (1,000 per directory, sizes drawn from an
exponential law around 2 KB; deterministic) plus an ignored ``node_modules/`` of ``ignored-mb`` MiB in
sparse 1 MiB files, cached under ``.cache/history-bench/`` (generation is not on the clock). Real
in-process backends (local runtime, real bash) and a real client on loopback:

- ``first_snapshot``: the backend's start with history on minus without (the walk, hash and store of
  every non-ignored file), the pack's size, and that nothing of the ignored tree is in it; also the
  snapshot's own clock (``took_s``: the timeline's opening and snapshot, wall) and its CPU seconds
  (``cpu_s``: the backend process, ``git_cpu_s``: the git commands it ran), which the load does not inflate;
- ``start_to_first_run`` (issue 39): from a backend's start to its first answered `run true`, history off and
  on (a fresh store each time, as at a first start), alternated over ``--start-rounds`` rounds: p50 of each,
  the difference, and the first snapshot's phase 1 (``listed_s``: what that run waited for);
- ``run_true`` / ``run_10_files``: p50 of `run true` and of a command rewriting 10 files, history off vs
  on (the overhead is the difference);
- ``undo_1000``: `undo` of a command that changed 1,000 files (the control request, in process);
- ``shadow_git``: what the anchors do per turn (Cline/Roo): ``git add -A && git commit`` in a separate
  git dir whose work tree is the workspace: the first checkpoint (time, size) and its p50 per action.

Prints one JSON object. The smoke test (tests/bench/test_history_bench.py) runs it tiny.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-token-" + "x" * 20
PER_DIR = 1000


def make_fixture(where: Path, files: int, ignored_mb: int) -> Path:
    ws = where / f"ws-{files}-{ignored_mb}"
    if (ws / ".bench-ready").exists():
        # As a fresh clone: an earlier run's files gone, and the files its undo rewrote (same content, new
        # mtime) clean again in git's index, so the snapshot knows them by their blobs and the 1,000-file
        # undo pays for reading its "before" contents out of git, as the first time.
        shutil.rmtree(ws / "bench-w", ignore_errors=True)
        subprocess.run(["git", "-C", str(ws), "update-index", "-q", "--refresh"], check=False)
        return ws
    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    rnd = random.Random(29)
    line = b"the quick brown fox jumps over the lazy dog 0123456789\n"
    for i in range(files):
        d = ws / "src" / f"d{i // PER_DIR:04d}"
        if i % PER_DIR == 0:
            d.mkdir(parents=True)
        size = min(int(rnd.expovariate(1 / 2000)) + 20, 64 * 1024)
        (d / f"f{i % PER_DIR:04d}.txt").write_bytes(f"file {i}\n".encode() + line * (size // len(line)))
    nm = ws / "node_modules"
    for j in range(ignored_mb):
        pkg = nm / f"pkg{j // 100:03d}"
        pkg.mkdir(parents=True, exist_ok=True)
        with open(pkg / f"blob{j % 100:03d}.bin", "wb") as f:
            f.truncate(1024 * 1024)  # sparse: 1 GiB apparent, no disk
    (ws / ".gitignore").write_text("node_modules/\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".git" / "info" / "exclude").write_text(".bench-ready\n")
    # A committed tree, as a real repository is: clean tracked files are known by their blobs.
    git = ["git", "-C", str(ws), "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "fixture"], check=True)
    (ws / ".bench-ready").write_text("ok\n")
    return ws


def p50(xs: list[float]) -> float:
    return round(statistics.median(xs) * 1000, 2)


async def _backend(ws: Path, history_dir: str | None):
    from oh.backend.server import Backend, BackendConfig

    b = Backend(BackendConfig(workspace=str(ws), write_session=False, history_dir=history_dir), TOKEN)
    t0 = time.perf_counter()
    await b.start()
    return b, time.perf_counter() - t0


async def _actions(port: int, rounds: int) -> dict:
    from oh.client import Client

    ten = "for i in 0 1 2 3 4 5 6 7 8 9; do echo $RANDOM$RANDOM > bench-w/f$i.txt; done"
    out: dict = {}
    async with await Client.connect(f"ws://127.0.0.1:{port}", TOKEN) as c:
        await c.run("mkdir -p bench-w")
        for name, cmd in (("run_true", "true"), ("run_10_files", ten)):
            await c.run(cmd)  # warm
            times = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                obs = await c.run(cmd)
                times.append(time.perf_counter() - t0)
                assert obs.exit_code == 0, obs.content
            out[name] = times
    return out


async def _first_run(ws: Path, history_dir: str | None) -> tuple[float, float]:
    """Seconds from the backend's start to its first answered `run true`, and phase 1's own wall time (on)."""
    from oh.client import Client

    t0 = time.perf_counter()
    b, _ = await _backend(ws, history_dir)
    try:
        async with await Client.connect(f"ws://127.0.0.1:{b.port}", TOKEN) as c:
            obs = await c.run("true")
        took = time.perf_counter() - t0
        assert obs.exit_code == 0, obs.content
        recorder = b.historyctl.recorder
        return took, recorder.listed_s if recorder is not None else 0.0
    finally:
        await b.stop()  # phase 2, still running on a big tree, stops at its next directory


async def _start_to_first_run(ws: Path, scratch: Path, rounds: int) -> dict:
    off, on, listed = [], [], []
    for i in range(rounds):  # alternated: the machine's load drifts over a run
        off.append((await _first_run(ws, None))[0])
        took, phase1 = await _first_run(ws, str(scratch / f"first-{i}"))
        on.append(took)
        listed.append(phase1)
    out = {"off_ms": p50(off), "on_ms": p50(on), "listed_ms": p50(listed), "rounds": rounds}
    out["difference_ms"] = round(out["on_ms"] - out["off_ms"], 1)
    return out


async def _undo_1000(b, port: int, files: int) -> dict:
    from oh.client import Client

    dirs = " ".join(f"src/d{i:04d}" for i in range(max(1, min(files, 1000) // PER_DIR) or 1))
    n = min(files, 1000)
    async with await Client.connect(f"ws://127.0.0.1:{port}", TOKEN) as c:
        obs = await c.run(f"ls {dirs}/*.txt | head -{n} | xargs sed -i 's/$/ +/'")
        assert obs.exit_code == 0, obs.content
    listed = await b.historyctl.handle({"op": "list"}, True)
    entry = listed["entries"][-1]
    t0 = time.perf_counter()
    res = await b.historyctl.handle({"op": "undo", "entry": entry["id"]}, True)
    took = time.perf_counter() - t0
    assert res.get("ok"), res
    return {"files": entry["files"], "undo_ms": round(took * 1000, 1)}


def journal_fsync(scratch: Path, rounds: int) -> dict:
    """The cost of the fsync at each entry's end: p50 of ``Timeline.end`` (one file written per entry, so the
    drain is the same) with the fsync on and off, interleaved, on a small workspace of the scratch filesystem."""
    from oh.history.timeline import Timeline

    ws = scratch / "fsync-ws"
    ws.mkdir()
    out: dict = {}
    lines = {True: [], False: []}
    tls = {flag: Timeline(str(ws), str(scratch / f"fsync-{flag}"), fsync=flag) for flag in (True, False)}
    try:
        for tl in tls.values():
            tl.snapshot()
        for i in range(rounds):
            for flag, tl in tls.items():
                entry = tl.begin("bench", "run", "echo")
                (ws / "f.txt").write_text(str(i))
                t0 = time.perf_counter()
                tl.end(entry)
                lines[flag].append(time.perf_counter() - t0)
    finally:
        for tl in tls.values():
            tl.close()
    out["end_ms_fsync_on"], out["end_ms_fsync_off"] = p50(lines[True]), p50(lines[False])
    out["fsync_ms"] = round(out["end_ms_fsync_on"] - out["end_ms_fsync_off"], 2)
    return out


def shadow_git(ws: Path, rounds: int, scratch: Path) -> dict:
    git_dir = scratch / "shadow.git"
    env = {**os.environ, "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(ws), "GIT_AUTHOR_NAME": "b"}
    env.update(GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")

    def checkpoint() -> float:
        t0 = time.perf_counter()
        subprocess.run("git add -A && git commit -q --allow-empty -m c", shell=True, env=env, cwd=ws, check=True)
        return time.perf_counter() - t0

    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    subprocess.run(["git", "config", "core.worktree", str(ws)], env=env, check=True)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "exclude").write_text("node_modules/\n.bench-ready\n")  # as the anchors exclude
    first = checkpoint()
    size = sum(p.stat().st_size for p in git_dir.rglob("*") if p.is_file())
    ten = "for i in 0 1 2 3 4 5 6 7 8 9; do echo $RANDOM$RANDOM > bench-w/f$i.txt; done"
    per_true, per_ten = [], []
    for _ in range(rounds):
        subprocess.run("true", shell=True, cwd=ws)
        per_true.append(checkpoint())
        subprocess.run(f"mkdir -p bench-w && {ten}", shell=True, cwd=ws, executable="/bin/bash")
        per_ten.append(checkpoint())
    return {
        "first_s": round(first, 2),
        "first_bytes": size,
        "run_true_ms": p50(per_true),
        "run_10_files_ms": p50(per_ten),
    }


async def main(
    files: int, ignored_mb: int, rounds: int, fixture: Path, shadow_rounds: int, start_rounds: int = 3
) -> dict:
    os.environ.setdefault("OH_HOME", tempfile.mkdtemp(prefix="oh-bench-"))
    ws = make_fixture(fixture, files, ignored_mb)
    scratch = Path(tempfile.mkdtemp(prefix="oh-bench-history-"))
    out: dict = {"files": files, "ignored_mb": ignored_mb, "rounds": rounds}
    try:
        out["start_to_first_run"] = await _start_to_first_run(ws, scratch, start_rounds)
        b, t_off = await _backend(ws, None)
        try:
            off = await _actions(b.port, rounds)
        finally:
            await b.stop()
        b, t_on = await _backend(ws, str(scratch / "history"))
        try:
            recorder = b.historyctl.recorder
            snap = await recorder.settled(600)  # phase 2 runs after the start: its figures once it is done
            pack = recorder.timeline.store.size
            out["first_snapshot"] = {"s": round(t_on - t_off, 2), "pack_bytes": pack, **snap}
            on = await _actions(b.port, rounds)
            out["undo_1000"] = await _undo_1000(b, b.port, files)
        finally:
            await b.stop()
        for name in ("run_true", "run_10_files"):
            out[name] = {"off_ms": p50(off[name]), "on_ms": p50(on[name])}
            out[name]["overhead_ms"] = round(out[name]["on_ms"] - out[name]["off_ms"], 2)
        out["journal_fsync"] = journal_fsync(scratch, max(rounds, 50))
        if shadow_rounds:
            out["shadow_git"] = shadow_git(ws, shadow_rounds, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--ignored-mb", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--shadow-rounds", type=int, default=10)
    ap.add_argument("--start-rounds", type=int, default=5)
    ap.add_argument("--fixture", type=Path, default=ROOT / ".cache" / "history-bench")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    print(
        json.dumps(
            asyncio.run(main(a.files, a.ignored_mb, a.rounds, a.fixture, a.shadow_rounds, a.start_rounds)), indent=2
        )
    )
