"""oh: run a coding agent's actions inside your editor, or locally, and watch them live."""

__version__ = "0.1.0"
# Wire protocol version; both the backend and every editor/agent peer announce it.
PROTOCOL_VERSION = 1
