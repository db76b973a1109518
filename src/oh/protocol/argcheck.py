"""The argument checks of the built-in action kinds (docs/protocol.md §3): each raises
ProtocolError(BAD_REQUEST) saying what to send. Pure; the kind table (``kinds.py``) names which check
each kind uses, ``events.parse_action`` runs it.
"""

from __future__ import annotations

import codecs
import math
import re
from typing import Any, TypeGuard

from . import sandbox as sandbox_rules
from .errors import ErrorId, ProtocolError

JOB_OPS = ("list", "poll", "wait", "output", "cancel")
WRITE_MODES = ("overwrite", "create", "append")
JOB_ID = re.compile(r"^[A-Za-z0-9._-]{1,80}$")
READ_ENCODINGS = ("auto", "base64", "binary")  # binary: one binary frame (protocol/binary.py)
MAX_ENV_VARS = 256
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
EDIT_COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _require(cond: bool, msg: str, cause: int | None) -> None:
    if not cond:
        raise ProtocolError(ErrorId.BAD_REQUEST, msg, cause)


def _opt_type(
    args: dict[str, Any], key: str, types: tuple[type, ...], what: str, cause: int | None, *, nullable: bool = True
) -> None:
    if key not in args:
        return
    v = args[key]
    if v is None and nullable:
        return
    ok = isinstance(v, types) and not (isinstance(v, bool) and bool not in types)
    _require(ok, f"args.{key} must be {what}.", cause)


def check_run_args(args: dict[str, Any], cause: int) -> None:
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


def check_job_args(args: dict[str, Any], cause: int) -> None:
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


def _check_path_args(args: dict[str, Any], cause: int) -> None:
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


def check_read_args(args: dict[str, Any], cause: int) -> None:
    _check_path_args(args, cause)
    enc = args.get("encoding")
    _require(
        enc is None or enc in READ_ENCODINGS, 'args.encoding must be "auto", "base64" or "binary" for read.', cause
    )


def check_write_args(args: dict[str, Any], cause: int) -> None:
    _check_path_args(args, cause)
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
    check_precondition(args, cause)
    ranged = (args.get("start") or 0) > 0 or args.get("end", -1) not in (-1, None)
    _require(
        not (mode in ("create", "append") and ranged),
        f"args.mode {mode} writes the whole file: drop args.start/args.end.",
        cause,
    )


def check_edit_args(args: dict[str, Any], cause: int) -> None:
    _check_path_args(args, cause)
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
    check_precondition(args, cause)


def check_precondition(args: dict[str, Any], cause: int) -> None:
    """A write/edit's ``if_version``, ``force`` and ``wait_claim`` (issue 37, §3.18)."""
    v = args.get("if_version")
    _require(
        v is None or (isinstance(v, str) and 0 < len(v) <= 100 and v.isprintable()),
        "args.if_version must be the version string a read returned (e.g. b2:...).",
        cause,
    )
    _opt_type(args, "force", (bool,), "a boolean", cause)
    w = args.get("wait_claim")
    _require(
        w is None or (isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and 0 <= w <= 600),
        "args.wait_claim must be a number of seconds from 0 to 600.",
        cause,
    )


def check_stat_args(args: dict[str, Any], cause: int) -> None:
    _check_path_args(args, cause)


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


def _check_job_id(args: dict[str, Any], cause: int | None, *, required: bool) -> None:
    v = args.get("job_id")
    if v is None and not required:
        return
    _require(
        isinstance(v, str) and bool(JOB_ID.match(v)),
        'args.job_id must be a job id string such as "j3" (from an earlier observation or `job list`).',
        cause,
    )
