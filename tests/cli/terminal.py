"""A real pseudo-terminal running ``oh start``, read through a terminal emulator (pyte), so tests
assert what a user would see on screen, plus the raw bytes the terminal received."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pexpect
import pyte

from .conftest import pid_alive, wait_for

# Sequences an agent could use to take over the user's terminal; the live view itself never emits them.
HOSTILE = ("\x1b]0;", "\x1b]2;", "\x1b]8;", "\x1b[2J", "\x1b[3J", "\x1bc", "\u202e")


class Term:
    def __init__(
        self,
        oh,
        *args: str,
        cols: int = 80,
        rows: int = 24,
        env: dict | None = None,
        argv: list[str] | None = None,
    ) -> None:
        """``oh start ARGS`` on a pty; ``argv``: another Python program instead (the interpreter's arguments)."""
        full_env = dict(oh.env, COLUMNS=str(cols), LINES=str(rows), TERM="xterm-256color", **(env or {}))
        self.oh = oh
        self.child = pexpect.spawn(
            sys.executable,
            argv if argv is not None else ["-m", "oh", "start", *args],
            cwd=str(oh.workspace),
            env=full_env,
            dimensions=(rows, cols),
            encoding="utf-8",
            codec_errors="replace",
            timeout=20,
        )
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.Stream(self.screen)
        self.raw = ""
        self.eof = False

    def pump(self, seconds: float = 0.1) -> None:
        if self.eof:
            time.sleep(seconds)
            return
        try:
            data = self.child.read_nonblocking(65536, timeout=seconds)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:
            self.eof = True
            return
        self.raw += data
        self.stream.feed(data)

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def wait(self, predicate, timeout: float = 20, what: str = "the screen") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.text()):
                return
            self.pump(0.1)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{self.text()}")

    def see(self, needle: str, timeout: float = 20) -> None:
        self.wait(lambda text: needle in text, timeout, repr(needle))

    def session(self) -> dict:
        (sf,) = wait_for(
            lambda: sorted((self.oh.home / "sessions").glob("*.json")) if (self.oh.home / "sessions").is_dir() else [],
            15,
            what="session file",
        )
        info = json.loads(sf.read_text())
        self.oh.started.append(info)  # the fixture stops it if the test fails before the launcher does
        return info

    def finish(self, timeout: float = 30) -> int:
        """Read to EOF; the launcher's exit status."""
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            self.pump(0.2)
        self.child.close()
        return self.child.exitstatus if self.child.exitstatus is not None else 128 + (self.child.signalstatus or 0)

    def kill(self) -> None:
        try:
            if self.child.isalive():
                self.child.kill(9)
        except Exception:  # noqa: BLE001 - a test that reaped the child itself
            pass


def assert_backend_gone(oh, info: dict, timeout: float = 20) -> None:
    wait_for(lambda: not pid_alive(info["pid"]), timeout, what=f"backend pid {info['pid']} to exit")
    assert not (oh.home / "sessions" / f"{info['instance_id']}.json").exists()


def hostile_in(raw: str) -> list[str]:
    return [seq for seq in HOSTILE if seq in raw]


def no_code_env(tmp_path) -> dict:
    """PATH without any `code` (so hints and auto-open behave as on a machine without VS Code)."""
    return {"OH_CODE": str(tmp_path / "no-such-code-binary")}


def fake_code(tmp_path, extensions: list[str]) -> dict:
    bindir = tmp_path / "fakebin"
    bindir.mkdir(exist_ok=True)
    code = bindir / "code"
    listing = "\\n".join(extensions)
    code.write_text(f"#!/bin/sh\nif [ \"$1\" = --list-extensions ]; then printf '{listing}\\n'; fi\n")
    code.chmod(0o755)
    return {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}


def read_until(proc, predicate, limit: int = 200) -> list[str]:
    """Lines of a plain-mode `oh start` up to the first one ``predicate`` accepts (bounded: fails
    instead of looping when the process ends or never prints it; pytest-timeout bounds the wait)."""
    lines: list[str] = []
    for _ in range(limit):
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"oh start ended before the expected line; got: {lines}")
        lines.append(line)
        if predicate(line):
            return lines
    raise AssertionError(f"no expected line within {limit} lines: {lines}")


def ctrl_c(proc, timeout: float = 30) -> int:
    """Ctrl-C a foreground `oh start` (a Popen with pipes); its exit status once it ended (0: stopped cleanly)."""
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=timeout)
    return proc.returncode
