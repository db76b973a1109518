"""In-process command tests: the environment of the ``oh`` fixture (OH_HOME, HOME, XDG dirs, a keyring
that refuses, cwd = the workspace) applied to this test process, so a command's ``run_*`` function can
be called directly with ``Streams.buffers()`` (oh.commands._io) instead of through a real ``oh``
process. Backends are still real: ``oh.start(...)`` runs ``oh start --detach`` on an ephemeral port.
"""

from __future__ import annotations

import os

import pytest

from oh.commands._io import Streams, call

ISOLATED = ("OH_HOME", "HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "PYTHON_KEYRING_BACKEND")


@pytest.fixture
def here(oh, monkeypatch):
    """The ``oh`` fixture, with this process living in its environment for the test."""
    for key in list(os.environ):
        if key.startswith(("OH_", "XDG_")) or key in ("VISUAL", "EDITOR"):
            monkeypatch.delenv(key)
    for key in ISOLATED:
        monkeypatch.setenv(key, oh.env[key])
    monkeypatch.chdir(oh.workspace)
    import keyring
    from keyring.backends import fail

    saved = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())  # as PYTHON_KEYRING_BACKEND does for a real `oh`: the 0600 file fallback
    try:
        yield oh
    finally:
        keyring.set_keyring(saved)


class Result:
    """What one in-process command did: its exit code and its two output streams."""

    def __init__(self, code: int, streams: Streams) -> None:
        self.code = code
        self.out = streams.out.getvalue()
        self.err = streams.err.getvalue()

    def __repr__(self) -> str:
        return f"Result(code={self.code}, out={self.out!r}, err={self.err!r})"


def invoke(run, stdin: str = "", **options) -> Result:
    """Call a command's ``run_*`` function with in-memory streams, failures mapped as ``oh`` maps them."""
    streams = Streams.buffers(stdin)
    return Result(call(run, streams, **options), streams)
