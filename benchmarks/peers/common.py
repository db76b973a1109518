"""Shared by the peer processes: the ready line, the lifetime guard, and the action executor.

Every executor (the oh headless editor and the peers' executors alike) executes actions with the
same code, ``oh.runtimes.local.LocalRuntime``, so the peers differ from oh only in their transport.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any, Awaitable, Callable

MAX_LIFETIME = 1800.0  # a peer never outlives this, whatever happens to the driver


def ready(**payload: Any) -> None:
    """The one line the driver waits for."""
    sys.stdout.write(json.dumps({"ready": True, **payload}) + "\n")
    sys.stdout.flush()


def guard_lifetime(max_seconds: float = MAX_LIFETIME) -> None:
    """Exit when the driver goes away (our stdin, a pipe it holds, reaches EOF) or after
    ``max_seconds``: a peer can never be left running."""

    def watch_stdin() -> None:
        try:
            while sys.stdin.buffer.read(65536):
                pass
        except (OSError, ValueError):
            pass
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    timer = threading.Timer(max_seconds, lambda: os._exit(3))
    timer.daemon = True
    timer.start()


Executor = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def make_executor(workspace: str):
    """(runtime, execute): ``execute(action_dict) -> observation dict`` with ``cause`` set, exactly
    what oh's headless editor does with a decoded frame (validate, execute, set cause)."""
    from oh.protocol.errors import ProtocolError
    from oh.protocol.events import error_from, parse_action
    from oh.runtimes.local import LocalRuntime

    runtime = LocalRuntime(os.path.realpath(workspace))

    async def execute(frame: dict[str, Any]) -> dict[str, Any]:
        try:
            action = parse_action(frame)
        except ProtocolError as exc:
            return error_from(exc)
        obs = await runtime.execute(action, "bench")
        obs["cause"] = action.id
        return obs

    return runtime, execute


def bind_loopback():
    """A listening TCP socket on 127.0.0.1 with a free port (servers get the socket).

    ``proto=IPPROTO_TCP`` matters: asyncio only disables Nagle (TCP_NODELAY) on accepted sockets whose
    ``proto`` says TCP, and accepted sockets inherit it from this one; a bare ``socket.socket()``
    (proto 0) leaves Nagle on and costs HTTP servers that write headers and body separately a 40 ms
    delayed-ACK stall per response. TCP_NODELAY is also set here (inherited on Linux)."""
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def run(main: Callable[[], Awaitable[None]]) -> int:
    guard_lifetime()
    from oh.eventloop import run as run_loop

    try:
        # The same event loop as oh's own processes (uvloop when the [fast] extra is installed,
        # OH_EVENT_LOOP=asyncio for the stdlib loop): every transport gets the same fast path.
        run_loop(main())
    except KeyboardInterrupt:
        pass
    return 0
