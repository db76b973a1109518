"""Fixtures for history and undo: a workspace timeline driven by real bash, and real backends."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cli.conftest import Oh  # noqa: F401 - the shared launcher fixture's class
from oh.history.timeline import Timeline


def bash(cwd: Path, script: str) -> None:
    done = subprocess.run(["bash", "-c", "set -e\n" + script], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"bash failed: {done.stderr}"


def tree(root: Path) -> dict[str, tuple]:
    """Every file and symlink under ``root`` (no .git inside): kind, permission bits, content or target."""
    out: dict[str, tuple] = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".git"]
        for name in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if os.path.islink(p):
                out[rel] = ("l", os.readlink(p))
            else:
                out[rel] = ("f", oct(st.st_mode & 0o7777), Path(p).read_bytes())
    return out


@pytest.fixture
def timeline(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    made: list[Timeline] = []

    def make(**kw) -> Timeline:
        tl = Timeline(str(ws), str(tmp_path / "state"), **kw)
        tl.snapshot()
        made.append(tl)
        return tl

    make.ws = ws  # type: ignore[attr-defined]
    yield make
    for tl in made:
        try:
            tl.close()
        except OSError:
            pass


@pytest.fixture
def oh(tmp_path: Path):
    from cli.conftest import Oh

    runner = Oh(tmp_path)
    yield runner
    runner.cleanup()
