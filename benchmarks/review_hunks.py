"""Issue 39: `oh review accept|reject ID --hunks` on a 1,000-file change set (goal: ≤ 1 s each).

    python benchmarks/review_hunks.py [--files 1000] [--lines 40]

A fresh workspace of ``files`` text files of ``lines`` lines (git repository, committed), a real backend
(`oh start --review --history`, local runtime, real bash) and a real agent client: one `sed -i` changes two
far-apart lines of every file, so the change set has 2 × ``files`` hunks. Then, each a real `oh` process
(wall clock, the process's start included):

- ``show``: `oh review show h --json` (every hunk listed);
- ``accept_hunks``: `oh review accept h --hunks 1-N` keeping the first hunk of every file (N = files);
- ``reject_hunks``: `oh review reject h --hunks N+1-2N` reverting the other half (a three-way revert of
  every file, one history entry);
- ``cli_floor``: `oh review --json` (the process and one control round trip: what any `oh review` costs).

Checks that every file ends with its first change kept and its second reverted. Prints one JSON object.
The smoke test (tests/bench/test_review_hunks_bench.py) runs it tiny.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "XDG_"))}
    env.update(
        OH_HOME=str(tmp / "ohhome"),
        HOME=str(tmp / "home"),
        XDG_STATE_HOME=str(tmp / "xdg-state"),
        XDG_CONFIG_HOME=str(tmp / "xdg-config"),
        XDG_DATA_HOME=str(tmp / "xdg-data"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )
    (tmp / "home").mkdir()
    return env


def _oh(env: dict[str, str], ws: Path, *args: str) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "oh", *args], cwd=ws, env=env, capture_output=True, text=True, timeout=300
    )
    return time.perf_counter() - t, done


def _fixture(ws: Path, files: int, lines: int) -> None:
    for i in range(files):
        d = ws / f"d{i // 100:03d}"
        d.mkdir(exist_ok=True)
        (d / f"f{i:05d}.txt").write_text("".join(f"row {j}\n" for j in range(1, lines + 1)))
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"]):
        subprocess.run(["git", *cmd], cwd=ws, check=True)


def main(files: int, lines: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="oh-hunks-bench-") as tmp_name:
        tmp = Path(tmp_name)
        ws = tmp / "ws"
        ws.mkdir()
        _fixture(ws, files, lines)
        env = _env(tmp)
        _, started = _oh(
            env, ws, "start", "--detach", "--json", "--no-open", "--runtime", "local", "--review", "--history"
        )
        if started.returncode != 0:
            raise SystemExit(f"oh start failed: {started.stderr}")
        info = json.loads(started.stdout)
        try:
            return _measure(env, ws, info, files, lines)
        finally:
            _oh(env, ws, "stop")


def _measure(env: dict[str, str], ws: Path, info: dict, files: int, lines: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from oh.client.sync import SyncClient

    token = json.loads(next((Path(env["OH_HOME"]) / "sessions").glob("*.json")).read_text())["token"]
    last = lines - 1
    command = f"sed -i 's/^row 2$/NEW 2/; s/^row {last}$/NEW {last}/' d*/f*.txt"
    done: list = []
    with SyncClient.connect(info["url"], token, name="bench") as agent:
        worker = threading.Thread(target=lambda: done.append(agent.run(command, timeout=120)), daemon=True)
        worker.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # review mode asks before a command that writes: the user allows it
            _, listed = _oh(env, ws, "approvals", "--json")
            waiting = json.loads(listed.stdout).get("approvals") or []
            if waiting:
                _oh(env, ws, "approve", waiting[0]["id"])
                break
        worker.join(120)
    assert done and done[0].exit_code == 0, done
    _, listed = _oh(env, ws, "review", "--json")
    [row] = json.loads(listed.stdout)["changesets"]
    cid = row["id"]
    out: dict = {"files": files, "lines": lines, "changeset_files": row["files"]}
    out["cli_floor_s"], _ = _oh(env, ws, "review", "--json")
    out["show_s"], shown = _oh(env, ws, "review", "show", cid, "--json")
    hunks = json.loads(shown.stdout)["changeset"]["hunks"]
    out["hunks"] = len(hunks)
    first = [h["n"] for h in hunks if h["header"].startswith("@@ -1,")]
    second = [h["n"] for h in hunks if h["n"] not in set(first)]
    spec = ",".join(map(str, first))
    out["accept_hunks_s"], kept = _oh(env, ws, "review", "accept", cid, "--hunks", spec)
    assert kept.returncode == 0, kept.stderr
    out["reject_hunks_s"], reverted = _oh(env, ws, "review", "reject", cid, "--hunks", ",".join(map(str, second)))
    assert reverted.returncode == 0, reverted.stdout + reverted.stderr
    want = "".join("NEW 2\n" if j == 2 else f"row {j}\n" for j in range(1, lines + 1))
    bad = [p for p in ws.glob("d*/f*.txt") if p.read_text() != want]
    assert not bad, f"{len(bad)} files not as decided, e.g. {bad[0]}"
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--lines", type=int, default=40)
    a = ap.parse_args()
    print(json.dumps(main(a.files, a.lines), indent=1))
