"""A backend's settings (``BackendConfig``): defined once in ``protocol/backendconfig.py`` (the launcher resolves
them and sends them as JSON on the backend's private stdin); re-exported here for the backend's modules.
The backend reads no user settings itself (docs/architecture.md)."""

from __future__ import annotations

from ..protocol.backendconfig import DEADLINE_GRACE, MAX_FRAME, BackendConfig

__all__ = ["DEADLINE_GRACE", "MAX_FRAME", "BackendConfig"]
