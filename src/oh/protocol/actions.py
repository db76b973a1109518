"""The one builder of action frames (the sender's half of ``oh.protocol.events``): every surface that sends
an action (``oh.client``, the CLI's verbs in ``oh.fastpath``, ``oh mcp``) builds it here, so the frames
cannot drift apart.

Stdlib only and free of imports (``oh run`` loads it on its fast path: no orjson, no dataclasses). Each
builder returns the frame without its ``id`` (the sender numbers its own leg). The OpenHands fields
(``thought``, ``security_risk`` = -1, ``is_static``, ``hidden``, ``confirmation_state``, ``impl_source``)
are always there, so a frame built with the defaults is what OpenHands itself sends; oh's additions
(docs/protocol.md: ``reset``, ``env``, ``max_output``, ``exclusive``, ``background``, ``force``, ``job_id``,
``encoding``, write ``mode``, ``diagnostics``, the top-level ``security_risk`` label) only when given.
"""

from __future__ import annotations

from typing import Any

WRITE_MODES = ("overwrite", "create", "append")


def _frame(
    kind: str, args: dict[str, Any], timeout: float | None = None, security_risk: str | None = None
) -> dict[str, Any]:
    action: dict[str, Any] = {"action": kind, "args": args}
    if timeout is not None:
        action["timeout"] = float(timeout)
    if (
        security_risk is not None
    ):  # OpenHands keeps an int in args.security_risk (-1 = unset); oh's label rides at the top level
        action["security_risk"] = str(security_risk)
    return action


def run(
    command: str,
    *,
    is_input: bool = False,
    blocking: bool = False,
    cwd: str | None = None,
    timeout: float | None = None,
    reset: bool = False,
    env: dict[str, str] | None = None,
    max_output: int | None = None,
    exclusive: bool = False,
    background: bool = False,
    force: bool = False,
    job_id: str | None = None,
    security_risk: str | None = None,
    unsandboxed: str | None = None,
    network: str | None = None,
) -> dict[str, Any]:
    """A ``run`` action: a command (foreground, or ``background`` for a job), input for the running one
    (``is_input``), or an empty command to wait for more output (``job_id``: of that job).
    ``unsandboxed``: the reason to run it outside the agent shell's sandbox; ``network``: the reason it needs
    the network (the same sandbox otherwise); asked, README "Sandbox"."""
    args: dict[str, Any] = {
        "command": command,
        "is_input": is_input,
        "thought": "",
        "blocking": blocking,
        "is_static": False,
        "cwd": cwd,
        "hidden": False,
        "confirmation_state": "confirmed",
        "security_risk": -1,
    }
    for key, value in (("reset", reset), ("exclusive", exclusive), ("background", background), ("force", force)):
        if value:
            args[key] = True
    if env:
        args["env"] = dict(env)
    if max_output is not None:
        args["max_output"] = int(max_output)
    if job_id is not None:
        args["job_id"] = job_id
    if unsandboxed is not None:
        args["sandbox"], args["reason"] = "off", unsandboxed
    elif network is not None:
        args["sandbox"], args["reason"] = "network", network
    return _frame("run", args, timeout, security_risk)


def read(
    path: str,
    *,
    start: int = 0,
    end: int = -1,
    view_range: list[int] | None = None,
    encoding: str | None = None,
    security_risk: str | None = None,
) -> dict[str, Any]:
    args: dict[str, Any] = {
        "path": path,
        "start": start,
        "end": end,
        "thought": "",
        "security_risk": -1,
        "impl_source": "oh_aci",
        "view_range": view_range,
    }
    if encoding is not None:
        args["encoding"] = encoding
    return _frame("read", args, security_risk=security_risk)


def write(
    path: str,
    content: str,
    *,
    mode: str | None = None,
    encoding: str | None = None,
    diagnostics: bool = False,
    security_risk: str | None = None,
    if_version: str | None = None,
    force: bool = False,
    wait_claim: float | None = None,
) -> dict[str, Any]:
    """``mode`` (overwrite | create | append) is sent when given; without it the backend overwrites.
    ``if_version``/``force``/``wait_claim``: several agents (docs/protocol.md §3.18), sent when given."""
    if mode is not None and mode not in WRITE_MODES:
        raise ValueError(f"mode must be one of {', '.join(WRITE_MODES)}")
    args: dict[str, Any] = {"path": path, "content": content, "start": 0, "end": -1, "thought": "", "security_risk": -1}
    if mode is not None:
        args["mode"] = mode
    if encoding is not None:
        args["encoding"] = encoding
    if diagnostics:
        args["diagnostics"] = True
    _precondition(args, if_version, force, wait_claim)
    return _frame("write", args, security_risk=security_risk)


def edit(
    path: str,
    command: str,
    *,
    file_text: str | None = None,
    old_str: str | None = None,
    new_str: str | None = None,
    insert_line: int | None = None,
    view_range: list[int] | None = None,
    diagnostics: bool = False,
    security_risk: str | None = None,
    if_version: str | None = None,
    force: bool = False,
    wait_claim: float | None = None,
) -> dict[str, Any]:
    """OpenHands' file editor commands: view | create | str_replace | insert | undo_edit."""
    args: dict[str, Any] = {
        "path": path,
        "command": command,
        "file_text": file_text,
        "old_str": old_str,
        "new_str": new_str,
        "insert_line": insert_line,
        "content": "",
        "start": 1,
        "end": -1,
        "thought": "",
        "security_risk": -1,
        "impl_source": "oh_aci",
    }
    if view_range is not None:
        args["view_range"] = view_range
    if diagnostics:
        args["diagnostics"] = True
    _precondition(args, if_version, force, wait_claim)
    return _frame("edit", args, security_risk=security_risk)


def _precondition(args: dict[str, Any], if_version: str | None, force: bool, wait_claim: float | None) -> None:
    """A write/edit's several-agents arguments (§3.18), only when given: a default frame stays OpenHands'."""
    if if_version:
        args["if_version"] = if_version
    if force:
        args["force"] = True
    if wait_claim:
        args["wait_claim"] = wait_claim


def claim(paths: list[str], *, ttl: float | None = None) -> dict[str, Any]:
    """Claim ``paths`` (files, directories or globs) for ``ttl`` seconds (§3.18)."""
    args: dict[str, Any] = {"paths": list(paths)}
    if ttl is not None:
        args["ttl"] = ttl
    return _frame("claim", args)


def release(claim_id: str | None = None) -> dict[str, Any]:
    """Release one claim of this connection's, or all of them (§3.18)."""
    return _frame("release", {"claim_id": claim_id} if claim_id else {})


def job(op: str, job_id: str | None = None, *, timeout: float | None = None, **args: Any) -> dict[str, Any]:
    """A ``job`` action (list | poll | wait | output | cancel); ``args`` given as None are left out."""
    body: dict[str, Any] = {"op": op, **{k: v for k, v in args.items() if v is not None}}
    if job_id is not None:
        body["job_id"] = job_id
    return _frame("job", body, timeout)


def stat(path: str) -> dict[str, Any]:
    return _frame("stat", {"path": path})


def ensure(
    *,
    targets: list[str] | None = None,
    path: str | None = None,
    wait: bool = True,
    force: bool = False,
    timeout: float | None = None,
) -> dict[str, Any]:
    """The ``ensure`` action (docs/protocol.md §3.14): bring the project's environments to ready; only what
    differs from the defaults (all targets, the workspace, wait, no force) is sent."""
    args: dict[str, Any] = {}
    if targets:
        args["targets"] = list(dict.fromkeys(targets))
    if path is not None:
        args["path"] = path
    if not wait:
        args["wait"] = False
    if force:
        args["force"] = True
    return _frame("ensure", args, timeout)


# ----------------------------------------------------------------- editor knowledge (§3.6)
def _clean(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if v is not None}


def diagnostics(path: str | None = None, *, severity: str | None = None, wait: float | None = None) -> dict[str, Any]:
    return knowledge("diagnostics", _clean({"path": path, "severity": severity, "wait": wait}))


def open_file(
    path: str,
    *,
    line: int | None = None,
    column: int | None = None,
    end_line: int | None = None,
    end_column: int | None = None,
    preserve_focus: bool | None = None,
) -> dict[str, Any]:
    return knowledge(
        "open",
        _clean(
            {
                "path": path,
                "line": line,
                "column": column,
                "end_line": end_line,
                "end_column": end_column,
                "preserve_focus": preserve_focus,
            }
        ),
    )


def editors() -> dict[str, Any]:
    return knowledge("editors", {})


def symbols(query: str, *, limit: int | None = None) -> dict[str, Any]:
    return knowledge("symbols", _clean({"query": query, "limit": limit}))


def definition(path: str, line: int, column: int) -> dict[str, Any]:
    return knowledge("definition", {"path": path, "line": line, "column": column})


def references(path: str, line: int, column: int, *, include_declaration: bool | None = None) -> dict[str, Any]:
    return knowledge(
        "references",
        _clean({"path": path, "line": line, "column": column, "include_declaration": include_declaration}),
    )


def knowledge(kind: str, args: dict[str, Any]) -> dict[str, Any]:
    """A knowledge action of ``kind`` with ``args`` as given (``oh mcp`` passes a checked tool call's)."""
    return _frame(kind, args)
