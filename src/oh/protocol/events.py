"""OpenHands-shaped actions and observations (docs/protocol.md §3).

Pure: parsing, validation and construction only. The shapes are exactly what OpenHands 1.6's
``event_to_dict`` emits (see ../shared/reference/openhands-events.md) so that OpenHands' own
``event_from_dict`` accepts everything ``oh`` sends. Observation extras carry only the keys that
deserializer accepts: an extra key there would make OpenHands raise ``TypeError``.
"""

from __future__ import annotations

import codecs
import json
import math
import re

try:  # orjson: ~5x faster on the hot path, and strict (invalid UTF-8, NaN, lone surrogates refused)
    import orjson
except ImportError:  # pragma: no cover - it is a declared dependency; stdlib json still works
    orjson = None  # type: ignore[assignment]
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from . import sandbox as sandbox_rules
from .errors import ErrorId, ProtocolError
from .ensure import check_ensure_args
from .knowledge import KNOWLEDGE_KINDS, check_knowledge_args, summarize_knowledge
from .observation import observation

ACTION_KINDS = ("run", "read", "write", "edit", "job", "stat", "ensure")
JOB_OPS = ("list", "poll", "wait", "output", "cancel")
WRITE_MODES = ("overwrite", "create", "append")
JOB_ID = re.compile(r"^[A-Za-z0-9._-]{1,80}$")
DEFAULT_MAX_OUTPUT = 30000  # characters, OpenHands' MAX_CMD_OUTPUT_SIZE
MAX_OUTPUT_CAP = 16 * 1024 * 1024  # max_output 0 still keeps memory bounded
READ_ENCODINGS = ("auto", "base64", "binary")  # binary: one binary frame (protocol/binary.py)
MAX_ENV_VARS = 256
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# OpenHands V0 sends security_risk as an int enum; the SDK as a name.
_RISK_NAMES = {-1: "UNKNOWN", 0: "LOW", 1: "MEDIUM", 2: "HIGH"}
EDIT_COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")
MAX_ID = 2**53 - 1  # ids survive a round trip through JavaScript numbers


@dataclass(slots=True)
class Action:
    """A validated action. ``raw`` is the frame as received (forwarded as-is, id renumbered)."""

    id: int
    kind: str
    args: dict[str, Any]
    timeout: float | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    # Convenience accessors with the protocol defaults applied.
    @property
    def path(self) -> str:
        return self.args.get("path", "")

    @property
    def command(self) -> str:
        return self.args.get("command", "")

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


def _require(cond: bool, msg: str, cause: int | None) -> None:
    if not cond:
        raise ProtocolError(ErrorId.BAD_REQUEST, msg, cause)


def _opt_type(args: dict, key: str, types: tuple, what: str, cause: int | None, *, nullable: bool = True) -> None:
    if key not in args:
        return
    v = args[key]
    if v is None and nullable:
        return
    ok = isinstance(v, types) and not (isinstance(v, bool) and bool not in types)
    _require(ok, f"args.{key} must be {what}.", cause)


def parse_action(obj: Any) -> Action:
    """Validate an OpenHands action dict. Raises ProtocolError with a precise message."""
    cause, kind = _envelope(obj)
    args = obj.get("args", {})
    _require(isinstance(args, dict), "'args' must be a JSON object.", cause)
    if kind in KNOWLEDGE_KINDS:  # oh's own editor-knowledge kinds (§3.6)
        check_knowledge_args(kind, args, cause)
        return Action(id=cause, kind=kind, args=args, timeout=_timeout(obj.get("timeout"), cause), raw=obj)
    timeout = _timeout(obj.get("timeout"), cause)
    if kind == "run":
        _check_run_args(args, cause)
    elif kind == "job":
        _check_job_args(args, cause)
    elif kind == "ensure":  # workspace bootstrap (§3.14)
        check_ensure_args(args, cause)
    else:  # read, write, edit, stat: a file path
        _check_path_args(args, cause)
        check = _FILE_CHECKS.get(kind)  # stat has nothing more to check
        if check is not None:
            check(args, cause)
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
    if kind not in ACTION_KINDS and kind not in KNOWLEDGE_KINDS:
        raise ProtocolError(
            ErrorId.TOOL_UNSUPPORTED,
            f"Unknown action {kind[:40]!r}: the action kinds are {', '.join(ACTION_KINDS + KNOWLEDGE_KINDS)}.",
            cause,
        )
    return cause, kind


def _check_run_args(args: dict, cause: int) -> None:
    _require(isinstance(args.get("command"), str), "args.command must be a string.", cause)
    for key in ("is_input", "blocking", "hidden", "reset", "exclusive"):
        _opt_type(args, key, (bool,), "a boolean", cause)
    _opt_type(args, "cwd", (str,), "a string or null", cause)
    _require(
        not (args.get("reset") and args.get("is_input")), "args.reset cannot be combined with args.is_input.", cause
    )
    mo = args.get("max_output")
    _require(
        mo is None or (_is_int(mo) and mo >= 0),
        "args.max_output must be an integer >= 0 (characters; 0 = no truncation).",
        cause,
    )
    _check_env(args.get("env"), cause)
    if "sandbox" in args:  # leaving the agent shell's sandbox: checked before anyone is asked (README "Sandbox")
        try:
            sandbox_rules.check_escalation(args)
        except sandbox_rules.SandboxError as exc:
            raise ProtocolError(ErrorId.BAD_REQUEST, str(exc) + ".", cause) from None
    for key in ("background", "force"):
        _opt_type(args, key, (bool,), "a boolean", cause)
    _check_job_id(args, cause, required=False)
    _require(
        not (args.get("background") and (args.get("is_input") or args.get("reset") or not args["command"].strip())),
        "args.background needs a non-empty command and cannot be combined with is_input or reset.",
        cause,
    )


def _check_job_args(args: dict, cause: int) -> None:
    _require(args.get("op") in JOB_OPS, f"args.op must be one of {', '.join(JOB_OPS)}.", cause)
    _check_job_id(args, cause, required=args["op"] != "list")
    for key in ("offset", "limit", "tail"):
        v = args.get(key)
        _require(v is None or (_is_int(v) and v >= 0), f"args.{key} must be an integer >= 0.", cause)
    w = args.get("wait")
    _require(
        w is None or (isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 0),
        "args.wait must be a number of seconds >= 0.",
        cause,
    )


def _check_path_args(args: dict, cause: int) -> None:
    """What read, write, edit and stat share: the path, a line range, the diagnostics flag."""
    _require(isinstance(args.get("path"), str) and args["path"] != "", "args.path must be a non-empty string.", cause)
    _require("\x00" not in args["path"], "args.path must not contain NUL bytes.", cause)
    for key in ("start", "end"):
        _opt_type(args, key, (int,), "an integer", cause)
    _opt_type(args, "diagnostics", (bool,), "a boolean", cause)  # §3.6: the changed file's diagnostics (write/edit)
    if "view_range" in args and args["view_range"] is not None:
        vr = args["view_range"]
        _require(
            isinstance(vr, list) and len(vr) == 2 and all(_is_int(x) for x in vr),
            "args.view_range must be [first_line, last_line] (integers, last -1 = end of file).",
            cause,
        )


def _check_read_args(args: dict, cause: int) -> None:
    enc = args.get("encoding")
    _require(
        enc is None or enc in READ_ENCODINGS, 'args.encoding must be "auto", "base64" or "binary" for read.', cause
    )


def _check_write_args(args: dict, cause: int) -> None:
    _require(isinstance(args.get("content"), str), "args.content must be a string.", cause)
    enc = args.get("encoding")
    _require(
        enc is None or (isinstance(enc, str) and _known_encoding(enc)),
        'args.encoding must be "utf-8" (default), "base64" or a codec name Python knows (e.g. latin-1).',
        cause,
    )
    mode = args.get("mode")
    _require(
        mode is None or mode in WRITE_MODES,
        f"args.mode must be one of {', '.join(WRITE_MODES)} (default overwrite).",
        cause,
    )
    ranged = (args.get("start") or 0) > 0 or args.get("end", -1) not in (-1, None)
    _require(
        not (mode in ("create", "append") and ranged),
        f"args.mode {mode} writes the whole file: drop args.start/args.end.",
        cause,
    )


def _check_edit_args(args: dict, cause: int) -> None:
    cmd = args.get("command")
    _require(
        cmd in EDIT_COMMANDS,
        f"args.command must be one of {', '.join(EDIT_COMMANDS)}.",
        cause,
    )
    for key in ("file_text", "old_str", "new_str"):
        _opt_type(args, key, (str,), "a string or null", cause)
    _opt_type(args, "insert_line", (int,), "an integer or null", cause)
    if cmd == "create":
        _require(isinstance(args.get("file_text"), str), "edit create needs args.file_text (a string).", cause)
    elif cmd == "str_replace":
        _require(
            isinstance(args.get("old_str"), str) and args["old_str"] != "",
            "edit str_replace needs a non-empty args.old_str.",
            cause,
        )
    elif cmd == "insert":
        _require(_is_int(args.get("insert_line")), "edit insert needs args.insert_line (an integer).", cause)
        _require(isinstance(args.get("new_str"), str), "edit insert needs args.new_str (a string).", cause)


_FILE_CHECKS = {"read": _check_read_args, "write": _check_write_args, "edit": _check_edit_args}


def _timeout(timeout: Any, cause: int | None) -> float | None:
    if timeout is None:
        return None
    _require(
        isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and math.isfinite(timeout) and timeout >= 0,
        "'timeout' must be a number of seconds >= 0 (0 = no timeout given).",
        cause,
    )
    # 0 means "no timeout given", as in the OpenHands SDK: the no-new-output rule applies.
    return float(timeout) if timeout > 0 else None


def _known_encoding(name: str) -> bool:
    if name == "base64":
        return True
    if len(name) > 40:
        return False
    try:
        info = codecs.lookup(name)
    except LookupError:
        return False
    # Only text encodings: "rot13", "zlib", "base64_codec" and friends are bytes<->bytes or str<->str.
    return getattr(info, "_is_text_encoding", True)


def _check_env(env: Any, cause: int | None) -> None:
    if env is None:
        return
    _require(isinstance(env, dict), "args.env must be an object of variable names to string values.", cause)
    _require(len(env) <= MAX_ENV_VARS, f"args.env may hold at most {MAX_ENV_VARS} variables.", cause)
    for name, value in env.items():
        # Never echo the value: env values are secrets.
        _require(
            bool(_ENV_NAME.match(name)),
            f"args.env: {name[:40]!r} is not a shell variable name ([A-Za-z_][A-Za-z0-9_]*).",
            cause,
        )
        _require(
            isinstance(value, str) and "\x00" not in value,
            f"args.env.{name} must be a string without NUL characters.",
            cause,
        )


def _check_job_id(args: dict, cause: int | None, *, required: bool) -> None:
    v = args.get("job_id")
    if v is None and not required:
        return
    _require(
        isinstance(v, str) and bool(JOB_ID.match(v)),
        'args.job_id must be a job id string such as "j3" (from an earlier observation or `job list`).',
        cause,
    )


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

OBSERVATION_KINDS = ("run", "read", "write", "edit", "error", "job", "stat", "branch", "ensure", *KNOWLEDGE_KINDS)


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
    required = {
        "run": ("command",),
        "read": ("path",),
        "write": ("path",),
        "edit": ("path",),
        "job": ("op",),
        "stat": ("path", "exists"),
    }.get(kind, ())
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


WAIT_SUMMARY = "wait for output"  # the summary of an empty `run` (`oh run --wait`): not an empty cell


PATH_SUMMARY_LIMIT = 300


def summarize(action: Action, limit: int = 80) -> str:
    """One line for humans: the command, or the kind and path. Never the file contents."""
    if action.kind in KNOWLEDGE_KINDS:
        text = summarize_knowledge(action.kind, action.args)
    elif action.kind == "run" and not action.is_input and not action.command.strip() and not action.reset:
        text = WAIT_SUMMARY  # a follow-up: wait for more output of the command still running
    elif action.kind == "run":
        text = (
            ("input: " if action.is_input else "")
            + ("background: " if action.args.get("background") else "")
            + action.command
        )
    elif action.kind == "edit":
        text = f"{action.args.get('command')} {action.path}"
    elif action.kind == "job":
        text = f"job {action.args.get('op')} {action.args.get('job_id') or ''}".strip()
    elif action.kind == "stat":
        text = f"stat {action.path}"
    elif action.kind == "ensure":
        text = (
            "ensure "
            + " ".join(action.args.get("targets") or ["environment"])
            + (f" in {action.args['path']}" if action.args.get("path") else "")
        )
    else:
        text = action.path
    text = " ".join(text.split())
    if action.kind in ("read", "write", "edit", "stat"):
        # A path: the live view shows it relative to the workspace and cuts it from the left, so the
        # file name stays; here only an absurdly long one is cut, also from the left.
        limit = max(limit, PATH_SUMMARY_LIMIT)
        return text if len(text) <= limit else "…" + text[-(limit - 1) :]
    return text if len(text) <= limit else text[: limit - 1] + "…"
