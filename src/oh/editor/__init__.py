"""The headless reference editor: the protocol's conformance peer and the engine of `oh attach`.

It connects to ``/v1/editor``, registers for a workspace, and executes the actions it receives
with the local runtime's executors — exactly what the VS Code extension does with VS Code's APIs.
"""

from .peer import HeadlessEditor, run_editor

__all__ = ["HeadlessEditor", "run_editor"]
