"""The content store of the timeline: one append-only pack file per workspace, never the user's ``.git``.

Each record is ``MAGIC | sha256 (32 bytes) | compressed length (8) | raw length (8) | zlib data``, so the
pack describes itself: opening it rebuilds the index by hopping over the records, and a record cut short
by a crash (the backend killed mid-append) is cut off. One file instead of a file per object: a first
snapshot of 100,000 small files is one sequential write, not 100,000 creations (docs/benchmarks.md).
Deduplicated by content: a file that did not change is never stored twice.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
import zlib

MAGIC = b"OHO1"
_HEAD = struct.Struct(">4s32sQQ")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ObjectStore:
    def __init__(self, path: str) -> None:
        self.path = path
        self.index: dict[str, tuple[int, int]] = {}  # hex digest -> (offset of the data, compressed length)
        self._lock = threading.Lock()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self._file = os.fdopen(fd, "r+b", buffering=0)
        self._end = self._load()

    def _load(self) -> int:
        f, offset = self._file, 0
        size = os.fstat(f.fileno()).st_size
        while offset + _HEAD.size <= size:
            f.seek(offset)
            magic, raw_digest, clen, _rlen = _HEAD.unpack(f.read(_HEAD.size))
            if magic != MAGIC or offset + _HEAD.size + clen > size:
                break
            self.index[raw_digest.hex()] = (offset + _HEAD.size, clen)
            offset += _HEAD.size + clen
        if offset != size:  # a torn record (crash mid-append) or garbage: cut it off
            f.truncate(offset)
        return offset

    def __contains__(self, key: str) -> bool:
        return key in self.index

    def put(self, data: bytes, key: str | None = None) -> str:
        key = key or digest(data)
        with self._lock:
            if key in self.index:
                return key
            # Level 1: most of the ratio of level 6 at a fraction of the time (the snapshot is on the clock).
            packed = zlib.compress(data, 1)
            self._file.seek(self._end)
            self._file.write(_HEAD.pack(MAGIC, bytes.fromhex(key), len(packed), len(data)) + packed)
            self.index[key] = (self._end + _HEAD.size, len(packed))
            self._end += _HEAD.size + len(packed)
        return key

    def get(self, key: str) -> bytes:
        with self._lock:
            offset, clen = self.index[key]
            self._file.seek(offset)
            packed = self._file.read(clen)
        return zlib.decompress(packed)

    def cost(self, key: str) -> int:
        """The bytes one object takes in the pack (0: not in it, e.g. a git blob's reference)."""
        found = self.index.get(key)
        return found[1] + _HEAD.size if found is not None else 0

    @property
    def size(self) -> int:
        return self._end

    def compact(self, keep: set[str]) -> None:
        """Garbage collection: rewrite the pack with only the objects in ``keep`` (atomic rename)."""
        tmp = self.path + ".gc"
        with self._lock:
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
                for key, (offset, clen) in self.index.items():
                    if key not in keep:
                        continue
                    self._file.seek(offset - _HEAD.size)
                    out.write(self._file.read(_HEAD.size + clen))
            os.replace(tmp, self.path)
            self._file.close()
            self._file = os.fdopen(os.open(self.path, os.O_RDWR), "r+b", buffering=0)
            self.index = {}
            self._end = self._load()

    def close(self) -> None:
        self._file.close()
