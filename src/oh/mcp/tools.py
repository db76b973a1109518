"""The MCP tools ``run``, ``read``, ``write``, ``edit``: schemas, argument checks, action and result shapes.

Pure (no ``mcp`` import, no sockets) so it is unit-testable and cheap: ``server.py`` turns a
``ToolResult`` into the SDK's types. The descriptions are what an agent reads to learn the tools, so
they spell out the behaviours that surprise agents: soft timeouts, continuing with an empty command,
``is_input`` and ``C-c``, ``reset``, and base64 reads of images.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import WireError
from ..protocol import actions
from . import claim_tools, history_tools, job_tools, knowledge_tools

EDIT_COMMANDS = ["view", "create", "str_replace", "insert", "undo_edit"]
RISKS = ["LOW", "MEDIUM", "HIGH", "UNKNOWN"]
# The backend renders these in the live view; agents that assess risk can say so.
_RISK_SCHEMA = {
    "type": "string",
    "enum": RISKS,
    "description": (
        "Optional: your assessment of this action's risk; shown to the user in oh's live view (HIGH in red)."
    ),
}
_PATH_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "description": "File path: absolute, or relative to the directory this server was started in (the project).",
}
_DIAG_SCHEMA = {
    "type": "boolean",
    "default": False,
    "description": (
        "true: also return the file's language-server errors/warnings once they settle after this change (VS Code "
        "runtime)."
    ),
}
_VIEW_RANGE = {
    "type": "array",
    "items": {"type": "integer"},
    "minItems": 2,
    "maxItems": 2,
    "description": "[first_line, last_line], 1-based and inclusive; last_line -1 = to the end of the file.",
}

RUN_DESCRIPTION = """Run a bash command in a persistent shell, through oh (in the user's VS Code terminal, or on this \
machine with oh's local runtime); the user watches it live.

The shell persists between calls: `cd`, exported variables and activated virtualenvs stay. One command runs at a time.
- The result ends with `[exit code: N]`; a non-zero exit code marks the result as an error. structuredContent has \
`exit_code` and `running`.
- Long-running commands: without `timeout`, the call returns when the command finishes or when it has printed nothing \
new for 30 s. With `timeout`, it returns after that many seconds at the latest. Either way, a command that is still \
running KEEPS RUNNING: the result says so (`running: true`, exit code -1). Then call run again with `command: ""` to \
wait for more output, with `is_input: true` to type into it, or with `command: "C-c", is_input: true` to interrupt it.
- `blocking: true` with `timeout`: kill the command (and everything it started) after `timeout` seconds instead.
- Servers, watchers, long builds and test runs: `background: true` starts a job and returns at once with its `job_id`; \
then the `job` tool: op wait (exit code), op output from an offset (the WHOLE log, page by page, nothing cut), op \
cancel. `jobs` lists them. A second identical background command returns the running job (`force: true` starts another).
- While a command is still running, another `run` starts in an extra shell (no `cd`/exports carried back); follow-ups \
(`command: ""`, `is_input`) may name their command with `job_id` (from the result).
- `reset: true` kills whatever runs in your shell and starts a fresh one (with `command: ""` it only resets).
- Output longer than `max_output` characters (default 30000) is cut in the middle, with a visible marker."""

READ_DESCRIPTION = """Read a file through oh (in VS Code: the editor's current content, unsaved changes included).

Returns the raw text (no line numbers; use the `edit` tool's `view` command for numbered lines or a directory \
listing). `view_range` limits it to some lines; a text over 80,000 characters is cut at a line end with a note saying \
which view_range reads on.
Images and other binary files: pass `encoding: "base64"`; images come back as image content you can see, other files \
as base64 text (structuredContent has `mime_type`)."""

WRITE_DESCRIPTION = """Write a whole file through oh (created or replaced, atomically; parent directories are created).

For small changes to an existing file prefer the `edit` tool (str_replace/insert): it shows the user a diff. \
`encoding: "base64"` writes bytes given as base64; another codec name (e.g. "latin-1") writes text in that encoding."""

EDIT_DESCRIPTION = """View, create and edit files through oh (OpenHands' file editor; in VS Code each edit lands in \
the editor's undo history).

Commands:
- `view`: a file with line numbers (`view_range` for some lines), or a directory listing two levels deep.
- `create`: a new file with `file_text` (fails if the file exists; use the `write` tool to replace a file).
- `str_replace`: replace `old_str` with `new_str` (empty or omitted = delete). `old_str` must match EXACTLY ONE place, \
whitespace included; include enough surrounding lines to make it unique.
- `insert`: insert `new_str` after line `insert_line` (0 = at the top).
- `undo_edit`: revert the last edit made to `path` through oh.
The result shows a snippet of the changed region with line numbers."""

# Several agents (docs/protocol.md §3.18): a write/edit's precondition. The backend remembers what this connection
# read, so these are needed only to bypass (force) or to name a version read elsewhere (if_version).
_GUARD_PROPERTIES: dict[str, Any] = {
    "if_version": {
        "type": "string",
        "description": (
            "Refuse (STALE) unless the file is still at this version (a read's structured 'version'). Optional: "
            "oh already refuses a change to a file that changed since you read it."
        ),
    },
    "force": {
        "type": "boolean",
        "description": "Write even though the file changed since you read it (another agent's or the user's work "
        "is overwritten). Only after reading the STALE diff.",
    },
}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "run",
        "title": "Run a shell command",
        "description": RUN_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": (
                        'The bash command line. "" = wait for more output of the command still running. With '
                        'is_input: the text to type (a newline is added), or a key: "C-c" (interrupt), "C-d" (end '
                        "of input)."
                    ),
                },
                "is_input": {
                    "type": "boolean",
                    "default": False,
                    "description": (
                        "Send `command` to the command that is still running, instead of starting a new one."
                    ),
                },
                "timeout": {
                    "type": "number",
                    "minimum": 0,
                    "description": (
                        "Seconds to wait at most before returning (the command keeps running unless blocking is "
                        "true). 0 or omitted = no fixed limit (returns after 30 s without new output)."
                    ),
                },
                "blocking": {
                    "type": "boolean",
                    "default": False,
                    "description": (
                        "With timeout: kill the command when the timeout expires instead of returning while it runs on."
                    ),
                },
                "reset": {
                    "type": "boolean",
                    "default": False,
                    "description": "Kill what runs in your shell and start a fresh shell first.",
                },
                "max_output": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Keep at most this many characters of output (default 30000; 0 = no limit).",
                },
                **job_tools.RUN_PROPERTIES,
                "security_risk": _RISK_SCHEMA,
            },
            "required": ["command"],
            "additionalProperties": False,
        },
        "annotations": {
            "title": "Run a shell command",
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": False,
            "openWorldHint": True,
        },
    },
    {
        "name": "read",
        "title": "Read a file",
        "description": READ_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": _PATH_SCHEMA,
                "view_range": _VIEW_RANGE,
                "encoding": {
                    "type": "string",
                    "enum": ["auto", "base64"],
                    "default": "auto",
                    "description": (
                        "auto: text (UTF-8 or a detected text encoding). base64: the raw bytes, for images and "
                        "other binary files."
                    ),
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        "annotations": {
            "title": "Read a file",
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    },
    {
        "name": "write",
        "title": "Write a file",
        "description": WRITE_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": _PATH_SCHEMA,
                "content": {"type": "string", "description": "The whole new content of the file."},
                "encoding": {
                    "type": "string",
                    "default": "utf-8",
                    "description": (
                        "utf-8 (default), base64 (content is base64 of the bytes), or another codec name such as "
                        "latin-1."
                    ),
                },
                **job_tools.WRITE_PROPERTIES,
                **_GUARD_PROPERTIES,
                "diagnostics": _DIAG_SCHEMA,
                "security_risk": _RISK_SCHEMA,
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
        "annotations": {
            "title": "Write a file",
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    },
    {
        "name": "edit",
        "title": "View or edit a file",
        "description": EDIT_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "enum": EDIT_COMMANDS,
                    "description": "view | create | str_replace | insert | undo_edit",
                },
                "path": _PATH_SCHEMA,
                "file_text": {"type": "string", "description": "create: the content of the new file."},
                "old_str": {
                    "type": "string",
                    "description": "str_replace: the exact text to replace (must occur exactly once).",
                },
                "new_str": {
                    "type": "string",
                    "description": (
                        "str_replace: the replacement (default: empty = delete). insert: the text to insert."
                    ),
                },
                "insert_line": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "insert: the line after which new_str goes (0 = top of the file).",
                },
                "view_range": _VIEW_RANGE,
                **_GUARD_PROPERTIES,
                "diagnostics": _DIAG_SCHEMA,
                "security_risk": _RISK_SCHEMA,
            },
            "required": ["command", "path"],
            "additionalProperties": False,
        },
        "annotations": {
            "title": "View or edit a file",
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": False,
            "openWorldHint": False,
        },
    },
]
TOOLS.extend(knowledge_tools.TOOLS)  # diagnostics, open, editors, symbols, definition, references (§3.6)
TOOLS.extend(job_tools.TOOLS)  # jobs, job, stat (§3.8-§3.9), ensure (§3.14)
TOOLS.extend(history_tools.TOOLS)  # history, undo: the agent's own entries (§3.15)
TOOLS.extend(claim_tools.TOOLS)  # claim, release: several agents (§3.18)
TOOL_NAMES = [t["name"] for t in TOOLS]
_SCHEMAS = {t["name"]: t["inputSchema"] for t in TOOLS}


class ArgumentError(WireError, ValueError):
    """The agent's arguments are wrong; the message says what to send instead."""


@dataclass
class ToolResult:
    text: str
    structured: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False
    image: tuple[str, str] | None = None  # (base64 data, mime type)


# ------------------------------------------------------------------------------------ arguments
def _type_ok(value: Any, spec: dict[str, Any]) -> bool:
    t = spec.get("type")
    if t == "string":
        return isinstance(value, str)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return (
            isinstance(value, int) and not isinstance(value, bool) or (isinstance(value, float) and value.is_integer())
        )
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if t == "array":
        return isinstance(value, list)
    return True


def _type_name(spec: dict[str, Any]) -> str:
    if spec.get("enum"):
        return "one of " + ", ".join(repr(v) for v in spec["enum"])
    return {
        "string": "a string",
        "boolean": "true or false",
        "integer": "an integer",
        "number": "a number",
        "array": "an array",
    }.get(spec.get("type", ""), "a value")


def check_arguments(name: str, arguments: Any) -> dict[str, Any]:
    """Validate against the tool's schema; None values count as absent (strict-mode clients send them)."""
    if name not in _SCHEMAS:
        raise ArgumentError(f"Unknown tool {name[:60]!r}. The tools are: {', '.join(TOOL_NAMES)}.")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ArgumentError(f"The arguments of {name} must be a JSON object.")
    schema = _SCHEMAS[name]
    props = schema["properties"]
    unknown = [k for k in arguments if k not in props]
    if unknown:
        raise ArgumentError(f"Unknown argument {unknown[0][:60]!r} for {name}. Its arguments are: {', '.join(props)}.")
    args = {k: v for k, v in arguments.items() if v is not None}
    for key in schema.get("required", []):
        if key not in args:
            raise ArgumentError(
                f"{name} needs the argument {key!r} ({props[key].get('description', '').split('.')[0]})."
            )
    for key, value in args.items():
        spec = props[key]
        if not _type_ok(value, spec) or ("enum" in spec and value not in spec["enum"]):
            raise ArgumentError(f"{name}: {key!r} must be {_type_name(spec)}, got {_show(value)}.")
        if "minimum" in spec and value < spec["minimum"]:
            raise ArgumentError(f"{name}: {key!r} must be >= {spec['minimum']}, got {_show(value)}.")
        if spec.get("minLength") and len(value) < spec["minLength"]:
            raise ArgumentError(f"{name}: {key!r} must not be empty.")
        if spec.get("type") == "array" and key == "view_range":
            if len(value) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
                raise ArgumentError(
                    f"{name}: 'view_range' must be [first_line, last_line] (two integers; last_line -1 = end "
                    f"of file), got {_show(value)}."
                )
        if spec.get("type") == "integer" and isinstance(value, float):
            args[key] = int(value)
    return args


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def resolve_path(path: str, base_dir: str) -> str:
    """Absolute path for the backend: ``~`` expanded, relative paths taken from ``base_dir``."""
    if "\x00" in path:
        raise ArgumentError("'path' must not contain NUL characters.")
    path = os.path.expanduser(path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(base_dir, path))


def build_action(name: str, arguments: Any, base_dir: str) -> dict[str, Any]:
    """The oh action (OpenHands shape, docs/protocol.md) for a tool call. Raises ArgumentError."""
    a = check_arguments(name, arguments)
    if name in knowledge_tools.NAMES:
        return knowledge_tools.build_action(name, a, lambda p: resolve_path(p, base_dir))
    if name in job_tools.NAMES:
        return job_tools.build_action(name, a, lambda p: resolve_path(p, base_dir), ArgumentError)
    if name in claim_tools.NAMES:
        return claim_tools.build_action(name, a, lambda p: resolve_path(p, base_dir), ArgumentError)
    risk = a.get("security_risk") or None
    if name == "run":
        if "\x00" in a["command"]:
            raise ArgumentError("run: 'command' must not contain NUL characters.")
        timeout = a.get("timeout")  # 0 = "no timeout given" (older backends refuse 0, so it is simply left out)
        # blocking without timeout: wait for completion (the backend's own deadline applies)
        return actions.run(
            a["command"],
            is_input=a.get("is_input", False),
            blocking=a.get("blocking", False),
            reset=bool(a.get("reset")),
            max_output=a.get("max_output"),
            timeout=float(timeout) if timeout else None,
            security_risk=risk,
            **job_tools.run_args(a, ArgumentError),
        )
    path = resolve_path(a["path"], base_dir)
    if name == "read":
        encoding = a.get("encoding", "auto")
        return actions.read(
            path, view_range=a.get("view_range"), encoding=None if encoding == "auto" else encoding, security_risk=risk
        )
    diagnostics = bool(a.get("diagnostics"))
    if name == "write":
        return actions.write(
            path,
            a["content"],
            encoding=a.get("encoding"),
            mode=job_tools.write_mode(a),
            diagnostics=diagnostics,
            security_risk=risk,
            if_version=a.get("if_version") or None,
            force=bool(a.get("force")),
        )
    return _edit_action(a, path, diagnostics, risk)


def _edit_action(a: dict[str, Any], path: str, diagnostics: bool, risk: str | None) -> dict[str, Any]:
    cmd = a["command"]
    if cmd == "create" and "file_text" not in a:
        raise ArgumentError("edit create needs 'file_text' (the content of the new file).")
    if cmd == "str_replace" and not a.get("old_str"):
        raise ArgumentError(
            "edit str_replace needs a non-empty 'old_str' (the exact text to replace) and 'new_str' (its replacement)."
        )
    if cmd == "insert" and ("insert_line" not in a or "new_str" not in a):
        raise ArgumentError(
            "edit insert needs 'insert_line' (the line after which to insert; 0 = top) and 'new_str' (the text)."
        )
    return actions.edit(
        path,
        cmd,
        file_text=a.get("file_text"),
        old_str=a.get("old_str"),
        new_str=a.get("new_str", "" if cmd == "str_replace" else None),
        insert_line=a.get("insert_line"),
        view_range=a["view_range"] if cmd == "view" and "view_range" in a else None,
        diagnostics=diagnostics,
        security_risk=risk,
        if_version=(a.get("if_version") or None) if cmd != "view" else None,
        force=bool(a.get("force")) and cmd != "view",
    )


# ------------------------------------------------------------------------------------ results
_RUNNING = re.compile(r"still running|no new output", re.I)


def to_result(name: str, obs: dict[str, Any], action: dict[str, Any] | None = None) -> ToolResult:
    """An observation (the dict the backend answered) as the tool's result (``action``: what was asked)."""
    kind = obs.get("observation")
    content = obs.get("content") or ""
    extras = obs.get("extras") or {}
    if kind == "error":
        eid = extras.get("error_id") or "ERROR"
        return ToolResult(f"{eid}: {content}", {"error_id": eid, "message": content}, is_error=True)
    if kind in knowledge_tools.NAMES:
        return ToolResult(content, knowledge_tools.structured(obs))
    if kind == "run":
        if ((action or {}).get("args") or {}).get("background"):
            return job_tools.background_result(extras.get("metadata") or {}, ToolResult)
        return _run_result(content, extras)
    if kind == "job":
        return job_tools.job_result(obs, ToolResult)
    if kind == "stat":
        return job_tools.stat_result(obs, ToolResult)
    if kind == "ensure":
        return job_tools.ensure_result(obs, ToolResult)
    if kind in claim_tools.NAMES:
        return claim_tools.result(obs, ToolResult)
    if kind == "read":
        view_range = ((action or {}).get("args") or {}).get("view_range")
        return _read_result(content, extras, view_range[0] if view_range else 1)
    if kind == "write":
        mode = ((action or {}).get("args") or {}).get("mode", "overwrite")
        if mode != "overwrite" or obs.get("content"):
            return job_tools.write_result(obs, mode, ToolResult)
        path = extras.get("path", "")
        return ToolResult(f"Wrote {path}.", _versioned({"path": path}, extras))
    if kind == "edit":
        structured = _versioned({"path": extras.get("path", "")}, extras)
        if extras.get("diff"):
            structured["diff"] = extras["diff"]
        if "diagnostics" in extras:
            structured["diagnostics"] = extras["diagnostics"]
        return ToolResult(content or f"Edited {structured['path']}.", structured)
    return ToolResult(
        f"Unexpected answer from the backend ({str(kind)[:40]!r}): {content[:2000]}",
        {"observation": kind},
        is_error=True,
    )


def _versioned(structured: dict[str, Any], extras: dict[str, Any]) -> dict[str, Any]:
    """The file's version after a read/write/edit (§3.18), when the backend said it."""
    if isinstance(extras.get("version"), str):
        structured["version"] = extras["version"]
    return structured


def _run_result(content: str, extras: dict[str, Any]) -> ToolResult:
    md = extras.get("metadata") or {}
    code = md.get("exit_code")
    prefix, suffix = md.get("prefix") or "", md.get("suffix") or ""
    running = code == -1 and bool(_RUNNING.search(suffix)) and "killed" not in suffix
    text = prefix + content + suffix
    if isinstance(code, int) and code >= 0:
        trailer = f"[exit code: {code}]"
    elif running:
        name = f' (job_id "{md["job_id"]}")' if md.get("job_id") else ""
        trailer = (
            f'[still running{name}: call run with command "" to wait for more output, is_input to send input, or '
            '"C-c" with is_input to interrupt]'
        )
    else:
        trailer = "[exit code: -1 (the command did not complete)]"
    sep = "" if not text or text.endswith("\n") else "\n"
    structured = {"exit_code": code, "running": running, "working_dir": md.get("working_dir")}
    if md.get("job_id"):
        structured["job_id"] = md["job_id"]
    if md.get("py_interpreter_path"):
        structured["py_interpreter_path"] = md["py_interpreter_path"]
    is_error = not running and code != 0
    return ToolResult(text + sep + trailer, structured, is_error=is_error)


# Text reads longer than this are cut at a line end, saying how to read on: MCP clients refuse or
# truncate large results (Claude Code: 25,000 tokens by default), and a silent cut would mislead.
READ_LIMIT = 80_000


def _read_result(content: str, extras: dict[str, Any], first_line: int = 1) -> ToolResult:
    path = extras.get("path", "")
    if extras.get("encoding") == "base64":
        mime = extras.get("mime_type") or "application/octet-stream"
        size = len(content) * 3 // 4 - content[-2:].count("=") if content else 0
        structured = {"path": path, "encoding": "base64", "mime_type": mime, "size": size}
        if mime.startswith("image/"):
            return ToolResult(f"Image {path} ({mime}, {size} bytes).", structured, image=(content, mime))
        return ToolResult(content, structured)
    if len(content) > READ_LIMIT:
        cut = content.rfind("\n", 0, READ_LIMIT) + 1 or READ_LIMIT
        last = max(first_line, 1) + content.count("\n", 0, cut) - 1
        note = (
            f"\n[Cut here: this read has {len(content)} characters, more than the {READ_LIMIT} a result carries. "
            f"Lines up to {last} are above; read on with view_range [{last + 1}, -1].]"
        )
        return ToolResult(
            content[:cut] + note,
            _versioned({"path": path, "truncated": True, "last_line": last, "total_chars": len(content)}, extras),
        )
    return ToolResult(content, _versioned({"path": path}, extras))


def error_result(message: str, error_id: str) -> ToolResult:
    return ToolResult(f"{error_id}: {message}", {"error_id": error_id, "message": message}, is_error=True)
