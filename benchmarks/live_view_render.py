"""Cost of one live-view frame (`oh start`'s rich view), side by side with a rich ``Table`` of the
same rows (what the view used before). The view now redraws from the launcher's event loop, so a
frame's cost is time the loop cannot spend on monitor frames.

    .venv/bin/python benchmarks/live_view_render.py [--frames N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from rich.console import Console
from rich.table import Table
from rich.text import Text

from oh.ui.live import MAX_ROWS, LiveState, fmt_ms


def _state() -> LiveState:
    st = LiveState(
        backend={"instance_id": "7f3a9c2d11", "runtime": "local", "workspace": "/w", "pid": 1, "port": 2, "trace": "/t"}
    )
    st.apply(
        {
            "type": "snapshot",
            "runtime": "local",
            "editors": [],
            "agents": [],
            "stats": {"done": 0, "pending": 0, "errors": 0},
        }
    )
    for i in range(MAX_ROWS):
        ev = {
            "type": "event",
            "time": "2026-01-01T10:00:00+00:00",
            "agent_id": "a1",
            "action_id": i,
            "kind": "run",
            "summary": f"pytest -q tests/test_module_{i}.py -k 'not slow' --maxfail=1",
            "security_risk": "LOW",
        }
        st.apply({**ev, "event": "action_started"})
        st.apply(
            {
                **ev,
                "event": "action_finished",
                "outcome": "ok" if i % 7 else "TOOL_ERROR",
                "exit_code": 0,
                "duration_ms": 1234.5,
            }
        )
    return st


def _table_peer(st: LiveState, height: int):
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("time", "agent", "kind", "summary", "risk", "outcome", "exit", "duration"):
        table.add_column(col, no_wrap=True, overflow="ellipsis")
    for r in list(st.actions.values())[-(height - 9) :]:
        table.add_row(
            Text(r.time),
            Text(r.agent),
            Text(r.kind),
            Text(r.summary),
            Text(r.risk or ""),
            Text(r.outcome_text()),
            Text(r.exit_text()),
            Text(fmt_ms(r.duration_ms)),
        )
    return table


def _ms_per_frame(render, width: int, height: int, frames: int) -> float:
    with open(os.devnull, "w") as sink:
        console = Console(width=width, height=height, force_terminal=True, color_system="truecolor", file=sink)
        samples = []
        for _ in range(frames):
            t = time.perf_counter()
            console.print(render())
            samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=100)
    frames = ap.parse_args().frames
    st = _state()
    print("| terminal | oh live view ms/frame (p50) | rich Table of the same rows | ratio |")
    print("|---|---|---|---|")
    for width, height in ((80, 24), (200, 60)):
        ours = _ms_per_frame(lambda: st.render(height, width), width, height, frames)
        peer = _ms_per_frame(lambda: _table_peer(st, height), width, height, frames)
        print(f"| {width}x{height} | {ours:.2f} | {peer:.2f} | {peer / ours:.1f}x |")


if __name__ == "__main__":
    main()
