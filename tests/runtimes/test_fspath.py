"""oh.runtimes.fspath.realpath gives exactly os.path.realpath's answer (it is the allowed-roots check's
input), for every kind of path the check sees, without opening anything for I/O."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from oh.runtimes import fspath


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "ws" / "sub").mkdir(parents=True)
    (root / "outside").mkdir()
    (root / "ws" / "sub" / "f.txt").write_text("x")
    (root / "outside" / "secret.txt").write_text("s")
    os.symlink(root / "outside" / "secret.txt", root / "ws" / "link-out")
    os.symlink(root / "outside", root / "ws" / "dir-out")
    os.symlink("sub/f.txt", root / "ws" / "rel-link")
    os.symlink(root / "ws" / "nothing-here", root / "ws" / "dangling")
    os.symlink("loop-b", root / "ws" / "loop-a")
    os.symlink("loop-a", root / "ws" / "loop-b")
    os.mkfifo(root / "ws" / "fifo")
    return root


CASES = [
    "ws/sub/f.txt",
    "ws/sub/../sub/f.txt",
    "ws/link-out",
    "ws/dir-out/secret.txt",
    "ws/dir-out/../ws/sub",
    "ws/rel-link",
    "ws/dangling",
    "ws/loop-a",
    "ws/fifo",
    "ws/sub/",
    "ws/sub/f.txt/",
    "ws/new-file.txt",
    "ws/new-dir/new-file.txt",
    "ws/dir-out/new.txt",
    "ws//sub///f.txt",
    "ws/./sub/.",
]


@pytest.mark.parametrize("rel", CASES)
def test_same_answer_as_os_realpath(tree: Path, rel: str) -> None:
    path = f"{tree}/{rel}"
    assert fspath.realpath(path) == os.path.realpath(path)


def test_relative_paths_and_odd_input(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree / "ws")
    for p in ("sub/f.txt", "link-out", ".", "", "nope/x"):
        assert fspath.realpath(p) == os.path.realpath(p), p
    with pytest.raises(ValueError):
        os.path.realpath("a\x00b")  # what realpath itself does with a NUL byte...
    with pytest.raises(ValueError):
        fspath.realpath("a\x00b")  # ...and the same here: never a silent answer


def test_a_fifo_is_not_opened_for_reading(tree: Path) -> None:
    # Opening a FIFO for reading blocks until a writer comes; O_PATH must not. Bounded by a thread join.
    done = threading.Event()
    threading.Thread(target=lambda: (fspath.realpath(str(tree / "ws" / "fifo")), done.set()), daemon=True).start()
    assert done.wait(10), "resolving a FIFO blocked"


def test_no_descriptor_leaks(tree: Path) -> None:
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    for _ in range(200):
        fspath.realpath(str(tree / "ws" / "sub" / "f.txt"))
    after = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    assert after == before
