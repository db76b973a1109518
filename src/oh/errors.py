"""The one root of the exceptions oh raises on purpose, and its subtrees (docs/architecture.md "Errors").

    OhBaseError
    ├── WireError    a frame, an action or its arguments refused by the protocol: it becomes an error
    │                observation or a refusal frame (ProtocolError, ToolError, RegistrationError, ...)
    ├── CliError     a failure the CLI prints with its exit code and hint (OhError, SettingError, UnsafePath, ...)
    └── ClientError  talking to a backend as a client failed (OhClientError, WsError, BackendUnreachable, ...)

A class that also was a ValueError stays one (``except ValueError`` keeps its meaning). The bottom layer:
stdlib only and free of imports, so the fast path and the pure protocol may use it.
"""

from __future__ import annotations


class OhBaseError(Exception):
    """Every exception oh defines derives from this one (a test checks it)."""


class WireError(OhBaseError):
    """Refused by the protocol: the peer gets an error observation or a refusal frame, never a crash."""


class CliError(OhBaseError):
    """The CLI prints it (message, exit code, hint) and exits; nothing else should catch it."""


class ClientError(OhBaseError):
    """A client (Python API, CLI verbs, MCP, launcher) could not talk to a backend as asked."""
