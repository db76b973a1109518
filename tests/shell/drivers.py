"""Runners of the battery (battery.py): one small driver per way of reaching the agent's shell.

A driver has ``async run(command, timeout, max_output) -> (output, code, restarted)``,
``async input(text, timeout)`` and ``async key(key, timeout)`` (same result), ``close()``.
``timeout`` None waits for the command to end (bounded by ``END_WAIT``); a number is a soft timeout.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path

END_WAIT = 60.0


async def run_battery(driver, shell: str, scratch: Path, cases: list[dict]) -> list[str]:
    """Every case of ``cases`` for ``shell``; returns the failures (empty = all conform)."""
    from .battery import check, shells_of
    from .home import HOOK_OUTPUTS

    failures: list[str] = []
    for n, case in enumerate(cases):
        if shell not in shells_of(case):
            continue
        d = scratch / f"case{n}"
        d.mkdir(parents=True)
        out, code, _ = await driver.run(f"cd -- {shlex.quote(str(d))}", None, None)
        if code != 0:
            failures.append(f"{case['name']}: could not cd to its directory ({code}, {out!r})")
            continue
        for i, step in enumerate(case["steps"]):
            if "run" in step:
                res = await driver.run(step["run"], step.get("timeout"), step.get("max_output"))
            elif "input" in step:
                res = await driver.input(step["input"], step.get("timeout"))
            else:
                res = await driver.key(step["key"], step.get("timeout"))
            problems = check(step, *res)
            # the fixture rc's banner and hooks print on every prompt: never into an output
            problems += [f"output holds the rc's {h!r}" for h in HOOK_OUTPUTS if h in res[0]]
            if problems:
                failures.append(f"{case['name']} (step {i + 1}): " + "; ".join(problems))
                break
    return failures


class HostDriver:
    """The engine host process (``python -m oh.runtimes.local.enginehost``) through its JSON lines."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.messages: asyncio.Queue = asyncio.Queue()
        self.ready: list[dict] = []
        self.view: list[str] = []
        self._ids = 0
        self._running: str | None = None
        self._reader: asyncio.Task | None = None

    @classmethod
    async def start(cls, cwd: str, env: dict[str, str], *args: str) -> "HostDriver":
        self = cls()
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "oh.runtimes.local.enginehost",
            "--cwd",
            cwd,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            limit=64 * 1024 * 1024,
        )
        self._reader = asyncio.ensure_future(self._read())
        await self.wait_for("ready")
        return self

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                await self.messages.put({"type": "eof"})
                return
            msg = json.loads(line)
            if msg["type"] == "data":
                self.view.append(msg["text"])
                continue
            if msg["type"] == "ready":
                self.ready.append(msg)
            await self.messages.put(msg)

    async def send(self, msg: dict) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        await self.proc.stdin.drain()

    async def wait_for(self, kind: str, timeout: float = END_WAIT, id_: str | None = None) -> dict | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            try:
                msg = await asyncio.wait_for(self.messages.get(), remaining)
            except asyncio.TimeoutError:
                return None
            if msg["type"] == "eof":
                raise AssertionError("the host exited")
            if msg["type"] == kind and (id_ is None or msg.get("id") == id_):
                return msg
            if msg["type"] == "error":
                raise AssertionError(f"host error: {msg}")

    async def _result(self, timeout: float | None) -> tuple[str, int | None, bool]:
        id_ = self._running
        done = await self.wait_for("done", END_WAIT if timeout is None else timeout, id_)
        if done is None:
            await self.send({"type": "peek", "id": id_})
            got = await self.wait_for("output", 10, id_)
            assert got is not None
            # the command may have ended between the timeout and the peek: its done is still queued
            return got["output"], -1, False
        self._running = None
        if done["shell_exited"]:
            await self.wait_for("ready")
        return done["output"], done["exit_code"], done["shell_exited"]

    async def run(self, command: str, timeout: float | None, max_output: int | None):
        if self._running is not None:  # a previous step left a command running: end it
            await self.send({"type": "kill"})
            await self.wait_for("done", END_WAIT, self._running)
            await self.wait_for("ready")
            self._running = None
        self._ids += 1
        self._running = f"c{self._ids}"
        msg = {"type": "run", "id": self._running, "command": command}
        if max_output:
            msg["max_output"] = max_output
        await self.send(msg)
        return await self._result(timeout)

    async def input(self, text: str, timeout: float | None):
        await self.send({"type": "input", "text": text + "\r", "hide_echo": True})
        return await self._result(timeout)

    async def key(self, key: str, timeout: float | None):
        await self.send({"type": "key", "key": key})
        return await self._result(timeout)

    async def close(self) -> None:
        if self.proc is None:
            return
        with __import__("contextlib").suppress(Exception):
            await self.send({"type": "close"})
        try:
            await asyncio.wait_for(self.proc.wait(), 15)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        if self._reader is not None:
            self._reader.cancel()


class ClientDriver:
    """An agent on a real backend (local runtime, or the VS Code runtime served by `oh attach`) through
    the Python client: the battery's steps as `run` actions."""

    def __init__(self, client) -> None:
        self.client = client

    @staticmethod
    def _result(obs) -> tuple[str, int | None, bool]:
        if obs.kind != "run":
            raise AssertionError(f"not a run observation: {obs.kind} {obs.content[:300]!r}")
        suffix = (obs.extras.get("metadata") or {}).get("suffix") or ""
        return obs.content, obs.exit_code, "The shell exited with code" in suffix

    async def run(self, command: str, timeout: float | None, max_output: int | None):
        extra = {"max_output": max_output} if max_output else {}
        if timeout is None:
            obs = await self.client.run(command, blocking=True, **extra)
        else:
            obs = await self.client.run(command, timeout=timeout, **extra)
        return self._result(obs)

    async def input(self, text: str, timeout: float | None):
        if timeout is None:
            return self._result(await self.client.run(text, is_input=True, blocking=True))
        return self._result(await self.client.run(text, is_input=True, timeout=timeout))

    async def key(self, key: str, timeout: float | None):
        return await self.input(key, timeout)

    async def close(self) -> None:
        await self.client.close()


def oh_env(home: Path, shell: str, oh_home: Path) -> dict[str, str]:
    """The environment of real `oh` processes for these tests: the fixture HOME and shell, a private OH_HOME."""
    from .home import shell_env

    env = {k: v for k, v in shell_env(home, shell).items() if not k.startswith("XDG_")}
    env = {
        k: v
        for k, v in env.items()
        if not (k.startswith("OH_") and k not in ("OH_USER_SHELL", "OH_SHELL_STARTUP_TIMEOUT"))
    }
    env.update(
        OH_HOME=str(oh_home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", PYTHONDONTWRITEBYTECODE="1"
    )
    return env


def oh(env: dict, cwd: Path, *args: str, timeout: float = 60):
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "oh", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
