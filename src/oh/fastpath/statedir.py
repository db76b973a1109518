"""oh's state directory by the rule of config/paths.py (OH_HOME, else platformdirs' XDG rule on Linux), without
importing platformdirs: the fast path's discovery and the connect files (``<state dir>/connect.json``) both need it.
Stdlib only. tests/cli/test_fastpath.py checks it against ``config.paths.state_dir``.
"""

from __future__ import annotations

import os
import sys


def state_dir() -> str | None:
    """``paths.state_dir()`` for OH_HOME and Linux (platformdirs' XDG rule); None elsewhere."""
    home = os.environ.get("OH_HOME")
    if home:
        return os.path.join(os.getcwd(), os.path.expanduser(home))
    if not sys.platform.startswith("linux"):
        return None
    xdg = os.environ.get("XDG_STATE_HOME", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "oh")
    user_home = os.environ.get("HOME")
    if user_home is not None and not user_home.startswith("/"):
        return None  # platformdirs has a special rule for a relative HOME: let it decide
    return os.path.join(os.path.expanduser("~/.local/state"), "oh")
