"""Exit codes of every ``oh`` command (documented in `oh --help` and the README, "Exit codes").

Their one definition: ``oh.commands._common`` re-exports them; the fast path imports them from
here without loading typer. ``OhError`` carries one of them: services and commands raise it, and
``oh.cli.main`` alone prints it and exits with its code.
"""

from ..errors import CliError

OK = 0
ERROR = 1  # the operation failed (details on stderr)
USAGE = 2  # bad flags/arguments, bad setting, bad config file
NOT_RUNNING = 3  # no running backend (for the workspace / instance / at all)
AUTH = 4  # the backend refused the token
UNREACHABLE = 5  # the backend did not answer / the connection was lost
ACTION_FAILED = 6  # the action came back as an error observation (PATH_DENIED, TOOL_ERROR, BUSY, ...)
NO_EDITOR = (
    7  # runtime vscode: no editor connected (NO_EDITOR / EDITOR_DISCONNECTED); `oh vscode ...`: no editor CLI found
)
TIMEOUT = 124  # the action timed out (as timeout(1))
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)


class OhError(CliError):
    """A failure that knows its exit code and what to do next (``hint``). Raised where the failure is
    found; printed (``oh: <message>``, then the hint indented) and turned into the exit code once, in
    ``oh.cli.main``, never by exiting from deep inside."""

    def __init__(self, message: str, code: int = ERROR, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.hint = hint
