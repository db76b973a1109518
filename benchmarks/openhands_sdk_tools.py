"""The OpenHands SDK's own terminal / file editor vs the same SDK tools executed through oh (local runtime).

Run in the SDK venv (scripts/integration-venvs openhands-sdk) with an oh backend serving WORKDIR:
    OH_HOME=... <venv>/bin/python benchmarks/openhands_sdk_tools.py WORKDIR [N]
Prints median / p95 milliseconds per tool call, as the SDK's worker thread sees it (executor call).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

from openhands.tools.file_editor.definition import FileEditorAction  # noqa: E402
from openhands.tools.file_editor.impl import FileEditorExecutor  # noqa: E402
from openhands.tools.terminal.definition import TerminalAction  # noqa: E402
from openhands.tools.terminal.impl import TerminalExecutor  # noqa: E402

from oh.integrations.openhands import link as links  # noqa: E402
from oh.integrations.openhands.file_editor import OhFileEditorExecutor  # noqa: E402
from oh.integrations.openhands.terminal import OhTerminalExecutor  # noqa: E402


def timed(fn, n: int) -> tuple[float, float]:
    fn()  # warm-up
    xs = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t0) * 1000)
    xs.sort()
    return statistics.median(xs), xs[int(len(xs) * 0.95) - 1]


def main(workdir: str, n: int) -> None:
    scratch = tempfile.mkdtemp(prefix="sdk-native-")
    for name in ("a.py",):
        for root in (workdir, scratch):
            with open(os.path.join(root, name), "w") as f:
                f.write("".join(f"line {i}\n" for i in range(200)))
    link = links.link_for("bench", workdir, None, "bench")
    assert link is not None, f"no oh backend serves {workdir}"
    rows = []
    native_term = TerminalExecutor(working_dir=scratch, terminal_type="subprocess")
    oh_term = OhTerminalExecutor(link, "bench")
    rows.append(
        (
            "terminal `echo hi`",
            timed(lambda: native_term(TerminalAction(command="echo hi")), n),
            timed(lambda: oh_term(TerminalAction(command="echo hi")), n),
        )
    )
    native_ed = FileEditorExecutor(workspace_root=scratch)
    oh_ed = OhFileEditorExecutor(link, "bench-ed")
    rows.append(
        (
            "file_editor view 200 lines",
            timed(lambda: native_ed(FileEditorAction(command="view", path=os.path.join(scratch, "a.py"))), n),
            timed(lambda: oh_ed(FileEditorAction(command="view", path=os.path.join(workdir, "a.py"))), n),
        )
    )
    flip = {"v": 0}

    def edit(ex, root):
        flip["v"] ^= 1
        old, new = ("line 100\n", "LINE 100\n") if flip["v"] else ("LINE 100\n", "line 100\n")
        ex(FileEditorAction(command="str_replace", path=os.path.join(root, "a.py"), old_str=old, new_str=new))

    rows.append(
        ("file_editor str_replace", timed(lambda: edit(native_ed, scratch), n), timed(lambda: edit(oh_ed, workdir), n))
    )
    native_term.close()
    print(f"{'tool call':32} {'SDK own: median / p95 ms':>26} {'through oh: median / p95 ms':>30}")
    for what, (m1, p1), (m2, p2) in rows:
        print(f"{what:32} {m1:>14.2f} / {p1:<9.2f} {m2:>16.2f} / {p2:<9.2f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 50)
