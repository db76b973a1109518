"""Fixtures for agents elsewhere (issue 28): a real backend (`oh start --detach`) whose Unix socket lives in a
short private directory (sun_path is 108 bytes: pytest's tmp paths can be longer), and shares made with the
real `oh share`."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from cli.conftest import Oh


class RemoteOh(Oh):
    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.sock_dir = Path(tempfile.mkdtemp(prefix="ohs", dir="/tmp"))
        self.env.update(OH_SOCKET_DIR=str(self.sock_dir), OH_USER_SHELL="0")

    def share(self, *args: str, cwd: Path | None = None) -> dict:
        proc = self("share", "--json", *args, cwd=cwd)
        assert proc.returncode == 0, f"oh share failed ({proc.returncode}): {proc.stderr}"
        return json.loads(proc.stdout)

    def agent_env(self, made: dict, **extra: str) -> dict:
        """The environment of an agent that has only what `oh share` gave it: no OH_HOME, no session files."""
        env = {k: v for k, v in self.env.items() if not k.startswith("OH_")}
        env.update(made["env"], OH_USER_SHELL="0", OH_HOME=str(self.tmp / "agent-home"), **extra)
        return env

    def cleanup(self) -> None:
        super().cleanup()
        shutil.rmtree(self.sock_dir, ignore_errors=True)


@pytest.fixture
def roh(tmp_path: Path):
    runner = RemoteOh(tmp_path)
    yield runner
    runner.cleanup()


@pytest.fixture
def backend(roh: RemoteOh) -> dict:
    info = roh.start()
    info["session"] = roh.session(info["instance_id"])
    return info


@pytest.fixture(scope="module")
def mroh(tmp_path_factory):
    """One backend for a module's tests that do not change it (each makes its own shares): `oh start` is the
    slow part of these tests."""
    runner = RemoteOh(tmp_path_factory.mktemp("remote"))
    info = runner.start()
    runner.info = info
    runner.session_data = runner.session(info["instance_id"])
    yield runner
    runner.cleanup()
