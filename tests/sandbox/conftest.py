"""The ``oh`` fixture of the sandbox tests: real `oh` processes in a scratch HOME (tests/sandbox/helpers.py), every
backend they started stopped at teardown."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import Oh


@pytest.fixture
def oh(tmp_path: Path):
    runner = Oh(tmp_path)
    yield runner
    runner.stop()
