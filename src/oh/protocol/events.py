"""OpenHands-shaped actions and observations (docs/protocol.md §3).

Pure: parsing, validation and construction only. The shapes are exactly what OpenHands 1.6's
``event_to_dict`` emits (see ../shared/reference/openhands-events.md) so that OpenHands' own
``event_from_dict`` accepts everything ``oh`` sends. Observation extras carry only the keys that
deserializer accepts: an extra key there would make OpenHands raise ``TypeError``.
"""

from __future__ import annotations

import json
import math

try:  # orjson: ~5x faster on the hot path, and strict (invalid UTF-8, NaN, lone surrogates refused)
    import orjson
except ImportError:  # pragma: no cover - it is a declared dependency; stdlib json still works
    orjson = None  # type: ignore[assignment]
from dataclasses import dataclass, field
from typing import Any, Callable, TypeGuard

from . import kinds, progress
from .argcheck import (  # noqa: F401 - re-exported: the argument rules' constants, where they always were
    EDIT_COMMANDS,
    JOB_ID,
    JOB_OPS,
    MAX_ENV_VARS,
    READ_ENCODINGS,
    WRITE_MODES,
    _require,
)
from .errors import ErrorId, ProtocolError
from .observation import observation

ACTION_KINDS = tuple(name for name in kinds.NAMES if name not in kinds.KNOWLEDGE)  # OpenHands' and oh's own
DEFAULT_MAX_OUTPUT = 30000  # characters, OpenHands' MAX_CMD_OUTPUT_SIZE
MAX_OUTPUT_CAP = 16 * 1024 * 1024  # max_output 0 still keeps memory bounded
# OpenHands V0 sends security_risk as an int enum; the SDK as a name.
_RISK_NAMES = {-1: "UNKNOWN", 0: "LOW", 1: "MEDIUM", 2: "HIGH"}
MAX_ID = 2**53 - 1  # ids survive a round trip through JavaScript numbers
# An action's ``timeout`` at most: a week. 1e308 s is finite but the deadline wheel's slot (time / tick)
# overflowed, the action never ended and its id stayed in flight forever (tests/security/test_sizes.py).
MAX_TIMEOUT = 7 * 24 * 3600.0


@dataclass(slots=True)
class Action:
    """A validated action. ``raw`` is the frame as received (forwarded as-is, id renumbered)."""

    id: int
    kind: str
    args: dict[str, Any]
    timeout: float | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    # Set only by the consent wrapper (never from a frame): an allow rule or the user already allowed this
    # change, so review mode writes it without a proposal (runtimes/consent.py, runtimes/local/runtime.py).
    consented: bool = False
    # Set only by the consent wrapper (never from a frame): it allowed this `run` to leave the sandbox
    # (runtimes/escalation.py); the local runtime runs a request to leave only when this is set.
    unsandboxed: bool = False
    # Set only by oh's own callers (never from a frame): this request to leave the sandbox is oh's (an `ensure`
    # install), not the agent's, so the consent gate refuses it at once when nobody can answer (security.md §10).
    own_request: bool = False
    # Set only by the backend (never from a frame): where this action's progress frames go when the agent asked
    # for them (protocol/progress.py, ``report(event, **fields)``); None when it did not.
    on_progress: Callable[..., None] | None = field(default=None, repr=False, compare=False)

    # Convenience accessors with the protocol defaults applied.
    @property
    def path(self) -> str:
        path: str = self.args.get("path", "")  # checked by argcheck: a string
        return path

    @property
    def command(self) -> str:
        command: str = self.args.get("command", "")  # checked by argcheck: a string
        return command

    @property
    def is_input(self) -> bool:
        return bool(self.args.get("is_input", False))

    @property
    def blocking(self) -> bool:
        return bool(self.args.get("blocking", False))

    @property
    def reset(self) -> bool:
        return bool(self.args.get("reset", False))

    @property
    def env(self) -> dict[str, str]:
        """Variables to export before a ``run`` (values are secrets: never log them)."""
        return self.args.get("env") or {}

    @property
    def max_output(self) -> int:
        """Characters of output kept per observation; 0 = no oh truncation (capped, see MAX_OUTPUT_CAP)."""
        v = self.args.get("max_output")
        return DEFAULT_MAX_OUTPUT if v is None else v

    @property
    def encoding(self) -> str | None:
        return self.args.get("encoding")

    @property
    def security_risk(self) -> str | None:
        """The agent's own risk label, normalised to a short upper-case name (never refused)."""
        return security_risk_of(self.raw)

    def with_id(self, new_id: int, **fields: Any) -> dict[str, Any]:
        """The raw frame with another id (and extra top-level fields): what the next leg receives."""
        frame = dict(self.raw)
        frame["id"] = new_id
        frame.update(fields)
        return frame


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def read_id(obj: Any) -> int | None:
    """The action id if one can be read, so even a refusal can carry ``cause``."""
    if isinstance(obj, dict):
        v = obj.get("id")
        if _is_int(v) and 0 <= v <= MAX_ID:
            return v
    return None


def decode_frame(data: str | bytes) -> dict[str, Any]:
    """Text frame -> JSON object, or ProtocolError(BAD_REQUEST)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        raise ProtocolError(ErrorId.BAD_REQUEST, "Binary frames are not accepted: send one JSON object per text frame.")
    try:
        obj = orjson.loads(data) if orjson is not None else json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(ErrorId.BAD_REQUEST, f"Frame is not valid JSON ({str(exc)[:120]}).") from None
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorId.BAD_REQUEST, f"Frame must be a JSON object, got {type(obj).__name__}.")
    return obj


def decode(data: str | bytes) -> Any:
    """Parse JSON without validation (peers reading frames they trust the shape of)."""
    return orjson.loads(data) if orjson is not None else json.loads(data)


def encode(obj: dict[str, Any]) -> bytes:
    """UTF-8 JSON bytes; send them as a *text* frame (``send(data, text=True)``)."""
    if orjson is not None:
        return orjson.dumps(obj)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def security_risk_of(obj: dict[str, Any]) -> str | None:
    """``security_risk`` as a short name (LOW, MEDIUM, HIGH, UNKNOWN, ...), or None when absent."""
    v = obj.get("security_risk")
    if v is None:
        return None
    if _is_int(v):
        return _RISK_NAMES.get(v, "UNKNOWN")
    if isinstance(v, str):
        name = "".join(ch for ch in v.strip().upper() if ch.isalnum() or ch == "_")[:16]
        return name or "UNKNOWN"
    return "UNKNOWN"


def parse_action(obj: Any) -> Action:
    """Validate an OpenHands action dict. Raises ProtocolError with a precise message."""
    cause, kind = _envelope(obj)
    args = obj.get("args", {})
    _require(isinstance(args, dict), "'args' must be a JSON object.", cause)
    if "progress" in obj:  # progress frames asked for (§3.16)
        refused = progress.check(obj["progress"])
        _require(refused is None, refused or "", cause)
    entry = kinds.TABLE[kind]
    if entry.knowledge:  # the editor-knowledge kinds (§3.6) check their args before the timeout
        entry.check(args, cause)
        return Action(id=cause, kind=kind, args=args, timeout=_timeout(obj.get("timeout"), cause), raw=obj)
    timeout = _timeout(obj.get("timeout"), cause)
    entry.check(args, cause)
    return Action(id=cause, kind=kind, args=args, timeout=timeout, raw=obj)


def _envelope(obj: Any) -> tuple[int, str]:
    """The checks every action passes first: a JSON object with an integer id and a known kind."""
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorId.BAD_REQUEST, f"An action must be a JSON object, got {type(obj).__name__}.")
    cause = read_id(obj)
    if "id" not in obj:
        raise ProtocolError(
            ErrorId.BAD_REQUEST, "Action has no 'id': every action needs an integer id (its observation's cause)."
        )
    if cause is None:
        raise ProtocolError(ErrorId.BAD_REQUEST, f"Action 'id' must be an integer between 0 and {MAX_ID}.", None)
    if "observation" in obj and "action" not in obj:
        raise ProtocolError(ErrorId.BAD_REQUEST, "This connection accepts actions, not observations.", cause)
    kind = obj.get("action")
    if not isinstance(kind, str):
        raise ProtocolError(
            ErrorId.BAD_REQUEST, "Action has no 'action' string (one of run, read, write, edit).", cause
        )
    if kind not in kinds.TABLE:
        raise ProtocolError(
            ErrorId.TOOL_UNSUPPORTED,
            f"Unknown action {kind[:40]!r}: the action kinds are {', '.join(kinds.NAMES)}.",
            cause,
        )
    return cause, kind


def _timeout(timeout: Any, cause: int | None) -> float | None:
    if timeout is None:
        return None
    _require(
        isinstance(timeout, (int, float))
        and not isinstance(timeout, bool)
        and math.isfinite(timeout)
        and 0 <= timeout <= MAX_TIMEOUT,
        f"'timeout' must be a number of seconds from 0 to {MAX_TIMEOUT:.0f} (0 = no timeout given).",
        cause,
    )
    # 0 means "no timeout given", as in the OpenHands SDK: the no-new-output rule applies.
    return float(timeout) if timeout > 0 else None


def parse_action_frame(data: str | bytes) -> Action:
    """Decode + validate in one step; the cause survives into the error when readable."""
    obj = decode_frame(data)
    return parse_action(obj)


# --------------------------------------------------------------------------- observations
# Builders return dicts without "id": the sender of each leg numbers its own observations.

_obs = observation  # the envelope (protocol/observation.py, shared with the knowledge kinds)


def run_observation(
    cause: int | None,
    command: str,
    content: str,
    exit_code: int,
    working_dir: str | None = None,
    *,
    pid: int = -1,
    suffix: str = "",
    prefix: str = "",
    hidden: bool = False,
    username: str | None = None,
    hostname: str | None = None,
    py_interpreter_path: str | None = None,
) -> dict[str, Any]:
    obs = _obs(
        "run",
        cause,
        content,
        f"Command `{command}` executed with exit code {exit_code}.",
        {
            "command": command,
            "metadata": {
                "exit_code": exit_code,
                "pid": pid,
                "username": username,
                "hostname": hostname,
                "working_dir": working_dir,
                "py_interpreter_path": py_interpreter_path,
                "prefix": prefix,
                "suffix": suffix,
            },
            "hidden": hidden,
        },
    )
    obs["success"] = exit_code == 0
    return obs


def read_observation(cause: int | None, path: str, content: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """``extra`` (e.g. ``encoding``/``mime_type`` of a base64 read) only when the agent asked for it:
    OpenHands' own deserializer refuses unknown extras keys."""
    return _obs(
        "read", cause, content, f"I read the file {path}.", {"path": path, "impl_source": "oh_aci", **(extra or {})}
    )


def write_observation(cause: int | None, path: str, content: str = "") -> dict[str, Any]:
    """``content``: a note for the agent (e.g. ``mode: create`` found the file already there)."""
    return _obs("write", cause, content, f"I wrote to the file {path}.", {"path": path})


def job_observation(cause: int | None, op: str, content: str, extras: dict[str, Any]) -> dict[str, Any]:
    """Our own kind (not OpenHands'): the answer to a ``job`` action (docs/protocol.md §3.8)."""
    return _obs("job", cause, content, f"Job {op}.", {"op": op, **extras})


def ensure_observation(cause: int | None, content: str, extras: dict[str, Any]) -> dict[str, Any]:
    """Our own kind: the answer to an ``ensure`` action (docs/protocol.md §3.14)."""
    return _obs("ensure", cause, content, "Workspace environment checked.", extras)


def branch_observation(cause: int | None, content: str, extras: dict[str, Any]) -> dict[str, Any]:
    """Our own kind, editor leg only: the answer to the backend's ``branch`` frame (docs/protocol.md
    §3.12). Agents never receive it: the backend turns it into a note on their first change."""
    return _obs("branch", cause, content, "Branch mode prepared the git branch.", extras)


def stat_observation(cause: int | None, path: str, content: str, info: dict[str, Any]) -> dict[str, Any]:
    """Our own kind: the answer to a ``stat`` action (docs/protocol.md §3.7)."""
    return _obs("stat", cause, content, f"I checked the path {path}.", {"path": path, **info})


def edit_observation(
    cause: int | None,
    path: str,
    content: str,
    *,
    prev_exist: bool,
    old_content: str | None,
    new_content: str | None,
    diff: str | None = None,
) -> dict[str, Any]:
    return _obs(
        "edit",
        cause,
        content,
        f"I edited the file {path}.",
        {
            "path": path,
            "prev_exist": prev_exist,
            "old_content": old_content,
            "new_content": new_content,
            "impl_source": "oh_aci",
            "diff": diff,
            "_diff_cache": None,
        },
    )


def error_observation(cause: int | None, error_id: ErrorId | str, message: str) -> dict[str, Any]:
    return _obs("error", cause, message, message, {"error_id": str(ErrorId(error_id))})


def error_from(exc: ProtocolError) -> dict[str, Any]:
    return error_observation(exc.cause, exc.error_id, exc.message)


# --------------------------------------------------------------------------- reading observations

# Every action kind's own, error, and the editor leg's answer to the backend's `branch` frame.
OBSERVATION_KINDS = (*kinds.NAMES, "error", "branch")


def parse_observation(obj: Any) -> dict[str, Any]:
    """Validate an observation from an editor leg (shape only; contents are the editor's)."""
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorId.BAD_REQUEST, "An observation must be a JSON object.")
    kind = obj.get("observation")
    if kind not in OBSERVATION_KINDS:
        raise ProtocolError(ErrorId.BAD_REQUEST, f"Unknown observation {str(kind)[:40]!r}.")
    cause = obj.get("cause")
    if not _is_int(cause):
        raise ProtocolError(ErrorId.BAD_REQUEST, "Observation 'cause' must be the integer id of its action.")
    if not isinstance(obj.get("content", ""), str):
        raise ProtocolError(ErrorId.BAD_REQUEST, "Observation 'content' must be a string.", cause)
    extras = obj.get("extras", {})
    if not isinstance(extras, dict):
        raise ProtocolError(ErrorId.BAD_REQUEST, "Observation 'extras' must be an object.", cause)
    entry = kinds.TABLE.get(kind)
    required = entry.observation_extras if entry is not None else ()
    for key in required:
        if key not in extras:
            raise ProtocolError(ErrorId.BAD_REQUEST, f"Observation {kind!r} lacks extras.{key}.", cause)
    if kind == "run":
        md = extras.get("metadata")
        if not isinstance(md, dict) or not _is_int(md.get("exit_code")):
            raise ProtocolError(ErrorId.BAD_REQUEST, "Observation 'run' needs extras.metadata.exit_code (int).", cause)
    return obj


def exit_code_of(obs: dict[str, Any]) -> int | None:
    if obs.get("observation") != "run":
        return None
    md = obs.get("extras", {}).get("metadata") or {}
    code = md.get("exit_code")
    return code if _is_int(code) else None


def outcome_of(obs: dict[str, Any]) -> str:
    """'ok' or the error id: what the live view and the trace show."""
    if obs.get("observation") == "error":
        return str(obs.get("extras", {}).get("error_id") or "ERROR")
    return "ok"


WAIT_SUMMARY = kinds.WAIT_SUMMARY
PATH_SUMMARY_LIMIT = 300
# What the backend keeps of a command for the live view, `oh status` and the trace: the live view cuts it to
# the terminal's width (a 200-column terminal shows 200, not 80: issue 30 item 13).
COMMAND_SUMMARY_LIMIT = 300


def summarize(action: Action, limit: int = 80) -> str:
    """One line for humans: the command, or the kind and path. Never the file contents."""
    entry = kinds.TABLE.get(action.kind)
    text = " ".join((entry.summary(action.args) if entry is not None else action.kind).split())
    if entry is not None and entry.path_summary:
        # A path: the live view shows it relative to the workspace and cuts it from the left, so the
        # file name stays; here only an absurdly long one is cut, also from the left.
        limit = max(limit, PATH_SUMMARY_LIMIT)
        return text if len(text) <= limit else "…" + text[-(limit - 1) :]
    return text if len(text) <= limit else text[: limit - 1] + "…"
