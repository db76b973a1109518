"""The agent's shell engine (issue 17): `run echo hi` backend-side and the time to the first terminal, the
pty engine (clean bash, the user's bash, the user's zsh) side by side with a yardstick: a new
`bash --norc -c 'echo hi'` through asyncio's subprocess per command (what a shell-less runtime would pay;
the old bash-on-pipes shell it replaced was retired in issue 26).
Issue 27 adds the pty engine inside the bubblewrap sandbox, next to the same engine without it.

    .venv/bin/python benchmarks/shell_engine.py [ROUNDS] [PER_ROUND]

"Backend-side" = ``LocalRuntime.execute`` of a ``run`` action to its observation, in this process
(no WebSocket, no client): the part of a round trip the engine owns. Rounds interleave the engines so
machine load hits all alike. The "user" shells read a realistic rc file (an alias, a function, a PATH
addition, an export, a prompt hook) from a private HOME. benchmarks/run.py runs this as P9.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from oh.protocol.events import parse_action
from oh.protocol.sandbox import Spec
from oh.runtimes.local import LocalRuntime
from oh.runtimes.local.sandbox import check

BASHRC = """alias ll='ls -l'
proj() { cd "$1" || return; }
export PATH="$HOME/bin:$PATH"
export EDITOR=vi
PROMPT_COMMAND='__last_status=$?'
PS1='\\u@\\h:\\w\\$ '
"""
ZSHRC = """alias ll='ls -l'
proj() { cd "$1" || return; }
path=("$HOME/bin" $path)
export EDITOR=vi
precmd() { __last_status=$?; }
PS1='%n@%m:%~%# '
"""
_ids = itertools.count(1)


def _action(command: str):
    return parse_action({"id": next(_ids), "action": "run", "args": {"command": command, "blocking": True}})


def engines(home: Path) -> dict[str, dict]:
    found = {
        YARDSTICK: {"env": {}},
        "pty, clean bash (no rc)": {"env": {"OH_USER_SHELL": "0"}},
        "pty, user's bash + rc": {"env": {"OH_USER_SHELL": "1", "SHELL": shutil.which("bash") or "/bin/bash"}},
    }
    if shutil.which("zsh"):
        found["pty, user's zsh + rc"] = {"env": {"OH_USER_SHELL": "1", "SHELL": shutil.which("zsh")}}
    # Issue 27: the same engines inside the bubblewrap sandbox (workspace-write), side by side with the above.
    if check().ok:
        for name in ("pty, clean bash (no rc)", "pty, user's bash + rc"):
            if name in found:
                found[name + ", sandboxed"] = {**found[name], "sandbox": "workspace-write"}
    for spec in found.values():
        spec["env"] = dict(os.environ, HOME=str(home), **spec["env"])
        spec["env"].pop("ZDOTDIR", None)
    return found


YARDSTICK = "yardstick: new `bash --norc -c` per command"


class Yardstick:
    """A new bash per command (no persistent shell): the same `execute` shape as the runtime."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws

    async def execute(self, action, agent) -> dict:
        proc = await asyncio.create_subprocess_exec(
            "bash", "--norc", "-c", action.command, cwd=self.ws, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate()
        return {"content": out.decode(), "extras": {"metadata": {"exit_code": proc.returncode}}}

    async def close(self) -> None:
        pass


def _runtime(ws: Path, name: str, spec: dict):
    return (
        Yardstick(ws)
        if name == YARDSTICK
        else LocalRuntime(ws, env=spec["env"], sandbox=Spec(level=spec.get("sandbox", "off")))
    )


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


async def measure(rounds: int = 10, per_round: int = 50, first_samples: int = 5) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="oh-bench-engine-"))
    try:
        home = tmp / "home"
        (home / "bin").mkdir(parents=True)
        (home / ".bashrc").write_text(BASHRC)
        (home / ".zshrc").write_text(ZSHRC)
        ws = tmp / "ws"
        ws.mkdir()
        specs = engines(home)
        # time to the first terminal: a new runtime's first `echo hi` (shell start + rc files + the command)
        first: dict[str, list[float]] = {name: [] for name in specs}
        for _ in range(first_samples):
            for name, spec in specs.items():
                rt = _runtime(ws, name, spec)
                t0 = time.perf_counter()
                obs = await rt.execute(_action("echo hi"), "bench")
                first[name].append((time.perf_counter() - t0) * 1000)
                assert obs["content"] == "hi\n", obs
                await rt.close()
        runtimes = {name: _runtime(ws, name, spec) for name, spec in specs.items()}
        lat: dict[str, list[float]] = {name: [] for name in specs}
        try:
            for rt in runtimes.values():
                for _ in range(5):
                    await rt.execute(_action("echo hi"), "bench")
            for r in range(rounds):
                order = list(runtimes.items())
                if r % 2:
                    order.reverse()
                for name, rt in order:
                    for _ in range(per_round):
                        t0 = time.perf_counter()
                        obs = await rt.execute(_action("echo hi"), "bench")
                        lat[name].append((time.perf_counter() - t0) * 1000)
                        if obs["content"] != "hi\n" or obs["extras"]["metadata"]["exit_code"] != 0:
                            raise RuntimeError(f"{name}: {obs['content']!r}")
        finally:
            for rt in runtimes.values():
                await rt.close()
        return {
            name: {
                "p50_ms": round(pct(lat[name], 0.5), 2),
                "p90_ms": round(pct(lat[name], 0.9), 2),
                "p99_ms": round(pct(lat[name], 0.99), 2),
                "n": len(lat[name]),
                "first_terminal_ms": round(pct(first[name], 0.5), 1),
            }
            for name in specs
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def table(figs: dict) -> str:
    rows = [
        "| engine | `run echo hi` p50 ms | p90 ms | p99 ms | samples | first terminal (median) ms |",
        "|---|---|---|---|---|---|",
    ]
    for name, f in figs.items():
        rows.append(f"| {name} | {f['p50_ms']} | {f['p90_ms']} | {f['p99_ms']} | {f['n']} | {f['first_terminal_ms']} |")
    return "\n".join(rows)


if __name__ == "__main__":
    r = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    p = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    print(table(asyncio.run(measure(r, p))))
