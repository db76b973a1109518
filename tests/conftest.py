"""Fixtures shared by every suite: a scratch workspace and an OH_HOME that holds every file oh keeps."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def oh_home(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("OH_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def _clean_agent_shell(monkeypatch) -> None:
    """The local runtime's agent shell is the user's own shell with their rc files (docs/protocol.md
    §3.4.1); tests must not depend on the HOME they run under, so they get the clean shell unless they
    build a HOME of their own and set OH_USER_SHELL=1 (tests/shell/)."""
    monkeypatch.setenv("OH_USER_SHELL", "0")
