"""The one bounded wait of the test suites: poll a condition until it holds, fail the test when the time is up.

Importable as ``waiting`` from every suite (tests/ is on sys.path through the rootdir conftest, as for
``reference_shapes``); each suite's helper (``wait_for``, ``wait_until``) only picks its defaults.
"""

from __future__ import annotations

import time
from typing import Any, Callable


def poll_until(cond: Callable[[], Any], timeout: float, what: str = "condition", interval: float = 0.05) -> Any:
    """Call ``cond`` until it returns something truthy, and return that; after ``timeout`` seconds fail."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)
