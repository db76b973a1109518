"""What `--exports` costs the agent's engine host (docs/protocol.md §3.4.1): the VS Code extension starts the agent's
main host with it so extra and one-shot terminals can start with the main shell's exports.

    .venv/bin/python benchmarks/engine_exports.py [ROUNDS] [PER_ROUND]

Per command: `run true` over the host's JSON lines to its `done`, with and without `--exports` (the shell then writes
its `export -p` to a file at each prompt and the host reads it), rounds interleaved so load hits both alike. Per
extra terminal: one `exports` request to its reply (the extension asks once per extra terminal, never per command),
with 40 exported variables. Clean bash (no rc files), sandbox off: the figures are the host's own.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time


class Host:
    def __init__(self, cwd: str, exports: bool) -> None:
        argv = [sys.executable, "-m", "oh.runtimes.local.enginehost", "--cwd", cwd, "--clean", "--sandbox", "off"]
        self.p = subprocess.Popen(
            argv + (["--exports"] if exports else []), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.n = 0
        self.until("ready")

    def send(self, msg: dict) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def until(self, kind: str) -> dict:
        assert self.p.stdout is not None
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("the engine host exited")
            msg = json.loads(line)
            if msg["type"] == kind:
                return msg

    def timed(self, msg: dict, reply: str) -> float:
        self.n += 1
        t0 = time.perf_counter()
        self.send({**msg, "id": f"x{self.n}"})
        self.until(reply)
        return (time.perf_counter() - t0) * 1000

    def close(self) -> None:
        self.send({"type": "close"})
        self.p.wait(10)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    per = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    with tempfile.TemporaryDirectory() as cwd:
        hosts = {"without --exports": Host(cwd, False), "with --exports": Host(cwd, True)}
        setup = "; ".join(f"export V{i}='value {i} with some text'" for i in range(40))
        for h in hosts.values():
            h.timed({"type": "run", "command": setup}, "done")
        runs: dict[str, list[float]] = {k: [] for k in hosts}
        for _ in range(rounds):
            for name, h in hosts.items():
                runs[name] += [h.timed({"type": "run", "command": "true"}, "done") for _ in range(per)]
        ask = [hosts["with --exports"].timed({"type": "exports"}, "exports") for _ in range(rounds * 20)]
        for h in hosts.values():
            h.close()
    print(f"{'what':<34} {'p50 ms':>8} {'p90 ms':>8}  n")
    for name, xs in [*((f"run true, {k}", v) for k, v in runs.items()), ("exports request (40 variables)", ask)]:
        q = statistics.quantiles(xs, n=10)
        print(f"{name:<34} {statistics.median(xs):8.3f} {q[8]:8.3f}  {len(xs)}")


if __name__ == "__main__":
    main()
