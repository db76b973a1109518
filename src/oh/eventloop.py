"""Which event loop the long-running oh processes (backend, headless editor) run on.

uvloop (libuv, in C) is an optional fast path: ``pip install 'oh-editor-runtime[fast]'``. When it is
importable it is used; otherwise, or with ``OH_EVENT_LOOP=asyncio``, the stdlib loop runs, and
everything behaves the same (only slower): no feature depends on uvloop. Measured effect:
docs/benchmarks.md, "uvloop".
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")


def loop_name() -> str:
    """``"uvloop"`` when ``run`` would use it, else ``"asyncio"``."""
    if os.environ.get("OH_EVENT_LOOP", "").strip().lower() == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    if loop_name() == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)
