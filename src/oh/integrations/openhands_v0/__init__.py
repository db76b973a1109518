"""OpenHands V0 (openhands-ai 1.6.0) runtime that executes in VS Code (or locally) through oh.

Select it by dotted path in OpenHands' config, e.g. ``runtime = "oh.integrations.openhands_v0.VsCodeRuntime"``
(or pass the class to ``create_runtime``), with ``oh start --runtime vscode`` running for the workspace.
Needs Python >= 3.12 and ``pip install 'oh-editor-runtime[openhands-v0]'``.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm's import blocks offline without it

from ..extras import require_extra  # noqa: E402

with require_extra("oh.integrations.openhands_v0", "openhands-v0", "OpenHands V0 (openhands-ai 1.6.0)"):
    from .runtime import VsCodeRuntime  # noqa: E402

__all__ = ["VsCodeRuntime"]
