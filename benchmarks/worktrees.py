"""A worktree per agent (issue 37 item 3): what `--isolate worktree` costs on a large repository.

    .venv/bin/python benchmarks/worktrees.py [--files 100000] [--rounds 3] [--fixture DIR]

On the history benchmark's fixture (``benchmarks/history.py``: N committed files of ~2 KB in 100-file
directories): the time to give an agent its worktree (``gitrepo.add_worktree``: ``git worktree add`` with oh's
neutralising options, a checkout of every file), to find it again on reconnection, and ``oh merge``'s git work
(``gitrepo.merge_worktree``: commit one changed file, diff summary, merge-tree check, fast-forward, remove the
worktree). Wall time, best and median of ``--rounds``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from history import make_fixture  # noqa: E402


def _timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def main(files: int, rounds: int, fixture: Path) -> dict:
    from oh import gitrepo

    ws = make_fixture(fixture, files, 0)
    root = tempfile.mkdtemp(prefix="oh-bench-worktrees-")
    create, reuse, merge = [], [], []
    for r in range(rounds):
        slug = f"bench{r}"
        t, (path, branch) = _timed(gitrepo.add_worktree, str(ws), root, slug)
        create.append(t)
        reuse.append(_timed(gitrepo.add_worktree, str(ws), root, slug)[0])
        Path(path, "src", "d0000", "f0000.txt").write_text(f"round {r}\n")
        wt = {"path": path, "branch": branch, "agent": slug}
        merge.append(_timed(gitrepo.merge_worktree, str(ws), wt)[0])
    # leave the fixture as it was for the next run (the merges moved its branch forward)
    gitrepo._git(str(ws), "reset", "--quiet", "--hard", "HEAD~" + str(rounds))

    def stats(xs: list[float]) -> dict:
        return {"best_s": round(min(xs), 3), "median_s": round(statistics.median(xs), 3)}

    return {
        "files": files,
        "rounds": rounds,
        "load": os.getloadavg()[0],
        "create_worktree": stats(create),
        "find_again": stats(reuse),
        "merge_one_file_and_remove": stats(merge),
    }


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fixture", type=Path, default=ROOT / ".cache" / "history-bench")
    a = ap.parse_args()
    print(json.dumps(main(a.files, a.rounds, a.fixture), indent=2))
