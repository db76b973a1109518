"""Fixtures shared by every suite: a scratch workspace and an OH_HOME that holds every file oh keeps."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

import leftovers

try:  # property tests: the same examples on every run unless asked otherwise (HYPOTHESIS_PROFILE=explore)
    from hypothesis import settings as _hypothesis

    _hypothesis.register_profile("ci", derandomize=True, database=None, print_blob=True)
    _hypothesis.register_profile("explore", derandomize=False)
    # A landing must not depend on the draw: a random example found once is a bug to fix and then a fixed case,
    # not a run that fails now and then (tests/protocol/test_hunks.py found one that way).
    _hypothesis.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # the test extra installs hypothesis
    pass


def _default_signal_dispositions() -> None:
    """The suite runs as if started from a terminal, whatever started it: an ignored SIGHUP (`nohup`), SIGINT or
    SIGQUIT (a background job of a non-interactive shell) is inherited by every `oh` a test starts, and oh honours
    it (a `nohup oh start` outlives its terminal) -- so the hang-up and Ctrl-C tests failed under `nohup .ci/run`."""
    for name in ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM"):  # (SIGPIPE: Python ignores it, subprocess restores it)
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)


_default_signal_dispositions()


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
    # History is on by default (issue 39); tests not about it run without it (its first snapshot is not on every
    # test's clock). Tests of history pass --history; tests of the default unset this.
    monkeypatch.setenv("OH_HISTORY", "false")


def pytest_sessionfinish(session, exitstatus) -> None:
    """No process a test started may outlive the run (issue 41). A backend left behind fails the run; other
    leftovers (a job's `sleep` in a killed shell) are listed. All of them are ended."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None or getattr(session.config, "workerinput", None) is not None:
        return
    basetemp = str(factory.getbasetemp())
    deadline = time.monotonic() + 10  # backends stopped by the last fixtures may still be exiting
    found = leftovers.scan(basetemp, os.getpid())
    while found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = leftovers.scan(basetemp, os.getpid())
    if not found:
        return
    leftovers.end(found)
    lines = "\n".join(f"  pid {pid}: {argv}" for pid, argv in found)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    backends = [f for f in found if "oh.backend" in f[1]]
    if reporter is not None:
        reporter.write_line(f"processes the tests left running (now killed):\n{lines}", red=bool(backends))
    if backends:
        session.exitstatus = 1
