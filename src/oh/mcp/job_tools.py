"""The MCP tools for background jobs and file checks (docs/protocol.md §3.8-§3.9): ``jobs``, ``job``,
``stat``, plus the job-related arguments of ``run`` (``background``, ``force``, ``job_id``) and the
``mode`` of ``write``.

Pure, like ``tools.py`` (which merges these in and routes calls here). The descriptions teach the
pattern that keeps long output intact: start a server or a slow test run in the background, then
``job`` wait (exit code) and ``job`` output from an offset, passing ``next_offset`` back, instead of a
foreground ``run`` whose output is cut in the middle.
"""

from __future__ import annotations

from typing import Any

from ..protocol import actions, joblist

NAMES = ("jobs", "job", "stat", "ensure")
JOB_OPS = ["poll", "wait", "output", "cancel"]
WRITE_MODES = ["overwrite", "create", "append"]
# End states that mean "the job did not do its work"; an agent should notice them (isError).
FAILED_STATES = ("FAILED", "LOST", "CANCELLED")
# Default bytes per `output` call: the backend allows 1 MiB, but MCP clients cut or refuse large
# results (Claude Code: ~25,000 tokens), so a page is the size of a `run` result.
OUTPUT_PAGE = 30_000
# Default seconds of a `wait`: below the shortest common MCP client call limit (Codex: 60 s), so a
# long job answers `timed_out` and the agent waits again, instead of the client abandoning the call.
WAIT_DEFAULT = 50.0

_JOB_ID = {
    "type": "string",
    "minLength": 1,
    "description": "The job's id, e.g. \"j3\" (from run's result, structuredContent job_id, or the jobs tool).",
}

RUN_PROPERTIES: dict[str, Any] = {
    "background": {
        "type": "boolean",
        "default": False,
        "description": (
            "Start the command as a background job and return at once with its job_id (servers, watchers, long "
            "test runs). Follow it with the job tool."
        ),
    },
    "force": {
        "type": "boolean",
        "default": False,
        "description": (
            "With background: start it even if the same command is already running as a job in the same directory "
            "(otherwise that job is returned)."
        ),
    },
    "job_id": {
        **_JOB_ID,
        "description": (
            'Follow-ups only (command "" or is_input): the command to wait for or type into, when several run. '
            "From an earlier result's job_id."
        ),
    },
}

WRITE_PROPERTIES: dict[str, Any] = {
    "mode": {
        "type": "string",
        "enum": WRITE_MODES,
        "default": "overwrite",
        "description": (
            "overwrite (default): replace the file. create: only if the path does not exist yet (an existing file "
            "is left unchanged and the result is an error). append: add content at the end (creates a missing "
            "file)."
        ),
    },
}

JOBS_DESCRIPTION = """List your background jobs and your commands still running, with their state (RUNNING, SUCCEEDED, \
FAILED, CANCELLED, LOST), exit code, command and directory.

Use it to find a job_id you lost track of, or to check what you left running before starting a server again."""

JOB_DESCRIPTION = """Follow a background job (started with run `background: true`) or a command still running, by its \
job_id.

- `op: "wait"`: block until the job ends (at most `timeout` seconds, default 50: MCP clients abandon longer calls \
unless configured otherwise) and return its exit code and the last `tail` bytes of its output (default 30000). \
`timed_out: true` = still running; wait again.
- `op: "output"`: its output from byte `offset` (0 = the start), at most `limit` bytes (default 30000). \
structuredContent has `next_offset`: pass it as `offset` in the next call to read on, so nothing is lost to \
truncation; `eof: true` = the job ended and everything was read. With `timeout`, waits that long for new output first \
(follow a server's log).
- `op: "poll"`: state and the last `tail` bytes (default 2000) now, without waiting.
- `op: "cancel"`: interrupt it (Ctrl-C to its process group, then kill after 2 s).
States: RUNNING, SUCCEEDED (exit 0), FAILED (other exit), CANCELLED, LOST (its shell or editor went away). poll/wait \
results are errors when the job FAILED, was CANCELLED or LOST; structuredContent has `state` and `exit_code`. Finished \
jobs are kept for an hour."""

STAT_DESCRIPTION = """Check a path without reading it: whether it exists, file or directory, size, modification time \
(mtime, epoch seconds), mode, text encoding (or binary) and mime type.

The cheap "does it exist / did it change / is it binary" check before a read or a write. A missing path is a normal \
answer (`exists: false`), not an error."""

ENSURE_DESCRIPTION = """Make the project's environments ready before running its code or tests, and learn which \
interpreter to use: Python (a `.venv` from uv.lock, poetry.lock, requirements*.txt or pyproject.toml; with uv when \
installed, else venv + pip) and Node (`node_modules` with the lockfile's own installer: npm ci, yarn, pnpm, bun).

Call it once at the start instead of running pip/npm install yourself: a second call with nothing changed is a no-op \
answered at once (a stamp in the environment records what was installed), a changed lockfile or requirement re-runs \
only that install, an interrupted install is redone. Then use the interpreter and tools it names (e.g. \
`.venv/bin/python -m pytest`, `node_modules/.bin/tsc`).
The installs run as background jobs shared with every agent asking at the same time. If one takes longer than \
`timeout` (default 50 s), the result says it is still installing and names the job: call ensure again to wait more, or \
follow it with the job tool. The result is an error when a target failed (with the installer's last output) or was \
refused (e.g. yarn.lock without yarn); other ecosystems found (go.mod, Cargo.toml, ...) are named, not installed."""

ENSURE_WAIT = 50.0

TOOLS: list[dict[str, Any]] = [
    {
        "name": "jobs",
        "title": "List background jobs",
        "description": JOBS_DESCRIPTION,
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
        "annotations": {
            "title": "List background jobs",
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    },
    {
        "name": "job",
        "title": "Wait for, read or cancel a job",
        "description": JOB_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "op": {"type": "string", "enum": JOB_OPS, "description": "wait | output | poll | cancel"},
                "job_id": _JOB_ID,
                "timeout": {
                    "type": "number",
                    "minimum": 0,
                    "description": (
                        "wait: seconds to wait at most for the job to end (default 50). output: seconds to wait "
                        "for output past offset (default 0 = what there is now)."
                    ),
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": (
                        "output: the byte offset to read from (0 = start; next_offset of the previous output call "
                        "to read on)."
                    ),
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": f"output: at most this many bytes (default {OUTPUT_PAGE}, up to 16 MiB).",
                },
                "tail": {
                    "type": "integer",
                    "minimum": 0,
                    "description": (
                        "poll/wait: how many bytes of the output's end to return (default 2000 for poll, 30000 "
                        "for wait)."
                    ),
                },
            },
            "required": ["op", "job_id"],
            "additionalProperties": False,
        },
        # cancel kills a process: not read-only, and destructive in the MCP sense
        "annotations": {
            "title": "Wait for, read or cancel a job",
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": False,
            "openWorldHint": False,
        },
    },
    {
        "name": "stat",
        "title": "Check a path",
        "description": STAT_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "File or directory path: absolute, or relative to the project directory.",
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        "annotations": {
            "title": "Check a path",
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    },
]

TOOLS.append(
    {
        "name": "ensure",
        "title": "Make the project's environments ready",
        "description": ENSURE_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": (
                        "The project directory: absolute, or relative to the project directory (default: the "
                        "project directory)."
                    ),
                },
                "targets": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["python", "node"]},
                    "description": "Only these: python, node (default: every one detected).",
                },
                "force": {
                    "type": "boolean",
                    "default": False,
                    "description": "Redo the environments even when their stamps say they are up to date.",
                },
                "wait": {
                    "type": "boolean",
                    "default": True,
                    "description": "false: start the installs and return at once with their job ids.",
                },
                "timeout": {
                    "type": "number",
                    "minimum": 1,
                    "description": (
                        f"Seconds to wait for the installs at most (default {ENSURE_WAIT:g}); they go on after it."
                    ),
                },
            },
            "additionalProperties": False,
        },
        "annotations": {
            "title": "Make the project's environments ready",
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": True,
        },
    }
)

# Which optional `job` arguments each op takes; others are refused so a mistake is not silently ignored.
_OP_ARGS = {"poll": {"tail"}, "wait": {"timeout", "tail"}, "output": {"offset", "limit", "timeout"}, "cancel": set()}


def build_action(name: str, a: dict[str, Any], resolve_path, error) -> dict[str, Any]:
    """The oh action for a checked ``jobs``/``job``/``stat`` call. ``error``: the ArgumentError class."""
    if name == "jobs":
        return actions.job("list")
    if name == "stat":
        return actions.stat(resolve_path(a["path"]))
    if name == "ensure":
        targets = a.get("targets")
        if targets is not None and (not targets or any(t not in ("python", "node") for t in targets)):
            raise error(f"ensure: 'targets' must list python and/or node, got {targets!r}.")
        return actions.ensure(
            targets=targets,
            path=resolve_path(a.get("path") or "."),
            wait=a.get("wait", True),
            force=a.get("force", False),
            timeout=float(a.get("timeout", ENSURE_WAIT)),
        )
    op = a["op"]
    extra = sorted(set(a) - {"op", "job_id"} - _OP_ARGS[op])
    if extra:
        allowed = ", ".join(sorted(_OP_ARGS[op])) or "none"
        raise error(f"job op {op!r} takes no {extra[0]!r} (its optional arguments: {allowed}).")
    if op == "output":
        return actions.job(
            op,
            a["job_id"],
            tail=a.get("tail"),
            offset=a.get("offset", 0),
            limit=min(a.get("limit", OUTPUT_PAGE), 16 * 1024 * 1024),
            wait=float(a["timeout"]) if a.get("timeout") else None,
        )
    return actions.job(
        op, a["job_id"], tail=a.get("tail"), timeout=float(a.get("timeout", WAIT_DEFAULT)) if op == "wait" else None
    )


def run_args(a: dict[str, Any], error) -> dict[str, Any]:
    """The ``background``/``force``/``job_id`` of a checked ``run`` call (``protocol.actions.run``'s keywords)."""
    args: dict[str, Any] = {}
    follow_up = a["command"] == "" or a.get("is_input", False)
    if a.get("background"):
        clash = next((k for k in ("is_input", "blocking", "reset", "job_id", "timeout") if a.get(k)), None)
        if clash:
            raise error(
                f"run: 'background' starts a new job and returns at once; it does not go with {clash!r}. "
                "Follow the job with the job tool."
            )
        if not a["command"].strip():
            raise error("run: 'background' needs a command to start.")
        args["background"] = True
        if a.get("force"):
            args["force"] = True
    elif a.get("force"):
        raise error("run: 'force' only goes with background: true (it starts a job even if the same one runs).")
    if "job_id" in a:
        if not follow_up:
            raise error(
                "run: 'job_id' names the running command a follow-up goes to (command \"\" to wait, or "
                "is_input); a new command gets its own id."
            )
        args["job_id"] = a["job_id"]
    return args


def write_mode(a: dict[str, Any]) -> str | None:
    """The write mode to send: None for the default (overwrite), so the frame stays OpenHands' own."""
    return a["mode"] if a.get("mode", "overwrite") != "overwrite" else None


# ------------------------------------------------------------------------------------ results
def background_result(md: dict[str, Any], result_cls):
    """The answer to ``run`` with background: the job's id and how to follow it (MCP tool names)."""
    job_id = md.get("job_id")
    head, again = joblist.started(md)
    text = (
        f"{head}\nFollow it with the job tool and job_id {job_id!r}: op wait (until it ends; exit code), op output "
        "with offset 0 and then next_offset (the whole log, page by page), op poll (state now), op cancel."
    )
    structured = {
        "job_id": job_id,
        "background": True,
        "running": True,
        "exit_code": None,
        "already_running": again,
        "pid": md.get("pid"),
        "working_dir": md.get("working_dir"),
    }
    return result_cls(text, structured)


def job_result(obs: dict[str, Any], result_cls):
    extras = obs.get("extras") or {}
    content = obs.get("content") or ""
    op = extras.get("op")
    if op == "list":
        jobs = extras.get("jobs") or []
        return result_cls(
            content or "No jobs: nothing runs in the background or in your shell.", {"op": "list", "jobs": jobs}
        )
    record = extras.get("job") or {}
    state, code, jid = record.get("state"), record.get("exit_code"), record.get("job_id")
    structured: dict[str, Any] = {"op": op, "job_id": jid, "state": state, "exit_code": code, "job": record}
    if op == "output":
        for key in ("offset", "next_offset", "size", "dropped", "eof"):
            structured[key] = extras.get(key)
        trailer = joblist.output_trailer(jid, state, code, extras)
        if extras.get("dropped"):
            trailer += (
                f"\n[The oldest {extras['dropped']} bytes were dropped from the job's log (it keeps the newest 16 "
                "MiB).]"
            )
        return result_cls(_join(content, trailer), structured)
    if op == "cancel":
        return result_cls(content or f"Job {jid} {state}.", structured)
    if op == "wait":
        structured["timed_out"] = bool(extras.get("timed_out"))
    if state == "RUNNING":
        trailer = (
            f"[job {jid} still RUNNING after the wait: call job wait again, or job output to read it]"
            if structured.get("timed_out")
            else f"[job {jid} RUNNING]"
        )
    else:
        trailer = f"[job {jid} {state}, exit code: {code}]"
    return result_cls(_join(content, trailer), structured, is_error=state in FAILED_STATES)


def ensure_result(obs: dict[str, Any], result_cls):
    extras = dict(obs.get("extras") or {})
    return result_cls(obs.get("content") or "", extras, is_error=extras.get("state") == "failed")


def stat_result(obs: dict[str, Any], result_cls):
    return result_cls(obs.get("content") or "", dict(obs.get("extras") or {}))


def write_result(obs: dict[str, Any], mode: str, result_cls):
    """``create`` on an existing file is a normal observation in the protocol; here it is an error the agent sees."""
    path = (obs.get("extras") or {}).get("path", "")
    content = obs.get("content") or ""
    if mode == "create" and "already exists" in content:
        return result_cls(
            content + " Read it first, or use mode overwrite to replace it.",
            {"path": path, "mode": mode, "written": False},
            is_error=True,
        )
    verb = {"create": "Created", "append": "Appended to"}.get(mode, "Wrote")
    return result_cls(
        f"{verb} {path}." + (f"\n{content}" if content else ""), {"path": path, "mode": mode, "written": True}
    )


def _join(text: str, trailer: str) -> str:
    return text + ("" if not text or text.endswith("\n") else "\n") + trailer
