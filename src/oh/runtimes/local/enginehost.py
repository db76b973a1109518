"""The shell engine over stdio: ``python -m oh.runtimes.local.enginehost`` (docs/protocol.md §3.4.1).

The VS Code extension starts this with the interpreter that runs the backend (the session file's
``python``) and drives the agent's shell through JSON lines: the same ``PtyShell`` the local runtime
uses, so VS Code's default terminal and the local runtime are one engine with one behaviour.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import shutil
import sys
import tempfile
from typing import Any

from ... import programs
from ...protocol import sandbox as rules
from .command import Command
from .engine import STARTUP_TIMEOUT, PtyShell
from .exports import parse_exports
from .render import COLS, ROWS
from .runtime import shell_environment
from .sandbox import Sandbox, SandboxUnavailable

KEYS = {"C-c": "c", "C-d": "d", "C-z": "z", "C-\\": "\\"}
EXPORT_NAME = __import__("re").compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Host:
    def __init__(
        self,
        cwd: str,
        *,
        clean: bool,
        startup_timeout: float,
        max_output: int,
        out=None,
        sandbox: Sandbox | None = None,
        exports: bool = False,
    ) -> None:
        self.workspace = cwd
        self.cwd = cwd
        self.clean = clean
        self.startup_timeout = startup_timeout
        self.max_output = max_output
        self.env = shell_environment(os.environ)
        self.scratch = tempfile.mkdtemp(prefix="oh-engine-")
        programs.distrust(self.scratch)  # the agent's shells write their run files there
        # With --exports (the agent's main shell), the shell writes its `export -p` here after each command (0600
        # in the 0700 scratch dir: values may be secrets; +0.33 ms a command, benchmarks/engine_exports.py, so
        # only where it is used); an `exports` request answers from it, so the extension's extra and one-shot
        # shells start with them.
        self.snapshot = os.path.join(self.scratch, "env") if exports else ""
        if self.snapshot:
            os.close(os.open(self.snapshot, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600))
        self.out = out or sys.stdout.buffer
        self.shell: PtyShell | None = None
        self.sandbox = sandbox  # bubblewrap around the shell (sandbox.py); None: unconfined
        self.cmd_id: str | None = None
        self.cmd: Command | None = None
        self.killed = False
        self._waiter: asyncio.Task | None = None
        self._closing = False
        self._said: set[str] = {""}
        self._restart_lock = asyncio.Lock()

    # ------------------------------------------------------------------ output
    def emit(self, msg: dict[str, Any]) -> None:
        try:
            self.out.write(json.dumps(msg, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n")
            self.out.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the client is gone; EOF on stdin ends us

    def _data(self, text: str) -> None:
        self.emit({"type": "data", "text": text})

    def error(self, code: str, message: str, id_: Any = None) -> None:
        msg: dict[str, Any] = {"type": "error", "code": code, "message": message}
        if id_ is not None:
            msg["id"] = id_
        self.emit(msg)

    # ------------------------------------------------------------------ shell
    async def start_shell(self, *, restarted: bool = False, reason: str = "") -> None:
        cwd = self.cwd if os.path.isdir(self.cwd) else self.workspace
        shell = PtyShell(
            cwd,
            self.env,
            os.path.join(self.scratch, "run.sh"),
            self.max_output,
            self.snapshot,
            user_shell=not self.clean,
            startup_timeout=self.startup_timeout,
            on_data=self._data,
            sandbox=self.sandbox,
        )
        try:
            await shell.start()
        except BaseException:
            # Cancelled (the extension closed this host) or failed while the user's rc files run: end it as a
            # closed terminal does, so their EXIT traps run (an rc's lock left behind blocks every later shell
            # of the user: issue 30 #4).
            await asyncio.shield(shell.kill())
            raise
        self.shell = shell
        # Each note is said once per host: the sandbox's level first (as the local runtime's first observation
        # says it, issue 27), then the shell's own; one per line, the extension brackets each.
        notes = [n for n in (self.sandbox.note() if self.sandbox is not None else "", shell.note) if n]
        note = "\n".join(n for n in notes if n not in self._said)
        self._said.update(notes)
        msg = {
            "type": "ready",
            "shell": shell.kind,
            "path": shell.path,
            "rc": shell.rc,
            "pid": shell.pid,
            "cols": COLS,
            "rows": ROWS,
            "note": note,
            "sandbox": self.sandbox.status() if self.sandbox is not None else {"level": "off", "confined": False},
        }
        if restarted:
            msg.update(restarted=True, reason=reason)
        self.emit(msg)

    async def _internal(self, text: str) -> bool:
        assert self.shell is not None
        cmd = self.shell.submit(text, internal=True)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(cmd.finished.wait(), 10)
        return cmd.done and cmd.exit_code == 0

    async def run(self, msg: dict[str, Any]) -> None:
        id_ = msg.get("id")
        command = msg.get("command")
        env = msg.get("env") or {}
        cwd = msg.get("cwd")
        if not isinstance(id_, str) or not id_ or not isinstance(command, str) or "\0" in command:
            return self.error("BAD_REQUEST", "run needs a string id and a command without NUL characters.", id_)
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and EXPORT_NAME.match(k) and isinstance(v, str) for k, v in env.items()
        ):
            return self.error("BAD_REQUEST", "env must map variable names ([A-Za-z_][A-Za-z0-9_]*) to strings.", id_)
        if cwd is not None and not isinstance(cwd, str):
            return self.error("BAD_REQUEST", "cwd must be a string.", id_)
        if self.cmd is not None:
            return self.error(
                "BUSY",
                f"Command {self.cmd_id} is still running; wait for its done, send it input or keys, or kill it.",
                id_,
            )
        limit = msg.get("max_output")
        limit = limit if isinstance(limit, int) and limit > 0 else self.max_output
        self.cmd_id = id_
        self.cmd = Command(command, limit)  # placeholder: BUSY from here on
        async with self._restart_lock:  # a restart after the previous command's end finishes first
            if self.shell is None or not self.shell.alive:
                if self.shell is not None:
                    self.cwd = self.shell.last_cwd
                    await self.shell.kill()
                await self.start_shell(restarted=self.shell is not None, reason="the shell had exited")
        assert self.shell is not None
        if env:
            await self._internal("\n".join(f"builtin export {k}={shlex.quote(v)}" for k, v in env.items()))
        text = command if cwd is None else f"builtin cd -- {shlex.quote(cwd)} || return $?\n{command}"
        self.killed = False
        self.cmd = self.shell.submit(text, limit=limit)
        self.cmd.command = command
        self.emit({"type": "started", "id": id_, "pid": self.shell.pid})
        self._waiter = asyncio.ensure_future(self._wait_done(id_, self.cmd, self.shell))

    async def _wait_done(self, id_: str, cmd: Command, shell: PtyShell) -> None:
        await cmd.finished.wait()
        truncated = cmd.buffer.dropped > 0
        output = cmd.take_output()
        self.cwd = cmd.cwd or self.cwd
        self.emit(
            {
                "type": "done",
                "id": id_,
                "exit_code": -1 if self.killed else cmd.exit_code,
                "cwd": self.cwd,
                "output": output,
                "truncated": truncated,
                "shell_exited": cmd.shell_exited or self.killed,
                "killed": self.killed,
                "note": "",
            }
        )
        restart = (cmd.shell_exited or self.killed) and not self._closing
        reason = "killed" if self.killed else f"the shell exited with code {cmd.exit_code}"
        if not restart:
            self.cmd = None
            self.cmd_id = None
            return
        async with self._restart_lock:
            self.cmd = None  # a run arriving now waits for the lock, then finds the new shell
            self.cmd_id = None
            await shell.kill()
            self.killed = False
            await self.start_shell(restarted=True, reason=reason)

    def exports(self, msg: dict[str, Any]) -> None:
        """The shell's exports as of its last finished command (a running one's are not known yet), parsed, never
        run: names checked like ``run``'s env, oh's secrets left out (exports.py)."""
        text = self.shell.exports if self.shell is not None else ""
        self.emit({"type": "exports", "id": msg.get("id"), "env": parse_exports(text), "cwd": self.cwd})

    def peek(self, msg: dict[str, Any]) -> None:
        if self.cmd is None or msg.get("id") != self.cmd_id:
            return self.error("NO_COMMAND", "No such running command.", msg.get("id"))
        if self.shell is not None:
            self.shell.flush_pending()
        truncated = self.cmd.buffer.dropped > 0
        self.emit({"type": "output", "id": self.cmd_id, "output": self.cmd.take_output(), "truncated": truncated})

    async def input(self, msg: dict[str, Any]) -> None:
        text = msg.get("text")
        if not isinstance(text, str):
            return self.error("BAD_REQUEST", "input needs a string text.")
        if self.cmd is None or self.shell is None:
            return self.error("NO_COMMAND", "No command is running: input is only typed into a running command.")
        await self.shell.send_input(text.encode("utf-8", "replace"), hide_echo=bool(msg.get("hide_echo", False)))

    async def key(self, msg: dict[str, Any]) -> None:
        key = KEYS.get(msg.get("key"))  # type: ignore[arg-type]
        if key is None:
            return self.error("BAD_REQUEST", f"key must be one of {', '.join(KEYS)}.")
        if self.cmd is None or self.shell is None:
            return self.error("NO_COMMAND", "No command is running.")
        await self.shell.send_key(key)

    async def kill(self, *, reset: bool = False) -> None:
        shell = self.shell
        if shell is None:
            return
        if self.cmd is not None and self._waiter is not None:
            self.cwd = shell.cwd_now()
            self.killed = True
            await shell.kill()  # the waiter reports done and restarts the shell
            with contextlib.suppress(Exception):
                await self._waiter
        else:
            async with self._restart_lock:
                self.cwd = shell.cwd_now()
                await shell.kill()
                await self.start_shell(restarted=True, reason="killed")
        if reset:
            async with self._restart_lock:
                assert self.shell is not None
                self.cwd = self.workspace
                await self.shell.kill()
                await self.start_shell(restarted=True, reason="reset")

    async def close(self) -> None:
        self._closing = True
        if self.shell is not None:
            await self.shell.kill()
        shutil.rmtree(self.scratch, ignore_errors=True)

    # ------------------------------------------------------------------ loop
    async def handle(self, line: bytes) -> bool:
        try:
            msg = json.loads(line)
        except ValueError:
            self.error("BAD_REQUEST", "Each line must be one JSON object.")
            return True
        if not isinstance(msg, dict):
            self.error("BAD_REQUEST", "Each line must be one JSON object.")
            return True
        kind = msg.get("type")
        if kind == "run":
            await self.run(msg)
        elif kind == "peek":
            self.peek(msg)
        elif kind == "exports":
            self.exports(msg)
        elif kind == "input":
            await self.input(msg)
        elif kind == "key":
            await self.key(msg)
        elif kind == "kill":
            await self.kill()
        elif kind == "reset":
            await self.kill(reset=True)
        elif kind == "close":
            return False
        else:
            kinds = "run, peek, exports, input, key, kill, reset or close"
            self.error("BAD_REQUEST", f"Unknown type {kind!r}: {kinds}.", msg.get("id"))
        return True


def _sandbox(args: argparse.Namespace, cwd: str) -> Sandbox:
    """``--sandbox-spec`` as it is (the backend's resolved spec, docs/protocol.md §3.17: the same bubblewrap
    command line as the local runtime's); without one, the flags over the environment's OH_SANDBOX* (VS Code
    with no backend's spec, a hand-started host)."""
    roots = tuple(r for r in args.allow if os.path.isdir(r))
    if args.sandbox_spec is not None:
        spec, hidden = rules.from_wire(json.loads(args.sandbox_spec))  # checked by main()
        return Sandbox(spec, workspace=cwd, roots=roots, hidden=(*hidden, *args.hide))
    values: dict[str, Any] = {k.lower()[3:]: v for k, v in os.environ.items() if k.startswith("OH_SANDBOX")}
    flags = {
        "sandbox": args.sandbox,
        "sandbox_network": args.sandbox_network,
        "sandbox_fallback": args.sandbox_fallback,
        "sandbox_bwrap": args.sandbox_bwrap,
        "sandbox_writable": args.sandbox_writable,
    }
    values.update({k: v for k, v in flags.items() if v is not None})
    return Sandbox(rules.spec_from(values), workspace=cwd, roots=roots, hidden=tuple(args.hide))


async def serve(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    cwd = os.path.realpath(args.cwd)
    host = Host(
        cwd,
        clean=args.clean,
        startup_timeout=args.startup_timeout,
        max_output=args.max_output,
        sandbox=_sandbox(args, cwd),
        exports=args.exports,
    )
    try:
        try:
            line = await _start_watching(host, reader)
        except SandboxUnavailable as exc:  # nothing runs unconfined unless the settings say so
            host.error("SANDBOX_UNAVAILABLE", exc.message)
            print(f"oh engine: {exc.message}", file=sys.stderr, flush=True)
            return 3
        while True:
            line = line if line is not None else await reader.readline()
            if not line or _closing(line):
                break
            if not line.strip():
                line = None
                continue
            if not await host.handle(line):
                break
            line = None
    finally:
        await host.close()
        host.emit({"type": "closed"})
    return 0


async def _start_watching(host: Host, reader: asyncio.StreamReader) -> bytes | None:
    """Start the shell while reading stdin: the extension closes a host whose shell it no longer wants (the
    window closed, a reset) and SIGKILLs it 3 s later. Unread during a slow rc, that close would come too late
    and the SIGKILL would leave the half-started shell's rc traps unrun (in the sandbox, bubblewrap dies with
    the host). So EOF or a close ends the starting shell at once; any other line waits for the shell and is
    returned to be handled first. None: no line came while it started."""
    starting = asyncio.ensure_future(host.start_shell())
    first = asyncio.ensure_future(reader.readline())
    await asyncio.wait({starting, first}, return_when=asyncio.FIRST_COMPLETED)
    if not starting.done() and _closing(first.result()):
        starting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await starting  # start_shell hangs the shell up before it re-raises
        return first.result()
    try:
        await starting
    except BaseException:
        first.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await first
        raise
    if not first.done():
        # Nothing was read: a readline() cancelled before a whole line keeps the reader's buffer. Awaited, so
        # no second reader waits beside it, and a line that came meanwhile is still returned, not lost.
        first.cancel()
        try:
            return await first
        except asyncio.CancelledError:
            return None
    return first.result()


def _closing(line: bytes) -> bool:
    """EOF, or a close message: the host ends (other malformed lines get their error in ``handle``)."""
    if not line:
        return True
    with contextlib.suppress(ValueError):
        msg = json.loads(line)
        return isinstance(msg, dict) and msg.get("type") == "close"
    return False


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(serve(parse(argv)))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The host's flags, checked (argparse exits with the message on a bad one)."""
    p = argparse.ArgumentParser(
        prog="python -m oh.runtimes.local.enginehost",
        description="The agent's shell engine over JSON lines (docs/protocol.md §3.4.1).",
    )
    p.add_argument("--cwd", default=os.getcwd(), help="directory the shell starts in (default: the current one)")
    p.add_argument("--clean", action="store_true", help="the clean shell: bash without the user's rc files")
    p.add_argument(
        "--startup-timeout",
        type=float,
        default=STARTUP_TIMEOUT,
        help="seconds the user's rc files may take (default 5)",
    )
    p.add_argument(
        "--max-output", type=int, default=30000, help="characters of output per observation (head + tail kept)"
    )
    p.add_argument(
        "--sandbox-spec",
        default=None,
        help="the backend's resolved sandbox (JSON); then the other --sandbox* are ignored",
    )
    p.add_argument("--sandbox", choices=rules.LEVELS, default=None, help="default: $OH_SANDBOX, else workspace-write")
    p.add_argument(
        "--sandbox-network", choices=("on", "off"), default=None, help="default: $OH_SANDBOX_NETWORK, else off"
    )
    p.add_argument("--sandbox-fallback", choices=rules.FALLBACKS, default=None, help="where bubblewrap cannot run")
    p.add_argument("--sandbox-bwrap", default=None, help="the bubblewrap program (default: bwrap on PATH)")
    p.add_argument(
        "--sandbox-writable", default=None, help=f"{os.pathsep}-separated writable directories besides the workspace"
    )
    p.add_argument(
        "--exports", action="store_true", help="keep the shell's exports for `exports` requests (main shells)"
    )
    p.add_argument("--allow", action="append", default=[], help="another writable root (the backend's allowed roots)")
    p.add_argument("--hide", action="append", default=[], help="another directory to hide (oh's own directories)")
    args = p.parse_args(argv)
    if args.sandbox_spec is not None:
        try:
            rules.from_wire(json.loads(args.sandbox_spec))
        except ValueError as exc:  # SandboxError, JSONDecodeError
            p.error(f"--sandbox-spec: {exc}")
    if not os.path.isdir(args.cwd):
        p.error(f"--cwd {args.cwd}: no such directory")
    return args


if __name__ == "__main__":
    sys.exit(main())
