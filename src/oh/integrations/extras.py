"""The agent frameworks are optional extras: importing an integration without its extra says which one."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def require_extra(module: str, extra: str, what: str) -> Iterator[None]:
    """Turn a missing ``openhands`` package into an ImportError naming the pip extra to install (a bare
    ModuleNotFoundError said neither); any other missing module is re-raised as it is (a real bug)."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if not (exc.name or "").split(".")[0] == "openhands":
            raise
        python = "" if sys.version_info >= (3, 12) else f"; it needs Python 3.12+ (this is {sys.version.split()[0]})"
        raise ImportError(
            f"{module} needs {what}, an optional extra of oh: from a clone pip install -e '.[{extra}]', "
            f"from a wheel pip install 'oh_editor_runtime-<version>-py3-none-any.whl[{extra}]'{python}",
            name=exc.name,
        ) from exc
