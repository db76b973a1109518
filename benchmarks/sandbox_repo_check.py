"""The cost of noticing a new git repository before each command of a sandboxed shell (issue 27 item 3,
``runtimes/local/gitwatch.py``): the per-command check (``Sandbox.new_repos``: one non-blocking inotify read,
a set difference), the first walk (in a thread when the first shell starts: one inotify watch per directory),
and the walk of what a command created (a new tree is walked once, when the next command starts).

    .venv/bin/python benchmarks/sandbox_repo_check.py [DIRS] [CALLS]

Compare the per-command check with `run echo hi` p50 of a sandboxed shell (`benchmarks/shell_engine.py`).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from oh.protocol.sandbox import Spec
from oh.runtimes.local.gitwatch import RepoWatch
from oh.runtimes.local.sandbox import Sandbox


def _tree(root: str, dirs: int, repos: int) -> None:
    """``dirs`` directories, ten per level-2 directory, and ``repos`` nested repositories."""
    for i in range(dirs):
        os.makedirs(os.path.join(root, f"d{i // 100}", f"e{i // 10}", f"f{i}"), exist_ok=True)
    for i in range(repos):
        os.makedirs(os.path.join(root, f"d{i}", ".git", "hooks"), exist_ok=True)


def _ready(watch: RepoWatch, limit: float = 60.0) -> float:
    t0 = time.perf_counter()
    while not watch.ready:
        if time.perf_counter() - t0 > limit:
            raise SystemExit("the first walk did not finish within 60 s")
        time.sleep(0.001)
    return time.perf_counter() - t0


def main(dirs: int, calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = os.path.join(tmp, "ws")
        _tree(ws, dirs, 3)
        box = Sandbox(Spec(), workspace=ws)
        watch = box.repo_watch  # started with the sandbox (the runtime's start)
        assert watch is not None
        walk = _ready(watch)
        protected = watch.repos()
        samples = []
        for _ in range(calls):
            t = time.perf_counter_ns()
            box.new_repos(protected)
            samples.append(time.perf_counter_ns() - t)
        samples.sort()
        p50, p99 = samples[len(samples) // 2] / 1000, samples[int(len(samples) * 0.99)] / 1000
        # a command that created 1000 directories (and one repository among them): walked at the next check
        _tree(os.path.join(ws, "new"), 1000, 1)
        t = time.perf_counter()
        found = box.new_repos(protected)
        created = (time.perf_counter() - t) * 1000
        assert found, "the new repository was not noticed"
        watch.close()
    print(f"workspace: {dirs} directories + 3 repositories; load {os.getloadavg()[0]:.2f}")
    print(f"first walk (a thread, off the first shell's path): {walk * 1000:.1f} ms")
    print(f"per-command check, nothing new: p50 {p50:.1f} us, p99 {p99:.1f} us ({calls} calls)")
    print(f"check after a command created 1000 directories + a repository: {created:.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000, int(sys.argv[2]) if len(sys.argv) > 2 else 20000)
