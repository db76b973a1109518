"""Editor knowledge actions (docs/protocol.md §3.6): what only an editor knows.

``diagnostics``, ``open``, ``editors``, ``symbols``, ``definition``, ``references`` are oh's own
action kinds (not OpenHands kinds). Pure: argument validation and the observation builder; the
VS Code extension executes them (extension/src/executors/knowledge.ts), the local runtime refuses
them (or answers ``symbols`` with ripgrep, saying so). Positions are 1-based lines and columns,
like the ``path:line:col`` people type; editors convert.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from .errors import ErrorId, ProtocolError
from .observation import observation

SEVERITIES = ("error", "warning", "info", "hint")  # most to least severe
MAX_SYMBOL_LIMIT = 1000
MAX_SETTLE_WAIT = 60.0  # seconds: diagnostics never waits longer than this for language servers


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _require(cond: bool, msg: str, cause: int | None) -> None:
    if not cond:
        raise ProtocolError(ErrorId.BAD_REQUEST, msg, cause)


def _path(args: dict[str, Any], cause: int | None, *, required: bool) -> None:
    p = args.get("path")
    if p is None and not required:
        return
    if not isinstance(p, str) or p == "":
        raise ProtocolError(ErrorId.BAD_REQUEST, "args.path must be a non-empty string.", cause)
    _require("\x00" not in p, "args.path must not contain NUL bytes.", cause)


def check_knowledge_args(kind: str, args: dict[str, Any], cause: int | None) -> None:
    """Validate the args of a knowledge action; raises ProtocolError(BAD_REQUEST) saying what to send."""
    if kind == "diagnostics":
        _path(args, cause, required=False)
        sev = args.get("severity")
        _require(
            sev is None or sev in SEVERITIES,
            f"args.severity must be one of {', '.join(SEVERITIES)} (the least severe level to report).",
            cause,
        )
        wait = args.get("wait")
        _require(
            wait is None
            or (isinstance(wait, (int, float)) and not isinstance(wait, bool) and 0 <= wait <= MAX_SETTLE_WAIT),
            (
                f"args.wait must be a number of seconds between 0 and {MAX_SETTLE_WAIT:g} (how long to wait for "
                "language servers at most)."
            ),
            cause,
        )
    elif kind == "open":
        _path(args, cause, required=True)
        for key in ("line", "column", "end_line", "end_column"):
            v = args.get(key)
            _require(
                v is None or (_is_int(v) and v >= 1), f"args.{key} must be an integer >= 1 (1-based) or null.", cause
            )
        _require(
            not (args.get("end_line") is not None and args.get("line") is None), "args.end_line needs args.line.", cause
        )
        pf = args.get("preserve_focus")
        _require(pf is None or isinstance(pf, bool), "args.preserve_focus must be a boolean.", cause)
    elif kind == "editors":
        pass
    elif kind == "symbols":
        q = args.get("query")
        _require(
            isinstance(q, str) and len(q) <= 500,
            'args.query must be a string (up to 500 characters; "" lists what the language servers offer).',
            cause,
        )
        lim = args.get("limit")
        _require(
            lim is None or (_is_int(lim) and 1 <= lim <= MAX_SYMBOL_LIMIT),
            f"args.limit must be an integer between 1 and {MAX_SYMBOL_LIMIT}.",
            cause,
        )
    elif kind in ("definition", "references"):
        _path(args, cause, required=True)
        for key in ("line", "column"):
            v = args.get(key)
            _require(_is_int(v) and v >= 1, f"args.{key} must be an integer >= 1 (1-based).", cause)
        inc = args.get("include_declaration")
        _require(inc is None or isinstance(inc, bool), "args.include_declaration must be a boolean.", cause)


def local_refusal(kind: str) -> str:
    """What the local runtime says for a knowledge action it cannot answer honestly."""
    return (
        f"'{kind}' needs an editor's language services: start the backend with `oh start --runtime vscode` "
        "(and open the workspace in VS Code with the oh extension). The local runtime has no language server."
    )


def knowledge_observation(kind: str, cause: int | None, content: str, extras: dict[str, Any]) -> dict[str, Any]:
    """The observation of a knowledge action: ``observation`` = the action kind, ``content`` a text
    for the agent to read, ``extras`` the structured answer (docs/protocol.md §3.6)."""
    return observation(kind, cause, content, content.split("\n", 1)[0][:200], extras)


def summarize_knowledge(kind: str, args: dict[str, Any]) -> str:
    """One line for the live view and the trace (no file contents)."""
    if kind == "symbols":
        return f"symbols {args.get('query', '')!s}"
    if kind == "editors":
        return "editors"
    path = args.get("path") or ("workspace" if kind == "diagnostics" else "")
    line = args.get("line")
    if line is not None:
        path = f"{path}:{line}" + (f":{args['column']}" if args.get("column") is not None else "")
    return f"{kind} {path}"
