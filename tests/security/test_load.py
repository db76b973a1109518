"""Load: 100 agents through ONE headless editor process (runtime vscode, real backend process).

Each action is a `read` of one line of the agent's own file: line j of agent i's file is
"agent-i action-j", so an observation identifies exactly which action it answers. Checked: every
action gets exactly one observation (0 lost), with `cause` = its id and the content of that very
line (0 mis-correlated); the backend's counters agree; backend RSS before/after (and peak) reported.

The full 100 x 1,000 runs by default (about 40 s on the 2-core reference machine, well under the
90 s limit we set for the default run). OH_LOAD_ACTIONS=N runs N actions per agent instead, for a
quicker local check; docs/reliability.md reports the figures.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

import psutil
import pytest

from oh import sessions
from oh.client import Client

from . import helpers
from .conftest import record

pytestmark = pytest.mark.slow

AGENTS = 100
ACTIONS = int(os.environ.get("OH_LOAD_ACTIONS", "1000"))
WINDOW = 2  # actions in flight per agent (many in flight on one socket is what Client is for)


def _line(i: int, j: int) -> str:
    return f"agent-{i} action-{j}\n"


async def _agent(url: str, token: str, i: int, results: dict) -> None:
    lost = wrong = 0
    async with await Client.connect(url, token, name=f"load-{i}") as c:
        queue = list(range(ACTIONS))

        async def worker() -> None:
            nonlocal lost, wrong
            while queue:
                j = queue.pop()
                action_id = j + 1
                try:
                    obs = await c.send(
                        {
                            "id": action_id,
                            "action": "read",
                            "args": {"path": f"agent-{i}.txt", "start": j, "end": j + 1},
                        },
                        timeout=120,
                    )
                except Exception:  # noqa: BLE001 - any failure to deliver counts as lost
                    lost += 1
                    continue
                if (
                    obs.get("cause") != action_id
                    or obs.get("observation") != "read"
                    or obs.get("content") != _line(i, j)
                ):
                    wrong += 1

        await asyncio.gather(*(worker() for _ in range(WINDOW)))
        results[i] = (lost, wrong, len(c.stray))


class RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.25):
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except psutil.Error:
                return


def _mib(n: int) -> float:
    return round(n / 2**20, 1)


@pytest.mark.timeout(600)  # ~40 s alone; other suites may share the 2 cores
def test_100_agents_through_one_headless_editor_lose_nothing(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    for i in range(AGENTS):
        (ws / f"agent-{i}.txt").write_text("".join(_line(i, j) for j in range(ACTIONS)))
    env = helpers.oh_env(home)
    token = "load-token-" + "q" * 32
    backend, ready = helpers.start_backend_process(ws, env, token, runtime="vscode", extra=["--action-timeout", "120"])
    editor = None
    try:
        assert ready["ready"], ready
        session = sessions.read(sessions.path_for(ready["instance_id"], home / "sessions"))
        editor = helpers.EditorProcess(ws, env)
        helpers.wait_editor(session)
        bproc = psutil.Process(backend.pid)
        rss_before = bproc.memory_info().rss
        sampler = RssSampler(backend.pid)
        sampler.start()
        results: dict[int, tuple[int, int, int]] = {}

        async def main() -> None:
            await asyncio.wait_for(
                asyncio.gather(*(_agent(session.url, token, i, results) for i in range(AGENTS))), 600
            )

        t0 = time.monotonic()
        asyncio.run(main())
        duration = time.monotonic() - t0
        sampler.stop.set()
        sampler.join(2)
        rss_after = bproc.memory_info().rss
        editor_rss = psutil.Process(editor.pid).memory_info().rss
        st = helpers.backend_status(session)
    finally:
        if editor is not None:
            editor.kill()
        helpers.kill_tree(backend.pid)

    total = AGENTS * ACTIONS
    lost = sum(r[0] for r in results.values()) + (AGENTS - len(results)) * ACTIONS
    wrong = sum(r[1] for r in results.values())
    stray = sum(r[2] for r in results.values())
    figures = {
        "agents": AGENTS,
        "actions_per_agent": ACTIONS,
        "actions": total,
        "in_flight_per_agent": WINDOW,
        "lost": lost,
        "mis_correlated": wrong,
        "stray_frames": stray,
        "duration_s": round(duration, 1),
        "actions_per_s": round(total / duration),
        "backend_rss_before_mib": _mib(rss_before),
        "backend_rss_after_mib": _mib(rss_after),
        "backend_rss_peak_mib": _mib(max(sampler.peak, rss_after)),
        "editor_rss_after_mib": _mib(editor_rss),
        "backend_stats": st["stats"],
        "full": ACTIONS >= 1000,
    }
    record("load", figures)
    assert lost == 0 and wrong == 0 and stray == 0, figures
    assert st["stats"] == {"done": total, "pending": 0, "errors": 0}, figures
