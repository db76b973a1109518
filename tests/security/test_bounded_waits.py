"""No request outlives its timeout, and no peer can make the backend (or a client) wait for ever.

- an editor that never answers: TIMEOUT at the action's deadline (timeout + editor wait + grace),
  and the editor is told to `cancel`;
- no editor: NO_EDITOR after the editor timeout; an editor that never registers is closed;
- the backend stops while actions are in flight: each gets INTERRUPTED, then close 1001;
- an agent that stops reading: dropped by the keepalive, other agents unaffected;
- clients facing a silent server: every call with a timeout returns by it;
- a static audit: every blocking call in src/oh without a timeout is listed here with the reason
  it is bounded anyway (docs/reliability.md has the full inventory).
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import socket
import time
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from backend.conftest import StartedBackends
from oh.backend import server as server_mod
from oh.backend.server import Backend, BackendConfig
from oh.client import Client, OhClientError, SyncClient

from . import helpers
from .conftest import EDITOR_AUTH, EDITOR_TOKEN, TOKEN, record

AUTH = {"Authorization": f"Bearer {TOKEN}"}
SLACK = 0.5  # scheduling slack on a loaded 2-core machine


@pytest.fixture
async def backend(workspace):
    made = StartedBackends()

    async def factory(runtime: str = "vscode", **kw) -> Backend:
        return await made.start(
            BackendConfig(workspace=str(workspace), runtime=runtime, write_session=False, trace_path=None, **kw),
            TOKEN,
            EDITOR_TOKEN,
        )

    yield factory
    await made.stop_all("teardown")


class SilentEditor:
    """Registers, records what it is sent (actions and cancels), never answers."""

    def __init__(self, port: int, folder: str) -> None:
        self.port, self.folder = port, folder
        self.actions: list[dict] = []
        self.cancels: dict[int, float] = {}

    async def __aenter__(self):
        self.conn = await connect(f"ws://127.0.0.1:{self.port}/v1/editor", additional_headers=EDITOR_AUTH)
        await self.conn.send(
            json.dumps(
                {"type": "register", "protocol": 1, "workspace_folders": [self.folder], "editor": {"name": "silent"}}
            )
        )
        assert json.loads(await self.conn.recv())["type"] == "registered"
        self.task = asyncio.create_task(self._read())
        return self

    async def _read(self):
        async for msg in self.conn:
            frame = json.loads(msg)
            if frame.get("type") == "cancel":
                self.cancels[frame["id"]] = time.monotonic()
            elif frame.get("type") is None:  # actions; control frames such as agent_gone are not
                self.actions.append(frame)

    async def __aexit__(self, *exc):
        self.task.cancel()
        await self.conn.close()


async def _agent(port: int):
    return await connect(f"ws://127.0.0.1:{port}/v1/agent", additional_headers=AUTH)


def _run(i: int, timeout: float | None = None, command: str = "sleep 100") -> str:
    frame = {"id": i, "action": "run", "args": {"command": command}}
    if timeout is not None:
        frame["timeout"] = timeout
    return json.dumps(frame)


async def test_silent_editor_every_action_times_out_at_its_deadline(backend, workspace):
    editor_timeout, grace = 0.3, 0.2
    b = await backend("vscode", editor_timeout=editor_timeout, deadline_grace=grace, action_timeout=0.6)
    timeouts = [0.2, 0.4, 0.6, 0.8, 1.0, None]  # None: the backend's action_timeout (0.6)
    overshoot = []
    async with SilentEditor(b.port, str(workspace)) as editor:
        async with await _agent(b.port) as ws:
            t0 = time.monotonic()
            for i, t in enumerate(timeouts, 1):
                await ws.send(_run(i, t))
            got = {}
            while len(got) < len(timeouts):
                obs = json.loads(await asyncio.wait_for(ws.recv(), 5))
                got[obs["cause"]] = (obs, time.monotonic() - t0)
        await asyncio.sleep(0.2)
        for i, t in enumerate(timeouts, 1):
            obs, elapsed = got[i]
            # the wait for an editor is part of the deadline, never beyond the action's own timeout (budget.editor_wait)
            deadline = (
                (t if t is not None else 0.6) + min(editor_timeout, t if t is not None else editor_timeout) + grace
            )
            assert obs["extras"]["error_id"] == "TIMEOUT", obs
            assert deadline - 0.05 <= elapsed <= deadline + SLACK, (i, deadline, elapsed)
            overshoot.append(elapsed - deadline)
        # the editor was told to stop each one
        assert sorted(editor.cancels) == sorted(a["id"] for a in editor.actions) and len(editor.cancels) == len(
            timeouts
        )
    assert b.status()["stats"]["pending"] == 0
    record("timeout_overshoot_s", helpers.summary(overshoot))


async def test_no_editor_is_reported_after_the_editor_timeout(backend):
    b = await backend("vscode", editor_timeout=0.3)
    async with await _agent(b.port) as ws:
        t0 = time.monotonic()
        await ws.send(_run(1))
        obs = json.loads(await asyncio.wait_for(ws.recv(), 5))
        elapsed = time.monotonic() - t0
    assert obs["extras"]["error_id"] == "NO_EDITOR" and 0.25 <= elapsed <= 0.3 + SLACK, elapsed


async def test_editor_that_never_registers_is_closed(backend, monkeypatch):
    monkeypatch.setattr(server_mod, "REGISTER_TIMEOUT", 0.3)
    b = await backend("vscode")
    async with connect(f"ws://127.0.0.1:{b.port}/v1/editor", additional_headers=EDITOR_AUTH) as conn:
        t0 = time.monotonic()
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(conn.recv(), 5)
        elapsed = time.monotonic() - t0
    assert closed.value.rcvd.code == 4400 and elapsed <= 0.3 + SLACK


async def test_backend_stop_interrupts_actions_in_flight_vscode(backend, workspace):
    b = await backend("vscode", editor_timeout=5)
    async with SilentEditor(b.port, str(workspace)):
        async with await _agent(b.port) as ws:
            for i in range(1, 6):
                await ws.send(_run(i))
            await asyncio.sleep(0.3)
            t0 = time.monotonic()
            stopping = asyncio.create_task(b.stop("test"))
            causes = set()
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    obs = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    assert obs["extras"]["error_id"] == "INTERRUPTED", obs
                    causes.add(obs["cause"])
            await asyncio.wait_for(stopping, 10)
            elapsed = time.monotonic() - t0
    assert causes == {1, 2, 3, 4, 5} and closed.value.rcvd.code == 1001
    assert elapsed < 5
    record("stop_with_5_actions_in_flight_s", round(elapsed, 3))


async def test_backend_stop_interrupts_a_running_command_and_kills_it(backend):
    b = await backend("local")
    async with await _agent(b.port) as ws:
        await ws.send(_run(1, None, "echo $$; sleep 100"))
        await asyncio.sleep(0.5)
        shells = helpers.children_named(os.getpid(), "bash")
        sleeps = [p for s in shells for p in helpers.children_named(s.pid, "sleep")]
        assert sleeps, "the command did not start"
        t0 = time.monotonic()
        stopping = asyncio.create_task(b.stop("test"))
        obs = json.loads(await asyncio.wait_for(ws.recv(), 10))
        await asyncio.wait_for(stopping, 10)
    assert obs["cause"] == 1 and obs["extras"]["error_id"] == "INTERRUPTED"
    assert time.monotonic() - t0 < 5
    assert all(not helpers.alive(p.pid) for p in sleeps)


async def test_an_agent_that_stops_reading_is_dropped_and_others_are_unaffected(backend, workspace):
    """An agent floods big reads and never reads an answer: the backend's sends to it block (and so
    does websockets' keepalive ping, queued behind them), so after `send_timeout` the backend drops
    it instead of holding its observations for ever; another agent is served normally meanwhile."""
    (workspace / "big.txt").write_text("x" * (1 << 20))
    b = await backend("local", send_timeout=0.5)
    port = b.port

    def stuck_agent() -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(
            helpers.upgrade_request("/v1/agent", [("Host", f"127.0.0.1:{port}"), ("Authorization", f"Bearer {TOKEN}")])
        )
        assert sock.recv(4096).startswith(b"HTTP/1.1 101")
        for i in range(1, 61):
            sock.sendall(helpers.ws_text_frame(json.dumps({"id": i, "action": "read", "args": {"path": "big.txt"}})))
        return sock  # and never read again

    sock = await asyncio.to_thread(stuck_agent)
    try:
        t0 = time.monotonic()
        async with Client(await _agent(port), f"ws://127.0.0.1:{port}") as other:
            latencies = []
            while time.monotonic() - t0 < 6:
                t1 = time.monotonic()
                obs = await other.run("echo alive", timeout=5)
                latencies.append(time.monotonic() - t1)
                assert obs.content.strip() == "alive"
                if len(b.agents) == 1:  # only `other` is left: the stuck one was dropped
                    break
                await asyncio.sleep(0.1)
            dropped_after = time.monotonic() - t0
            assert list(b.agents) == ["a2"]  # a1, the stuck one, is gone; `other` is still served
    finally:
        sock.close()
    assert dropped_after < 5, dropped_after
    assert max(latencies) < 1.0, latencies
    record(
        "stuck_reader_dropped_after_s",
        {
            "seconds": round(dropped_after, 2),
            "send_timeout": 0.5,
            "other_agent_max_latency_s": round(max(latencies), 3),
        },
    )


async def test_an_editor_that_stops_reading_is_dropped(backend, workspace):
    """The editor registers, then never reads: big actions fill the buffers towards it; after
    `send_timeout` the backend drops it and every action it held gets EDITOR_DISCONNECTED (long before
    the actions' own deadlines)."""
    b = await backend("vscode", editor_timeout=5, send_timeout=0.5)
    port = b.port

    def stuck_editor() -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(
            helpers.upgrade_request(
                "/v1/editor", [("Host", f"127.0.0.1:{port}"), ("Authorization", f"Bearer {EDITOR_TOKEN}")]
            )
        )
        sock.sendall(
            helpers.ws_text_frame(
                json.dumps(
                    {
                        "type": "register",
                        "protocol": 1,
                        "workspace_folders": [str(workspace)],
                        "editor": {"name": "stuck"},
                    }
                )
            )
        )
        head = sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 101")
        return sock  # and never read again

    sock = await asyncio.to_thread(stuck_editor)
    try:
        await asyncio.sleep(0.2)
        assert len(b.registry) == 1
        async with await Client.connect(f"ws://127.0.0.1:{port}", TOKEN) as agent:
            t0 = time.monotonic()
            obs = await asyncio.wait_for(
                asyncio.gather(*(agent.write(f"f{i}.txt", "y" * (1 << 20)) for i in range(20))), 10
            )
            elapsed = time.monotonic() - t0
        assert {o.error_id for o in obs} == {"EDITOR_DISCONNECTED"}, [o.error_id for o in obs]
        assert len(b.registry) == 0
    finally:
        sock.close()
    assert elapsed < 3
    record("stuck_editor_dropped_after_s", {"seconds": round(elapsed, 2), "send_timeout": 0.5, "actions": 20})


@pytest.fixture
def silent_server():
    """A TCP listener that accepts and never says a word (a frozen backend)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    yield srv.getsockname()[1]
    srv.close()


async def test_clients_facing_a_silent_server_return_by_their_timeouts(silent_server, backend, workspace):
    port = silent_server
    url = f"ws://127.0.0.1:{port}"
    timings = {}

    t0 = time.monotonic()
    with pytest.raises(OhClientError):
        await asyncio.to_thread(SyncClient.connect, url, TOKEN, open_timeout=0.5)
    timings["SyncClient.connect(open_timeout=0.5)"] = time.monotonic() - t0

    t0 = time.monotonic()
    with pytest.raises(OhClientError):
        await Client.connect(url, TOKEN, open_timeout=0.5)
    timings["Client.connect(open_timeout=0.5)"] = time.monotonic() - t0

    from oh.launcher.control import BackendUnreachable, http_get
    from oh.sessions import Session

    fake = Session("silent", os.getpid(), 0.0, "127.0.0.1", port, "vscode", str(workspace), TOKEN)
    t0 = time.monotonic()
    with pytest.raises(BackendUnreachable):
        await asyncio.to_thread(http_get, fake, "/v1/status", token=TOKEN, timeout=0.5)
    timings["control.http_get(timeout=0.5)"] = time.monotonic() - t0

    # a connected client whose observation never comes (the editor is silent)
    b = await backend("vscode", editor_timeout=30)
    async with SilentEditor(b.port, str(workspace)):
        async with await Client.connect(f"ws://127.0.0.1:{b.port}", TOKEN) as c:
            t0 = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await c.send({"action": "run", "args": {"command": "sleep 100"}}, timeout=0.5)
            timings["Client.send(timeout=0.5)"] = time.monotonic() - t0

        def sync_send():
            with SyncClient.connect(f"ws://127.0.0.1:{b.port}", TOKEN) as s:
                t1 = time.monotonic()
                with pytest.raises(TimeoutError):
                    s.send({"action": "run", "args": {"command": "sleep 100"}}, timeout=0.5)
                return time.monotonic() - t1

        timings["SyncClient.send(timeout=0.5)"] = await asyncio.to_thread(sync_send)
    for what, elapsed in timings.items():
        assert elapsed <= 0.5 + SLACK, (what, elapsed)
    record("client_timeouts_s", {k: round(v, 3) for k, v in timings.items()})


def test_oh_status_with_a_frozen_backend_returns_promptly(oh, silent_server):
    """A live pid whose port never answers (a SIGSTOPped backend): `oh status` reports it unreachable
    within its 2 s per-backend timeout instead of hanging."""
    from oh import sessions

    me = os.getpid()
    s = sessions.Session(
        "frozen000001",
        me,
        sessions.process_start_time(me),
        "127.0.0.1",
        silent_server,
        "vscode",
        str(oh.workspace),
        "t" * 43,
    )
    sessions.write(s, oh.home / "sessions")
    t0 = time.monotonic()
    p = oh("status", "--json", timeout=30)
    elapsed = time.monotonic() - t0
    (row,) = json.loads(p.stdout)["sessions"]
    assert row["reachable"] is False and elapsed < 2 + 8  # 2 s timeout + interpreter start-up on a busy machine
    (oh.home / "sessions" / "frozen000001.json").unlink()
    record("oh_status_frozen_backend_s", round(elapsed, 2))


# ----------------------------------------------------------------------------- static audit
SRC = Path(__file__).resolve().parents[2] / "src" / "oh"
# Blocking calls that can wait and take a timeout. Each call site without one must be listed below
# with the reason it is bounded anyway (or deliberately unbounded).
BLOCKING = {"recv", "wait", "communicate", "result", "select", "readline", "get", "acquire", "join"}
REVIEWED = {
    # (file, function, call): why it is bounded anyway
    (
        "runtimes/arbiter.py",
        "_locked",
        "entry[0].acquire",
    ): "a file's write/edit lock: its holder's action has a deadline (review: review_timeout), and the waiter's own "
    "deadline cancels its task, releasing its place",
    (
        "backend/approvalweb.py",
        "_run_notifier",
        "proc.wait",
    ): "the notifier was just SIGKILLed after its 30 s bound (wait_for above): the wait only reaps it",
    (
        "backend/__main__.py",
        "main",
        "sys.stdin.readline",
    ): "the launcher writes the token and the private line and closes the pipe at once; EOF (launcher gone) ends it",
    **{
        ("history/tree.py", "git_listing", f"{name}.result"): "git ls-files/diff-files in a worker, each run with a "
        "subprocess timeout (30 s): the future ends when they do"
        for name in ("listed_f", "dirty_f", "others_f")
    },
    ("history/tree.py", "tops", "self._tops_f.result"): "git ls-files --ignored in a worker, run with a subprocess "
    "timeout (30 s): the future ends when it does",
    (
        "runtimes/local/group.py",
        "_settle",
        "cmd.finished.wait",
    ): "a job's or kept command's watcher (_watch, _watch_kept): the command ends, or job cancel / retention / "
    "close kill its shell, which finishes it",
    (
        "backend/__main__.py",
        "_load_token",
        "sys.stdin.readline",
    ): "the launcher writes the token and closes the pipe at once; EOF (launcher gone) ends it",
    (
        "backend/server.py",
        "wait_stopped",
        "self._stopped.wait",
    ): "the process's main wait: until SIGTERM/SIGINT/SIGHUP or a shutdown request",
    (
        "backend/server.py",
        "stop",
        "self._stopped.wait",
    ): "a second stop() waits for the first, whose every step has a timeout",
    (
        "backend/monitors.py",
        "serve",
        "queue.get",
    ): "raced with the connection's reader in asyncio.wait: ends when the monitor closes",
    ("backend/monitors.py", "serve", "getter.result"): "only called on a completed future",
    ("editor/peer.py", "run_editor", "ready.wait"): "raced with the serve task in asyncio.wait",
    (
        "runtimes/local/knowledge.py",
        "symbols_by_ripgrep",
        "proc.wait",
    ): "rg was just SIGKILLed (or had exited): the wait only reaps it",
    (
        "runtimes/local/group.py",
        "_reap",
        "cmd.finished.wait",
    ): "a watcher task: the command ends, or its shell is killed (group close, cancel), which finishes it",
    (
        "client/monitor.py",
        "monitor",
        "stop.wait",
    ): "raced with recv in asyncio.wait: ends on Ctrl-C, or when the backend closes",
    ("client/monitor.py", "monitor", "recv.result"): "only called on a completed future",
    (
        "client/monitor.py",
        "monitor",
        "conn.recv",
    ): "raced with the stop event in asyncio.wait; keepalive pings drop a frozen backend",
    ("ui/liveview.py", "_first_to_end", "task.result"): "only called on a task asyncio.wait returned as done",
    (
        "launcher/editorcli.py",
        "query_async",
        "proc.wait",
    ): "after proc.kill() of an editor CLI's `--list-extensions`: SIGKILL ends it",
    (
        "commands/_branch.py",
        "_prompt",
        "sys.stdin.readline",
    ): (
        "deliberately waits for the user: only on a terminal (never --detach/--json/a pipe), before any backend "
        "exists; EOF or Ctrl-C ends it"
    ),
    (
        "commands/review.py",
        "_ask",
        "io.inp.readline",
    ): (
        "`oh review patch` deliberately waits for the user's answer about each hunk: only when stdin is a terminal "
        "(else refused before asking); EOF (taken as q) or Ctrl-C ends it"
    ),
    (
        "commands/config.py",
        "_ask_tty",
        "io.inp.readline",
    ): (
        "`oh config edit`'s 'Edit again?' deliberately waits for the user: only when stdin is a terminal; EOF or "
        "Ctrl-C ends it"
    ),
    ("commands/config.py", "ask", "io.inp.readline"): "the same question (the closure _ask_tty returns)",
    (
        "runtimes/local/engine.py",
        "_watch_exit",
        "proc.wait",
    ): (
        "a watcher task of the agent's shell process: the shell exits, or kill() ends it (ptyproc.hang_up: "
        "SIGHUP, then SIGKILL after the grace)"
    ),
    (
        "runtimes/local/enginehost.py",
        "_wait_done",
        "cmd.finished.wait",
    ): (
        "a watcher task of one command: it ends, or its shell exits or is killed (_watch_exit finishes the "
        "running command)"
    ),
    (
        "runtimes/local/enginehost.py",
        "serve",
        "reader.readline",
    ): "the engine host's main loop reading requests from its parent: end of input (the parent gone) ends it",
    (
        "runtimes/local/enginehost.py",
        "_start_watching",
        "reader.readline",
    ): "the same reading while the shell starts (cancelled once the shell is up and nothing came)",
    ("runtimes/local/enginehost.py", "_start_watching", "first.result"): (
        "only called on a task asyncio.wait returned as done (or after it was awaited)"
    ),
    (
        "backend/flow.py",
        "_wait_change",
        "self._changed.wait",
    ): (
        "an action waiting for its connection's output to drain (reserve: under the action deadline), or the "
        "agent's reader paused while it drains (wait_for_room): the sends are bounded by send_timeout, then the "
        "connection is dropped and its tasks end"
    ),
    (
        "runtimes/local/group.py",
        "_notify_when",
        "cmd.finished.wait",
    ): (
        "a watcher task of the run queue: the main shell's command ends, or its shell is killed (group close), "
        "which finishes it"
    ),
}


def _call_name(node: ast.Call) -> str:
    try:
        return ast.unparse(node.func)
    except Exception:  # noqa: BLE001
        return "?"


def _has_timeout(node: ast.Call, name: str) -> bool:
    if any(k.arg in ("timeout", "timeout_seconds") for k in node.keywords):
        return True
    attr = name.rsplit(".", 1)[-1]
    positional = {"select": 4, "wait": 1, "communicate": 2, "join": 1, "result": 1, "get": 2, "acquire": 2, "recv": 1}
    return len(node.args) >= positional.get(attr, 99)


def _inside_wait_for(tree: ast.AST) -> set[int]:
    """ids of Call nodes under the first argument of ``asyncio.wait_for(x, t)`` with t not None."""
    bounded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) == "asyncio.wait_for" and node.args:
            t = (
                node.args[1]
                if len(node.args) > 1
                else next((k.value for k in node.keywords if k.arg == "timeout"), None)
            )
            if t is None or (isinstance(t, ast.Constant) and t.value is None):
                continue
            bounded |= {id(n) for n in ast.walk(node.args[0]) if isinstance(n, ast.Call)}
    return bounded


def _unbounded_calls() -> set[tuple[str, str, str]]:
    found = set()
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        wrapped = _inside_wait_for(tree)
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                    continue
                name = _call_name(node)
                attr = node.func.attr
                if attr not in BLOCKING:
                    continue
                base = ast.unparse(node.func.value)
                # not waits: str.join / os.path.join, dict.get, mapping.get, headers.get...
                if attr == "join" and (
                    isinstance(node.func.value, ast.Constant) or base in ("os.path", "posixpath", "shlex", "sep")
                ):
                    continue
                if attr == "get" and not base.endswith("queue"):
                    continue
                if attr == "recv" and base == "sock":
                    continue  # a socket with settimeout (control.http_get): bounded per call
                if attr == "wait" and base in ("asyncio",):
                    continue  # asyncio.wait(...): checked by hand (all have timeout= or race a reader)
                if attr in ("join",) and base.endswith(("parts", "lines", "chunks", "names", "cmd", "out")):
                    continue
                if id(node) in wrapped or _has_timeout(node, name):
                    continue
                rel = str(path.relative_to(SRC))
                found.add((rel, func.name, name))
    return found


def test_every_blocking_call_without_a_timeout_is_reviewed():
    found = _unbounded_calls()
    reviewed = {k for k in REVIEWED}
    new = sorted(found - reviewed)
    assert not new, (
        "blocking calls without a timeout that nobody reviewed (bound them, or add them to REVIEWED with the reason "
        f"they are bounded anyway, and to docs/reliability.md): {new}"
    )
    record("wait_audit", {"unbounded_call_sites_reviewed": len(found & reviewed)})
