"""The ``local`` runtime: actions execute on this machine (no sandbox).

``run`` goes to a persistent bash per agent (shell.py, terminal.py); ``read``/``write`` to files.py;
``edit`` to editor.py (OHEditor semantics); every path is checked by paths.py first.
"""

from .runtime import LocalRuntime

__all__ = ["LocalRuntime"]
