"""Control frames: editor registration, control requests, monitor events (docs/protocol.md §4-6).

Pure. Control frames carry a ``type`` key; OpenHands events carry ``action``/``observation``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .. import PROTOCOL_VERSION, __version__
from ..errors import WireError
from . import versions
from .errors import ErrorId, ProtocolError
from .kinds import KIND_CAPABILITIES
from .sandbox import ESCALATE_VALUES

# An editor advertises what it executes; the vscode runtime answers TOOL_UNSUPPORTED for the rest.
# binary: read encoding "binary" (protocol/binary.py). job / stat / write_modes: background jobs and file checks (§3.7).
# review: the editor turns write/edit into proposals the user accepts or rejects (§3.11).
# The protocol versions this backend speaks (docs/protocol.md §4, "Versions").
PROTOCOL_RANGE = (PROTOCOL_VERSION, PROTOCOL_VERSION)

KNOWN_CAPABILITIES = (
    *KIND_CAPABILITIES,  # the action kinds an editor executes (protocol/kinds.py)
    "binary",
    "write_modes",
    "branch",
    "review",
    "consent",
    "escalate",
)

# escalate: the editor runs a `run` the consent gate allowed to leave its sandbox (docs/protocol.md §3.17) when the
# action carries the backend's top-level ``escalation``; an editor without it gets such a run refused by the backend.
ESCALATE_CAPABILITY = "escalate"


class RegistrationError(WireError):
    """A refused editor registration. Besides BAD_REQUEST it has two codes of its own
    (PROTOCOL_MISMATCH, WRONG_SESSION) that never reach an agent, so they are not in ErrorId."""

    def __init__(self, error_id: str, message: str) -> None:
        super().__init__(message)
        self.error_id = str(error_id)
        self.message = message


@dataclass(slots=True)
class Registration:
    workspace_folders: list[str]
    editor_name: str
    editor_version: str
    editor_pid: int | None
    extension_version: str
    capabilities: list[str]
    protocol: int
    session: str | None
    extra: dict[str, Any] = field(default_factory=dict)
    # oh and this extension as a pair (protocol/versions.py): "warn" when they are different releases.
    version_check: versions.Verdict | None = None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.editor_name,
            "version": self.editor_version,
            "pid": self.editor_pid,
            "workspace_folders": list(self.workspace_folders),
            "extension_version": self.extension_version,
            "capabilities": list(self.capabilities),
        }
        if self.version_check is not None and self.version_check.status != "ok":
            out["version_check"] = self.version_check.describe()  # live view, `oh status`, `oh doctor`
        return out


def _short_str(v: Any, limit: int = 200) -> str:
    return v[:limit] if isinstance(v, str) else ""


def parse_registration(
    obj: dict[str, Any], instance_id: str, *, backend: tuple[str, tuple[int, int]] | None = None
) -> Registration:
    """An editor's first frame. Raises RegistrationError with the refusal's error id and reason.
    ``backend``: (oh version, protocol range) to judge the extension against; default this oh's."""
    if obj.get("type") != "register":
        raise RegistrationError("BAD_REQUEST", 'The first frame on /v1/editor must be {"type": "register", ...}.')
    proto = obj.get("protocol")
    if not isinstance(proto, int) or isinstance(proto, bool):
        raise RegistrationError("BAD_REQUEST", "register.protocol must be an integer.")
    ext_range = versions.peer_range(proto, obj.get("protocol_range"))
    if ext_range is None:
        raise RegistrationError("BAD_REQUEST", "register.protocol must be a positive integer.")
    oh_version, oh_range = backend or (__version__, PROTOCOL_RANGE)
    verdict = versions.check(oh_version, oh_range, _short_str(obj.get("extension_version"), 40), ext_range)
    if verdict.status == "refuse":
        raise RegistrationError("PROTOCOL_MISMATCH", f"{verdict.message} Fix: {verdict.fix}")
    folders = obj.get("workspace_folders")
    if not isinstance(folders, list) or not all(isinstance(f, str) and f for f in folders) or len(folders) > 256:
        raise RegistrationError("BAD_REQUEST", "register.workspace_folders must be a list of absolute paths.")
    relative = [f for f in folders if not os.path.isabs(f) or "\x00" in f]
    if relative:
        # A relative folder would be resolved against the backend's cwd, not the editor's.
        raise RegistrationError(
            "BAD_REQUEST", f"register.workspace_folders must be absolute paths (got {relative[0][:80]!r})."
        )
    session = obj.get("session")
    if session is not None and not isinstance(session, str):
        raise RegistrationError("BAD_REQUEST", "register.session must be a string or null.")
    if session is not None and session != instance_id:
        raise RegistrationError(
            "WRONG_SESSION",
            f"This backend is instance {instance_id}, not {session[:40]}: re-read the session files.",
        )
    raw = obj.get("editor")
    editor: dict[str, Any] = raw if isinstance(raw, dict) else {}
    pid = editor.get("pid")
    # No list = an older editor: the four OpenHands kinds only (knowledge kinds must be advertised).
    caps = obj.get("capabilities", ["run", "read", "write", "edit"])
    if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
        raise RegistrationError("BAD_REQUEST", "register.capabilities must be a list of strings.")
    return Registration(
        workspace_folders=folders,
        editor_name=_short_str(editor.get("name")) or "unknown editor",
        editor_version=_short_str(editor.get("version")),
        editor_pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        extension_version=_short_str(obj.get("extension_version")),
        capabilities=[c for c in caps if c in KNOWN_CAPABILITIES],
        protocol=verdict.protocol or proto,
        session=session,
        version_check=verdict,
    )


def registered(
    editor_id: str,
    instance_id: str,
    workspace: str,
    allowed_roots: list[str] | None = None,
    max_shells: int | None = None,
    job_retention: float | None = None,
    *,
    review: bool = False,
    review_timeout: float | None = None,
    version_check: versions.Verdict | None = None,
    user_shell: bool | None = None,
    shell_startup_timeout: float | None = None,
    sandbox: dict[str, Any] | None = None,
) -> dict[str, Any]:
    frame = {
        "type": "registered",
        "editor_id": editor_id,
        "instance_id": instance_id,
        "protocol": PROTOCOL_VERSION,
        "workspace": workspace,
    }
    # Versions on both sides (protocol/versions.py): the extension shows the backend's verdict when it is not "ok".
    frame["oh_version"] = __version__
    frame["protocol_range"] = list(PROTOCOL_RANGE)
    if version_check is not None and version_check.status != "ok":
        frame["version_check"] = version_check.describe()
    # The editor confines paths and run cwds to these (the backend's), not to its window's folders.
    frame["allowed_roots"] = list(allowed_roots) if allowed_roots else [workspace]
    if max_shells is not None:
        frame["max_shells"] = (
            max_shells  # an editor's limit on terminals per agent shell (§3.8), as the local runtime's
        )
    if job_retention is not None:
        frame["job_retention"] = job_retention  # how long the editor keeps finished jobs (§3.8)
    # Proposal mode (§3.11): write/edit become proposals; the editor answers each after the user decides,
    # or with TIMEOUT after review_timeout seconds.
    frame["review"] = bool(review)
    if review and review_timeout is not None:
        frame["review_timeout"] = review_timeout
    # The agent's shell (§3.4.1), when the backend's settings name it: the editor's shell engine follows them.
    if user_shell is not None:
        frame["user_shell"] = bool(user_shell)
    if shell_startup_timeout is not None:
        frame["shell_startup_timeout"] = shell_startup_timeout
    # The agent shell's sandbox (§3.17) as the backend's settings say: the editor's engine host follows it.
    if sandbox is not None:
        frame["sandbox"] = dict(sandbox)
    return frame


# ---------------------------------------------------------------------------- agents on the editor leg
SHELL_KEY = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_PRIVATE_KEY = re.compile(r"^a[0-9]+$")  # the backend's agent ids: a private shell's key


def check_shell_key(key: str) -> str | None:
    """Why ``X-OH-Shell: key`` is refused, or None. Keys shaped like agent ids are reserved for
    private shells, so a shared key can never name (and join) another agent's private shell."""
    if not SHELL_KEY.match(key):
        return "X-OH-Shell must be 1-64 characters from A-Z a-z 0-9 . _ -"
    if _PRIVATE_KEY.match(key):
        return "X-OH-Shell keys of the form a<number> are reserved for private shells; choose another key"
    return None


def agent_field(agent_id: str, name: str, workdir: str, shell: str) -> dict[str, str]:
    """The top-level ``agent`` object of every action sent to an editor."""
    return {"id": agent_id, "name": name, "workdir": workdir, "shell": shell}


def parse_agent_field(obj: dict[str, Any]) -> dict[str, str] | None:
    """An action's ``agent`` object as an editor reads it; None when absent or malformed (an old
    backend): the editor then uses one default shell and its workspace."""
    a = obj.get("agent")
    if not isinstance(a, dict):
        return None
    shell, workdir = a.get("shell"), a.get("workdir")
    if (
        not isinstance(shell, str)
        or not SHELL_KEY.match(shell)
        or not isinstance(workdir, str)
        or not workdir.startswith("/")
    ):
        return None
    raw_name, raw_id = a.get("name"), a.get("id")
    name = raw_name if isinstance(raw_name, str) else "agent"
    aid = raw_id if isinstance(raw_id, str) else shell
    return {"id": aid[:64], "name": name[:64], "workdir": workdir, "shell": shell}


def escalation_field(sandbox: str, reason: str) -> dict[str, str]:
    """The top-level ``escalation`` of a `run` the consent gate allowed to leave the editor's sandbox (§3.17):
    set only by the backend, from ``Action.unsandboxed`` (never copied from an agent's frame)."""
    return {"sandbox": sandbox, "reason": reason}


def parse_escalation(obj: dict[str, Any]) -> str | None:
    """What an editor may run a `run` with: "off" or "network" when the backend's ``escalation`` names the same
    request as ``args.sandbox``; None otherwise (then the run is not approved to leave and must not run)."""
    esc, args = obj.get("escalation"), obj.get("args")
    if not isinstance(esc, dict) or not isinstance(args, dict):
        return None
    wanted = esc.get("sandbox")
    return wanted if wanted in ESCALATE_VALUES and args.get("sandbox") == wanted else None


def agent_gone(shell: str) -> dict[str, Any]:
    """To editors: the agent owning this private shell disconnected; kill what runs there."""
    return {"type": "agent_gone", "shell": shell}


JOB_EVENTS = ("job_started", "job_finished")


def job_event(name: str, job: dict[str, Any]) -> dict[str, Any]:
    """Editor -> backend: one of its jobs started or finished (the backend tells monitors)."""
    return {"type": "job_event", "event": name, "job": job}


def parse_job_event(obj: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A ``job_event`` frame's (event, job record), or None when malformed (then it is ignored)."""
    name, job = obj.get("event"), obj.get("job")
    if name not in JOB_EVENTS or not isinstance(job, dict) or not isinstance(job.get("job_id"), str):
        return None
    return name, job


PROPOSAL_EVENTS = ("proposal_opened", "proposal_closed")


def parse_proposal_event(obj: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """An editor's ``{"type": "proposal_event", "event", "proposal": {cause, path, kind, decision?}}``
    (§3.11): relayed to monitors so the live view shows what awaits review. None when malformed."""
    name, prop = obj.get("event"), obj.get("proposal")
    if name not in PROPOSAL_EVENTS or not isinstance(prop, dict):
        return None
    cause = prop.get("cause")
    if not isinstance(cause, int) or isinstance(cause, bool):
        return None
    fields = {"action_id": cause, "path": _short_str(prop.get("path"), 400), "kind": _short_str(prop.get("kind"), 20)}
    if name == "proposal_closed":
        fields["decision"] = _short_str(prop.get("decision"), 20) or "closed"
    return name, fields


def approval_request(row: dict[str, Any]) -> dict[str, Any]:
    """To an editor with the ``consent`` capability: an action waits for the user (docs/protocol.md §3.13)."""
    return {"type": "approval_request", "approval": row}


def approval_closed(approval_id: str, decision: Any, by: Any) -> dict[str, Any]:
    """To the same editors: someone (an answer, a rule, the timeout) decided that approval."""
    return {"type": "approval_closed", "id": approval_id, "decision": decision, "by": by}


def approvals_answer(op: str, **fields: Any) -> dict[str, Any]:
    """The answer to an ``approvals`` control request (``list``: the waiting rows; allow/reject: ``results``)."""
    return {"type": "approvals", "op": op, **fields}


def refusal(error_id: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error_id": error_id, "message": message}


def cancel(action_id: int) -> dict[str, Any]:
    return {"type": "cancel", "id": action_id}


def event(name: str, /, **fields: Any) -> dict[str, Any]:
    return {"type": "event", "event": name, "time": datetime.now(timezone.utc).isoformat(), **fields}


CONTROL_TYPES = ("rotate_token", "shutdown", "status", "review", "approvals", "history", "share", "claims")


def parse_control(obj: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    kind = obj.get("type")
    if kind not in CONTROL_TYPES:
        raise ProtocolError(
            ErrorId.BAD_REQUEST, f"Unknown control request {str(kind)[:40]!r}: one of {', '.join(CONTROL_TYPES)}."
        )
    if kind == "rotate_token":
        tok = obj.get("token")
        if not isinstance(tok, str) or len(tok) < 16 or len(tok) > 512 or not tok.isprintable() or " " in tok:
            raise ProtocolError(
                ErrorId.BAD_REQUEST, "rotate_token needs 'token': 16-512 printable characters without spaces."
            )
    return kind, obj
