"""The one error taxonomy of the protocol (docs/protocol.md §3.3).

Pure: no I/O. Every failure that reaches an agent is an ``observation: "error"`` whose
``extras.error_id`` is one of these names.
"""

from __future__ import annotations

from enum import Enum

from ..errors import WireError


class ErrorId(str, Enum):
    BAD_REQUEST = "BAD_REQUEST"
    PATH_DENIED = "PATH_DENIED"
    TOOL_UNSUPPORTED = "TOOL_UNSUPPORTED"
    TOOL_ERROR = "TOOL_ERROR"
    TIMEOUT = "TIMEOUT"
    NO_EDITOR = "NO_EDITOR"
    EDITOR_DISCONNECTED = "EDITOR_DISCONNECTED"
    INTERRUPTED = "INTERRUPTED"
    UNTRUSTED_WORKSPACE = "UNTRUSTED_WORKSPACE"
    SERVER_ERROR = "SERVER_ERROR"
    BUSY = "BUSY"  # a new command while the shell still runs another (nothing was executed)
    NO_COMMAND = "NO_COMMAND"  # an empty command / is_input while nothing runs
    REPEATED = "REPEATED"  # repeat_action=skip: the same command too many times in a row (not executed)
    NO_JOB = "NO_JOB"  # a job op / job_id naming no job of this agent's shell (unknown or expired)
    BRANCH_FAILED = (
        "BRANCH_FAILED"  # branch mode could not put the workspace on its branch: the action was NOT executed
    )
    # the agent's shell cannot be sandboxed here and the settings refuse to run it unconfined (nothing ran)
    SANDBOX_UNAVAILABLE = "SANDBOX_UNAVAILABLE"
    REJECTED = (
        "REJECTED"  # review mode: the user rejected the proposed change (content: their reason); nothing was written
    )
    # issue 37: a write/edit of a file changed since this agent last read it (nothing was written; §3.18)
    STALE = "STALE"
    CLAIMED = "CLAIMED"  # issue 37: another agent claims the path (nothing was written; §3.18)

    def __str__(self) -> str:  # so f-strings show the bare name
        return self.value


class ProtocolError(WireError):
    """A frame or action that cannot be honoured; becomes one error observation.

    ``cause`` is the offending action's id when it could be read, so the agent can correlate.
    """

    def __init__(self, error_id: ErrorId, message: str, cause: int | None = None) -> None:
        super().__init__(message)
        self.error_id = ErrorId(error_id)
        self.message = message
        self.cause = cause


class ToolError(WireError):
    """An executor refused (file not found, old_str not unique, ...): TOOL_ERROR by default."""

    def __init__(self, message: str, error_id: ErrorId = ErrorId.TOOL_ERROR) -> None:
        super().__init__(message)
        self.error_id = ErrorId(error_id)
        self.message = message
