"""A backend's settings (``BackendConfig``): what ``python -m oh.backend`` gets as flags from the
launcher. The backend reads no user settings itself (docs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..protocol.branch import Plan
from . import guard
from .flow import MAX_IN_FLIGHT, MAX_OUTPUT

MAX_FRAME = 128 * 1024 * 1024  # a 64 MiB file read, JSON-escaped, must fit
DEADLINE_GRACE = 5.0


@dataclass
class BackendConfig:
    workspace: str
    runtime: str = "local"  # "local" | "vscode"
    host: str = "127.0.0.1"
    port: int = 0
    instance_id: str = ""
    editor_timeout: float = 30.0
    action_timeout: float = 300.0  # deadline for an action without its own timeout
    trace_path: Path | None = None
    trace_max_bytes: int = 10 * 1024 * 1024
    allowed_roots: list[str] | None = None  # extra roots besides the workspace (`oh start --allow`)
    write_session: bool = True
    session_dir: Path | None = None
    max_frame: int = MAX_FRAME
    deadline_grace: float = DEADLINE_GRACE
    # Keepalive: a peer that stops reading (or freezes) is dropped after about interval + timeout,
    # which is what bounds a send to it (docs/reliability.md).
    ping_interval: float = 20.0
    ping_timeout: float = 20.0
    # A send to a peer that does not read is abandoned (and the peer dropped) after this long.
    send_timeout: float = 40.0
    # Jobs and repetition control (docs/protocol.md §3.8, §3.10): the settings' defaults; the launcher
    # passes the user's settings as flags (the backend reads no settings itself).
    max_shells: int = 8
    job_retention: float = 3600.0
    repeat_limit: int = 0
    repeat_action: str = "note"
    spool_dir: str | None = None  # background jobs' output (None: a private temporary directory)
    user_shell: bool | None = (
        None  # the local runtime's agent shell: the user's (True) or the clean one; None: its default
    )
    shell_startup_timeout: float | None = None
    # The agent shell's sandbox (README "Sandbox"): a protocol.sandbox.Spec, None = the runtime's default;
    # and oh's own directories, hidden in it.
    sandbox: Any = None
    sandbox_hidden: tuple[str, ...] = ()
    # Proposal mode (docs/protocol.md §3.11): write/edit wait for the user's decision, at most this long.
    review: bool = False
    # History (issue 29, docs/protocol.md §3.15): None = off; else the directory of this workspace's timeline.
    history_dir: str | None = None
    history_store_ignored: bool = False
    history_max_file: int = 64 * 1024 * 1024
    history_max_bytes: int = 1024 * 1024 * 1024  # the store's bound (history_max_mb, issue 39)
    review_timeout: float = 600.0
    # Pre-auth bounds (backend/guard.py): seconds to complete the upgrade, and the fd budget the
    # caps on connections that have not sent their request yet derive from (None: RLIMIT_NOFILE).
    open_timeout: float = guard.OPEN_TIMEOUT
    fd_budget: int | None = None
    # Git-branch mode (docs/protocol.md §3.12): None = off; else the user's choices (protocol.branch.Plan).
    branch: Plan | None = None
    # Consent (docs/protocol.md §3.13): None = ask for nothing; else the level and the user's rules.
    consent: Any = None  # protocol.consent.Policy
    approval_timeout: float = 600.0
    # The approvals page (issue 40, backend/approvalweb.py): served on its own loopback port (0: any free one)
    # whenever consent is on; the public origin of the user's tunnel, if any; a notifier's argv.
    approvals_port: int = 0
    approvals_origin: str | None = None
    approval_notify: tuple[str, ...] = ()
    # Workspace bootstrap (docs/protocol.md §3.14): run .oh/setup.sh (or .openhands/setup.sh) once, before the
    # first action.
    setup_script: bool = True
    # Per agent connection (backend/flow.py): actions in flight (more: BUSY), bytes of observations
    # not yet sent (more: its frames are not read until they drain).
    max_in_flight: int = MAX_IN_FLIGHT
    max_output: int = MAX_OUTPUT
    # The Unix-socket endpoint (issue 28, backend/listen.py): off in-process unless asked; `python -m oh.backend`
    # turns it on. None path: the workspace's default (<state dir>/sock/<hash>/oh.sock, or OH_SOCKET_DIR).
    unix_socket: bool = False
    unix_socket_path: str | None = None
    share_book: str | None = None  # issue 28: the shares on disk (backend/sharestore.py); None: memory only
