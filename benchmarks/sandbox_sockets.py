"""The cost of covering the Unix sockets of programs outside when a sandboxed shell starts (docs/security.md
§10, ``runtimes/local/unixsocks.py``): with N path-bound sockets listening at paths the sandbox shows, the
listing and decision (``Sandbox.wrap``: one read of /proc/net/unix, an lstat per candidate, one bind per socket
in bubblewrap's argv) and bubblewrap's own start with those binds (``bwrap <argv> -- true``), side by side
with the same argv without the socket binds, interleaved.

    .venv/bin/python benchmarks/sandbox_sockets.py [ROUNDS] [N ...]     (default: 15 rounds; 0 50 500 2000)

Say the load (``uptime``) with the figures (docs/benchmarks.md).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from oh.protocol.sandbox import Spec
from oh.runtimes.local.sandbox import Sandbox, check

LAYOUTS = ("sockets only", "beside a file", "4 per directory, beside a file")


def _listeners(home: str, n: int, layout: str) -> list[socket.socket]:
    """``n`` listening sockets under ``home``/ipc: in one directory of sockets only (covered whole), in one
    directory beside a regular file, or four per directory beside a file (one cover each, up to the bound)."""
    out = []
    for i in range(n):
        d = os.path.join(home, "ipc", f"d{i // 4}") if layout == LAYOUTS[2] else os.path.join(home, "ipc")
        if not os.path.isdir(d):
            os.makedirs(d)
            if layout != LAYOUTS[0]:
                with open(os.path.join(d, "config"), "w") as f:
                    f.write("x")
        s = socket.socket(socket.AF_UNIX)
        s.bind(os.path.join(d, f"s{i}.sock"))
        s.listen(1)
        out.append(s)
    return out


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.2f}"


def _time_run(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, timeout=60)
    return time.perf_counter() - t0


def measure(n: int, rounds: int, layout: str) -> tuple[str, str, str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        home, ws = os.path.join(tmp, "home"), os.path.join(tmp, "home", "ws")
        os.makedirs(ws)
        socks = _listeners(home, n, layout)
        env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OH_HOME": os.path.join(tmp, "oh")}
        box = Sandbox(Spec(), workspace=ws)
        wraps, with_binds, without = [], [], []
        try:
            for _ in range(rounds):
                t0 = time.perf_counter()
                argv = box.wrap(["true"], env, cwd=ws, scratch=())
                wraps.append(time.perf_counter() - t0)
                got = box.sockets
                covered = f"{len(got.files)} files, {len(got.dirs)} dirs, {len(got.left)} left"
                bare = [a for i, a in enumerate(argv) if not _is_socket_bind(argv, i)]
                with_binds.append(_time_run(argv))
                without.append(_time_run(bare))
        finally:
            box.close()
            for s in socks:
                s.close()
        return _ms(wraps), _ms(with_binds), _ms(without), covered


def _is_socket_bind(argv: list[str], i: int) -> bool:
    """argv[i] belongs to a ``--ro-bind /dev/null PATH.sock`` triple (the socket covers)."""
    for start in (i, i - 1, i - 2):
        if 0 <= start and start + 2 < len(argv) and argv[start] == "--ro-bind" and argv[start + 1] == "/dev/null":
            if argv[start + 2].endswith(".sock") and "/ipc/" in argv[start + 2]:
                return True
    # a directory's own cover: --tmpfs DIR --remount-ro DIR
    mine = "/ipc" in argv[i] and not argv[i].endswith(".sock")
    return mine or (argv[i] in ("--tmpfs", "--remount-ro") and "/ipc" in argv[i + 1])


def main() -> None:
    if not check().ok:
        raise SystemExit("bubblewrap cannot run here: " + check().problem)
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    sizes = [int(a) for a in sys.argv[2:]] or [0, 50, 500, 2000]
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; rounds {rounds}; medians in ms")
    print("| sockets | their directories | covered | Sandbox.wrap (list, decide) | bwrap with covers | without |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        for layout in LAYOUTS:
            wrap, binds, bare, covered = measure(n, rounds, layout)
            print(f"| {n} | {layout} | {covered} | {wrap} | {binds} | {bare} |")


if __name__ == "__main__":
    main()
