"""The ``local`` runtime: actions execute on this machine (no sandbox).

``run`` goes to a persistent shell per agent: the user's bash/zsh on a pty (engine.py: init scripts
in shellinit/, the pure marker parser markers.py, the pty process ptyproc.py), driven by terminal.py;
``read``/``write`` to files.py; ``edit`` to editor.py (OHEditor semantics); every path is checked by paths.py first.
"""

from .runtime import LocalRuntime

__all__ = ["LocalRuntime"]
