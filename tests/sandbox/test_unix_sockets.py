"""Unix sockets of programs outside the sandbox (docs/security.md §10): with the network off, every path-bound
socket that exists when a shell starts is covered, wherever the sandbox would show it (a fake HOME, a directory
outside the workspace, the workspace itself), spaces and newlines in the path included; the server counts the
connections it accepts. Positive controls: the same sockets reached with the network on (today's fixed list
only), a socket the agent binds itself in the workspace, and the known residual: a socket made after the shell
started."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oh.runtimes.local import sandbox as sandbox_mod
from oh.runtimes.local import unixsocks
from oh.runtimes.local.sandbox import check
from sandboxed import Listener

from .test_confinement import make_box, run, runtime

pytestmark = [
    pytest.mark.skipif(not check().ok, reason="bubblewrap cannot run here: " + check().problem),
    pytest.mark.timeout(180),
]


class UnixListener(Listener):
    """A Unix socket server at ``path`` that greets each client with a token and counts them."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.token = "hello-" + secrets.token_hex(4)
        self.accepted = 0
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.listen(8)
        super().__init__(sock)

    def handle(self, conn: socket.socket) -> None:
        self.accepted += 1
        conn.sendall(self.token.encode() + b"\n")

    def close(self) -> None:
        super().close()
        if self.path.exists():
            self.path.unlink()


def connect(path: Path) -> str:
    """A command that connects to ``path`` (repr: a space or a newline survives bash's double quotes)."""
    return (
        'python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.settimeout(3); '
        f's.connect({str(path)!r}); print(s.recv(100).decode())" 2>&1'
    )


@pytest.fixture
def elsewhere(tmp_path: Path):
    """A directory outside HOME and the workspace that the sandbox shows: not under /tmp (private in the
    sandbox), so at the root when this user may write there, else in the fake HOME."""
    if os.access("/", os.W_OK):
        path = Path("/") / f"oh-test-sockets-{secrets.token_hex(6)}"
        path.mkdir()
        yield path
        shutil.rmtree(path, ignore_errors=True)
    else:
        yield tmp_path / "home" / "elsewhere"


def places(box: dict[str, Any], elsewhere: Path) -> list[Path]:
    return [
        box["home"] / ".config" / "ide" / "ipc.sock",  # an IDE's IPC in HOME
        elsewhere / "proxy.sock",  # a proxy's, outside the workspace
        elsewhere / "dev server.sock",  # a space
        elsewhere / "x\ny.sock",  # a newline: spans two lines of /proc/net/unix
        box["ws"] / "devserver.sock",  # the user's dev server, in the workspace
    ]


@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
async def test_sockets_of_programs_outside_are_covered_with_the_network_off(tmp_path, elsewhere, network):
    box = make_box(tmp_path)
    servers = [UnixListener(p) for p in places(box, elsewhere)]
    rt = runtime(box, network=network)
    try:
        for server in servers:
            obs = await run(rt, connect(server.path), timeout=15)
            assert (server.token in obs["content"]) is network, (str(server.path), obs["content"])
            assert server.accepted == (1 if network else 0), str(server.path)
            if not network:
                assert "Connection refused" in obs["content"], obs["content"]
        # The workspace stays the agent's: files beside a covered socket are written, and a socket the agent
        # binds itself there is reached (its own, in its own network namespace: never covered).
        mine = box["ws"] / "mine.sock"
        serve = (
            "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.bind('mine.sock'); s.listen(1); "
            "c, _ = s.accept(); c.sendall(b'own-server')\" & sleep 0.5; echo note > beside.txt; "
        )
        obs = await run(rt, serve + connect(mine) + "; wait", timeout=20)
        assert "own-server" in obs["content"], obs["content"]
        assert (box["ws"] / "beside.txt").read_text() == "note\n"
    finally:
        for server in servers:
            server.close()
        await rt.close()


async def test_a_directory_of_many_sockets_is_covered_whole(tmp_path, elsewhere):
    """A directory holding nothing but sockets (COLLAPSE_AT or more, a php-fpm pool's) costs one cover, not
    one per socket (bubblewrap's start grows with the square of its mounts): each is still out of reach."""
    from oh.protocol import sandbox as rules

    box = make_box(tmp_path)
    servers = [UnixListener(elsewhere / "pool" / f"w{i}.sock") for i in range(rules.COLLAPSE_AT)]
    rt = runtime(box)
    try:
        for server in servers[:2]:
            obs = await run(rt, connect(server.path), timeout=15)
            assert server.token not in obs["content"] and server.accepted == 0, obs["content"]
        assert rt.sandbox.sockets.dirs == (str(elsewhere / "pool"),), rt.sandbox.sockets
    finally:
        for server in servers:
            server.close()
        await rt.close()


async def test_past_the_bound_the_directory_holding_the_most_is_covered_whole(tmp_path, elsewhere):
    """More than MAX_SOCKETS covers (four sockets per directory, beside a file: none can be covered alone):
    the directory that gathers them is covered whole, and every socket is still out of reach."""
    from oh.protocol import sandbox as rules

    box = make_box(tmp_path)
    many = elsewhere / "many"
    servers = []
    for i in range(rules.MAX_SOCKETS + 4):
        (many / f"d{i // 4}").mkdir(parents=True, exist_ok=True)
        (many / f"d{i // 4}" / "config").write_text("x")
        servers.append(UnixListener(many / f"d{i // 4}" / f"s{i}.sock"))
    rt = runtime(box)
    try:
        for server in (servers[0], servers[-1]):
            obs = await run(rt, connect(server.path), timeout=15)
            assert server.token not in obs["content"] and server.accepted == 0, obs["content"]
        assert rt.sandbox.sockets.dirs == (str(many),) and rt.sandbox.sockets.left == (), rt.sandbox.sockets
    finally:
        for server in servers:
            server.close()
        await rt.close()


async def test_a_socket_made_after_the_shell_started_is_reachable_the_known_residual(tmp_path, elsewhere):
    """The covers are fixed when bubblewrap starts: a socket bound later stays reachable until the shell
    restarts (docs/security.md §10 residual). The next shell covers it."""
    box = make_box(tmp_path)
    rt = runtime(box)
    late = None
    try:
        obs = await run(rt, "echo started", timeout=15)
        assert "started" in obs["content"]
        late = UnixListener(elsewhere / "late.sock")
        obs = await run(rt, connect(late.path), timeout=15)
        assert late.token in obs["content"], obs["content"]  # the residual
        await rt.close()
        rt = runtime(box)
        obs = await run(rt, connect(late.path), timeout=15)
        assert late.token not in obs["content"] and late.accepted == 1, obs["content"]
    finally:
        if late is not None:
            late.close()
        await rt.close()


@pytest.mark.parametrize("user_shell", [True, False], ids=["user-shell", "clean-shell"])
async def test_a_socket_deleted_as_the_shell_starts_does_not_cost_the_shell(
    tmp_path, elsewhere, monkeypatch, user_shell
):
    """A socket listed, checked, then deleted before bubblewrap binds over it: bubblewrap cannot bind over a
    missing path and fails; the shell is started once more (the list read again) instead of falling back to
    the clean shell (the user's shell) or failing (the clean shell)."""
    box = make_box(tmp_path)
    (box["home"] / ".bashrc").write_text("export FROM_RC=yes-rc\n")
    box["env"]["OH_USER_SHELL"] = "1" if user_shell else "0"
    going = UnixListener(elsewhere / "going.sock")
    real_live = unixsocks.live
    calls = []

    def live_then_delete(*args: Any) -> list[str]:
        found = real_live(*args)
        calls.append(len(found))
        if len(calls) == 1:
            assert str(going.path) in found
            going.close()  # deleted between the check and bubblewrap's start
        return found

    monkeypatch.setattr(sandbox_mod.unixsocks, "live", live_then_delete)
    rt = runtime(box)
    try:
        obs = await run(rt, "echo ran-$FROM_RC", timeout=30)
        assert ("ran-yes-rc" if user_shell else "ran-") in obs["content"], obs["content"]
        assert "clean shell" not in obs["content"], obs["content"]
        assert len(calls) == 2, calls
    finally:
        going.close()
        await rt.close()


def _oh(tmp: Path, home: Path, ws: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "XDG_"))}
    env.update(
        OH_HOME=str(tmp / "ohhome"),
        HOME=str(home),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        PYTHONDONTWRITEBYTECODE="1",
        OH_USER_SHELL="0",
    )
    return subprocess.run(
        [sys.executable, "-m", "oh", *args], capture_output=True, text=True, cwd=ws, env=env, timeout=90
    )


@pytest.mark.parametrize("network", ["off", "on"])
def test_oh_run_cannot_reach_a_socket_in_home_with_the_network_off(tmp_path, network):
    """Through real `oh start` / `oh run`: a server in HOME started before the backend."""
    home, ws = tmp_path / "userhome", tmp_path / "ws"
    ws.mkdir()
    server = UnixListener(home / ".local" / "share" / "ide" / "ipc.sock")
    try:
        p = _oh(tmp_path, home, ws, "start", "--detach", "--json", "--runtime", "local", "--no-open",
                "--sandbox-network", network)  # fmt: skip
        assert p.returncode == 0, p.stderr
        obs = json.loads(_oh(tmp_path, home, ws, "run", "--json", connect(server.path)).stdout)
        assert (server.token in obs["content"]) is (network == "on"), obs["content"]
        assert server.accepted == (1 if network == "on" else 0)
    finally:
        _oh(tmp_path, home, ws, "stop", "--all")
        server.close()
