"""Issue 22 measurements: the `ensure` action, first call vs no-op, through a real backend.

    python benchmarks/ensure_bootstrap.py [--rounds 20] [--uv]

Real backend (local runtime) on loopback, real bash, real venv + pip (from a local wheel: no index)
and real npm ci (a `file:` dependency: no registry), as tests/backend/test_ensure.py builds them.
Prints one JSON object: the first `ensure` (venv created + pip install; npm ci), the median of
`rounds` no-op calls (stamps match: no process runs), a changed requirement (install only, the venv
kept), and two agents asking at once (one install shared). `--uv`: let the backend find uv on PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from ensure_projects import node_project, python_project  # noqa: E402

TOKEN = "bench-token-" + "x" * 20


async def timed(c, **kw) -> tuple[float, dict]:
    t0 = time.perf_counter()
    obs = await c.ensure(**kw)
    return time.perf_counter() - t0, obs.raw if hasattr(obs, "raw") else dict(obs)


async def main(rounds: int, uv: bool) -> dict:
    os.environ.setdefault("OH_HOME", tempfile.mkdtemp(prefix="oh-bench-"))
    from oh.backend.server import Backend, BackendConfig
    from oh.client import Client

    ws = Path(tempfile.mkdtemp(prefix="oh-bench-ws-"))
    python_project(ws)
    node_project(ws)
    b = Backend(BackendConfig(workspace=str(ws), write_session=False, action_timeout=600), TOKEN)
    if not uv:
        b.runtime._which = lambda tool: None if tool == "uv" else shutil.which(tool)
    await b.start()
    out: dict = {"rounds": rounds, "installer": "uv" if uv and shutil.which("uv") else "venv + pip"}
    try:
        async with await Client.connect(f"ws://127.0.0.1:{b.port}", TOKEN) as c:
            for target in ("python", "node"):
                took, obs = await timed(c, targets=[target])
                assert obs["extras"]["state"] == "ready", obs["content"]
                out[f"{target}_first_s"] = round(took, 3)
                noop = []
                for _ in range(rounds):
                    took, obs = await timed(c, targets=[target])
                    assert obs["extras"]["targets"][0]["did"] == "nothing"
                    noop.append(took)
                out[f"{target}_noop_ms_median"] = round(statistics.median(noop) * 1000, 2)
                out[f"{target}_noop_ms_max"] = round(max(noop) * 1000, 2)
            python_project(ws, version="0.2")
            took, obs = await timed(c, targets=["python"])
            assert (
                obs["extras"]["targets"][0]["did"] == "installed"
                and "-m venv" not in obs["extras"]["targets"][0]["command"]
            )
            out["python_changed_requirement_s"] = round(took, 3)
            took, obs = await timed(c)
            out["both_noop_ms"] = round(took * 1000, 2)
        shutil.rmtree(ws / ".venv")
        async with (
            await Client.connect(f"ws://127.0.0.1:{b.port}", TOKEN) as c1,
            await Client.connect(f"ws://127.0.0.1:{b.port}", TOKEN) as c2,
        ):
            t0 = time.perf_counter()
            a, bb = await asyncio.gather(c1.ensure(targets=["python"]), c2.ensure(targets=["python"]))
            out["two_agents_one_install_s"] = round(time.perf_counter() - t0, 3)
            ja, jb = a["extras"]["targets"][0]["job_id"], bb["extras"]["targets"][0]["job_id"]
            out["two_agents_same_job"] = ja == jb
    finally:
        await b.stop("bench")
        shutil.rmtree(ws, ignore_errors=True)
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--uv", action="store_true")
    a = p.parse_args()
    print(json.dumps(asyncio.run(main(a.rounds, a.uv)), indent=2))
