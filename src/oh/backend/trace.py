"""The JSONL trace of one backend instance: one owner, append-only, rotated by size.

Records hold what happened (kind, summary, outcome, exit code, duration), never file contents and
never the token. A trace that cannot be written (read-only or full disk) must not stop the backend:
it warns once and keeps serving.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

from ..config.paths import ensure_private_dir, open_private_append
from ..protocol.events import encode

log = logging.getLogger("oh.backend.trace")


class TraceWriter:
    def __init__(self, path: Path | None, max_bytes: int = 10 * 1024 * 1024, keep: int = 3) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.keep = keep
        self.warning: str | None = None
        self._file: BinaryIO | None = None
        self._size = 0
        self._buffer: list[bytes] = []  # encoded lines: bytes to the file, no text layer (one less copy per record)
        self._sec, self._sec_text = -1, ""  # the current second, formatted (_now)

    def open(self) -> None:
        if self.path is None:
            return
        try:
            ensure_private_dir(self.path.parent)
            fd = open_private_append(self.path)
            self._file = f = os.fdopen(fd, "ab")
            self._size = f.tell()
        except OSError as exc:
            self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        if self.warning is None:
            self.warning = f"trace disabled: cannot write {self.path}: {exc.strerror or exc}"
            log.warning("%s; the backend keeps serving", self.warning)
        self._close_file()

    def _close_file(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:  # a full disk can fail the final flush too; the file is gone either way
                pass
        self._file = None

    def record(self, kind: str, **fields: Any) -> None:
        if self._file is None:
            return
        rec = {"t": self._now(), "kind": kind, **fields}
        self._buffer.append(encode(rec))
        if len(self._buffer) >= 256:
            self.flush()

    def _now(self) -> str:
        """``datetime.now(timezone.utc).isoformat(timespec="milliseconds")``, the same text, with
        the date and time formatted once per second: the datetime call was ~5 % of the backend's
        CPU under load (two records per action; docs/benchmarks.md)."""
        now = time.time()
        sec = int(now)
        if sec != self._sec:
            self._sec, self._sec_text = sec, datetime.fromtimestamp(sec, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{self._sec_text}.{int((now - sec) * 1000):03d}+00:00"

    def flush(self) -> None:
        if self._file is None or not self._buffer:
            self._buffer.clear()
            return
        self._buffer.append(b"")  # the join puts the last record's newline
        data = b"\n".join(self._buffer)
        self._buffer.clear()
        try:
            self._file.write(data)
            self._file.flush()
            self._size += len(data)
            if self._size >= self.max_bytes:
                self._rotate()
        except OSError as exc:
            self._fail(exc)

    def _rotate(self) -> None:
        assert self.path is not None and self._file is not None
        self._file.close()
        for i in range(self.keep - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{i}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{i + 1}"))
        os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
        fd = open_private_append(self.path)
        self._file = os.fdopen(fd, "ab")
        self._size = 0

    def close(self) -> None:
        self.flush()
        self._close_file()
