"""Background jobs of one agent shell: their records, states and full output (docs/protocol.md §3.8).

A job is a command started with ``run`` ``args.background: true``. It runs in its own extra shell
(started where the agent's main shell is) so the main shell stays free. Its whole output goes to a
spool file (0600, in a 0700 directory under the state dir) so ``job output`` can return any part of
it from an offset; the spool is bounded: past ``SPOOL_CAP`` bytes the oldest half is dropped and
offsets stay absolute (a read from a dropped offset says how much was lost).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: jobs.py stays a leaf module (the group and runtime import it)
    from .command import Command
    from .terminal import Terminal

SPOOL_CAP = 16 * 1024 * 1024  # bytes of output kept per job (the newest ones)
OUTPUT_LIMIT = 1024 * 1024  # default bytes per `job output` answer
OUTPUT_MAX = 16 * 1024 * 1024  # largest `limit` honoured
POLL_TAIL = 2000  # default bytes of output tail in `job poll`
WAIT_TAIL = 30000  # ... and in `job wait` (OpenHands' MAX_CMD_OUTPUT_SIZE)
CANCEL_GRACE = 2.0  # seconds between C-c and killing the job's process group
MAX_FINISHED = 200  # finished jobs kept per shell besides the retention time

RUNNING, SUCCEEDED, FAILED, CANCELLED, LOST = "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "LOST"


def env_fingerprint(env: dict[str, str] | None) -> str:
    """What de-duplication compares: a hash, so the values (secrets) are never kept in clear."""
    h = hashlib.sha256()
    for name in sorted(env or {}):
        h.update(name.encode() + b"\0" + (env or {})[name].encode("utf-8", "replace") + b"\0")
    return h.hexdigest()


def _char_start(data: bytes) -> int:
    """Bytes to skip so ``data`` starts on a UTF-8 character (not on a continuation byte)."""
    i = 0
    while i < len(data) and i < 4 and (data[i] & 0xC0) == 0x80:
        i += 1
    return i


def _complete_prefix(data: bytes) -> int:
    """Length of ``data`` without a UTF-8 sequence cut at its end."""
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if (b & 0xC0) == 0x80:
            continue
        need = 2 if (b & 0xE0) == 0xC0 else 3 if (b & 0xF0) == 0xE0 else 4 if (b & 0xF8) == 0xF0 else 1
        return len(data) - back if need > back else len(data)
    return len(data)


class Spool:
    """Append-only UTF-8 output of one job with absolute byte offsets; bounded by ``cap``."""

    def __init__(self, path: str, cap: int = SPOOL_CAP) -> None:
        self.path = path
        self.cap = max(cap, 4096)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self.base = 0  # absolute offset of the file's first byte (what was dropped before it)
        self.size = 0
        self.error: str | None = None

    @property
    def total(self) -> int:
        return self.base + self.size

    def write(self, text: str) -> None:
        if self.fd < 0 or not text:
            return
        data = text.encode("utf-8", "replace")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
            self.size += len(data)
            if self.size > self.cap:
                self._compact()
        except OSError as exc:  # a full disk must not break the shell's output handling
            self.error = f"output spool stopped: {exc.strerror or exc}"
            self.size = os.fstat(self.fd).st_size if self.fd >= 0 else self.size

    def _compact(self) -> None:
        keep = self.cap // 2
        data = os.pread(self.fd, keep, self.size - keep)
        data = data[_char_start(data) :]
        os.ftruncate(self.fd, 0)
        os.write(self.fd, data)
        self.base += self.size - len(data)
        self.size = len(data)

    def read(self, offset: int, limit: int) -> tuple[str, int, int]:
        """(text, start, next_offset) from absolute ``offset`` (moved up to what is still kept)."""
        start = max(offset, self.base)
        if self.fd < 0 or start >= self.total or limit <= 0:
            return "", min(start, self.total), min(start, self.total)
        data = os.pread(self.fd, min(limit, self.total - start), start - self.base)
        skip = _char_start(data)  # an offset inside a character (given by hand): start at the next one
        data = data[skip:]
        if start + skip + len(data) < self.total:  # cut by `limit`: never split a character
            data = data[: _complete_prefix(data)]
        return data.decode("utf-8", "replace"), start + skip, start + skip + len(data)

    def tail(self, nbytes: int) -> str:
        return self.read(max(self.total - nbytes, 0), nbytes)[0] if nbytes > 0 else ""

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def _iso(wall: float | None) -> str | None:
    return datetime.fromtimestamp(wall).isoformat(timespec="seconds") if wall else None


class Job:
    def __init__(
        self,
        job_id: str,
        shell: str,
        agent_id: str,
        command: str,
        cwd: str,
        env: dict[str, str] | None,
        spool: Spool,
        sandbox: str = "",
    ) -> None:
        """``sandbox``: "off" / "network" for a job the consent gate allowed to leave the sandbox / have the
        network (docs/protocol.md §3.18), "" for one in the agent's sandbox (or with no sandbox)."""
        self.job_id = job_id
        self.sandbox = sandbox
        self.shell = shell
        self.agent_id = agent_id
        self.command = command
        self.cwd = cwd
        self.env_names = sorted(env or {})
        # with the sandbox: an allowed request to leave never answers with a confined job of the same command
        self.fingerprint = (command, cwd, env_fingerprint(env), sandbox)
        self.spool = spool
        self.state = RUNNING
        self.exit_code: int | None = None
        self.pid = -1
        self.cancelled = False
        self.started_wall = time.time()
        self.started = time.monotonic()
        self.finished_at: float | None = None
        self.finished_wall: float | None = None
        self.done = asyncio.Event()
        self._grew = asyncio.Event()
        self.cmd: Command | None = None
        self.term: Terminal | None = None  # the Terminal it runs in

    # ---------------------------------------------------------------- output
    def on_output(self, text: str) -> None:
        self.spool.write(text)
        self._wake()

    def _wake(self) -> None:
        old, self._grew = self._grew, asyncio.Event()
        old.set()

    async def wait_output(self, offset: int, timeout: float) -> None:
        """Until there is output past ``offset``, the job ends, or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while self.state == RUNNING and self.spool.total <= offset:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._grew.wait(), remaining)

    def finish(self, state: str, exit_code: int | None) -> None:
        if self.state != RUNNING:
            return
        self.state = state
        self.exit_code = exit_code
        self.finished_at = time.monotonic()
        self.finished_wall = time.time()
        self.done.set()
        self._wake()

    # ---------------------------------------------------------------- views
    def record(self) -> dict[str, Any]:
        end = self.finished_at if self.finished_at is not None else time.monotonic()
        rec = {
            "job_id": self.job_id,
            "command": self.command,
            "cwd": self.cwd,
            "state": self.state,
            "exit_code": self.exit_code,
            "pid": self.pid,
            "background": True,
            "started_at": _iso(self.started_wall),
            "finished_at": _iso(self.finished_wall),
            "duration_s": round(end - self.started, 3),
            "output_bytes": self.spool.total,
            "env_names": self.env_names,
        }
        if self.sandbox:
            rec["sandbox"] = self.sandbox
        if self.spool.error:
            rec["warning"] = self.spool.error
        return rec

    def line(self) -> str:
        code = "" if self.exit_code is None else f" exit {self.exit_code}"
        where = {"off": "  (OUTSIDE the sandbox)", "network": "  (with the network)"}.get(self.sandbox, "")
        return f"{self.job_id}  {self.state}{code}  {self.record()['duration_s']:.0f}s{where}  {self.command[:120]}"
