"""The MCP tools for history and undo (issue 29, docs/protocol.md §3.15): ``history`` lists this agent's own
actions and the files each changed (or shows one as a diff), ``undo`` reverts one of them.

Pure, like ``tools.py`` (which lists these and checks their arguments): the request frame and the result
shape. ``server.py`` sends the frame on the backend's control leg with the agent token. The rules are the
backend's (``backend/historyctl.py``, ``protocol.history.select_for_undo``): an agent undoes only its own
entries, none with an ambiguous change, and no file anyone changed since (no merge); here the tools only
name the agent (the name its actions carry) and never show another agent's entry.
"""

from __future__ import annotations

from typing import Any

NAMES = ("history", "undo")
MAX_DIFF = 30_000  # characters of a diff in the result: the size of a `run` result (MCP clients cut larger ones)

_ENTRY = {"type": "integer", "minimum": 1, "description": "An entry number from the history tool's list."}

HISTORY_DESCRIPTION = """List your own actions that changed files in the workspace (history is on unless the user \
turned it off), newest last: entry number, kind (run, write, edit, undo), the command or path, how many files it \
created, changed and deleted.

With `entry`: that action's changes as a unified diff (which files, before and after). Use it to see what one of your \
commands really changed (a `sed -i`, a code generator, an install) before you undo it or build on it. Only your own \
actions are listed and shown."""

UNDO_DESCRIPTION = """Revert one of your own actions (an entry from the history tool): every file it created, changed \
or deleted goes back to how it was before it (all files or none). The undo is itself an entry: undoing it redoes the \
action.

Refused (nothing is changed) when the entry is another agent's or the user's, when a change in it may have been made \
by another action running at the same time (ambiguous), or when anyone changed one of its files since: you never undo \
past the user's later edits. The refusal names the file: read it, and change it forward instead, or ask the user (`oh \
undo` can merge). `to: true` also reverts every later entry (all must be yours)."""

TOOLS: list[dict[str, Any]] = [
    {
        "name": "history",
        "title": "Your actions' file changes",
        "description": HISTORY_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "entry": {**_ENTRY, "description": "Show this entry's changes as a diff (omit: list your entries)."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "List at most this many (newest; default 50).",
                },
            },
            "additionalProperties": False,
        },
        "annotations": {
            "title": "Your actions' file changes",
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    },
    {
        "name": "undo",
        "title": "Undo one of your actions",
        "description": UNDO_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "entry": _ENTRY,
                "to": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also revert every later entry (back to before this one); all must be yours.",
                },
            },
            "required": ["entry"],
            "additionalProperties": False,
        },
        "annotations": {
            "title": "Undo one of your actions",
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": False,
            "openWorldHint": False,
        },
    },
]


def request(name: str, args: dict[str, Any], agent: str) -> dict[str, Any]:
    """The ``history`` control frame of a tool call (the agent named: the backend keeps it to its own)."""
    if name == "undo":
        return {"type": "history", "op": "undo", "entry": args["entry"], "agent": agent, "to": bool(args.get("to"))}
    if "entry" in args:
        return {"type": "history", "op": "show", "entry": args["entry"]}
    return {"type": "history", "op": "list", "agent": agent, "limit": args.get("limit", 50)}


def refusal(answer: dict[str, Any]) -> tuple[str, str] | None:
    """(message, error id) when the backend refused, else None."""
    if answer.get("type") == "error":
        return str(answer.get("message") or "refused"), str(answer.get("error_id") or "REFUSED")
    if answer.get("ok") is False:
        return str(answer.get("message") or "refused"), str(answer.get("error") or "REFUSED")
    return None


def _line(e: dict[str, Any]) -> str:
    changed = e.get("files", 0) - e.get("created", 0) - e.get("deleted", 0)
    amb = f", {e['ambiguous']} ambiguous" if e.get("ambiguous") else ""
    review = f", {e['review']} by the user" if e.get("review") in ("kept", "reverted") else ""
    return (
        f"{e.get('id')}: {e.get('kind')} {str(e.get('what', ''))[:200]} — {e.get('created', 0)} created, "
        f"{changed} changed, {e.get('deleted', 0)} deleted{amb}{review} ({e.get('status')})"
    )


def result(name: str, args: dict[str, Any], answer: dict[str, Any], agent: str) -> tuple[str, dict[str, Any], bool]:
    """(text, structuredContent, is_error) of an answered call."""
    if name == "undo":
        files = answer.get("files") or []
        if answer.get("entry") is None:
            return "Nothing to undo: that entry changed no files.", {"files": []}, False
        text = (
            f"Undone: {len(files)} file(s) restored ({', '.join(files[:20])}{' ...' if len(files) > 20 else ''}). "
            f"This undo is entry {answer['entry']}: undo it to redo."
        )
        return text, {"entry": answer["entry"], "undoes": answer.get("undoes", []), "files": files}, False
    if "entry" in args:
        e = answer.get("entry") or {}
        if e.get("agent") != agent:
            return f"Entry {args['entry']} is not yours: the history tool shows only your own actions.", {}, True
        diff = str(e.get("diff", ""))
        cut = f"\n[... diff cut at {MAX_DIFF} characters]" if len(diff) > MAX_DIFF else ""
        changes = [{k: c.get(k) for k in ("path", "change", "renamed")} for c in e.get("changes", [])]
        return _line(e) + "\n" + diff[:MAX_DIFF] + cut, {"entry": e.get("id"), "changes": changes}, False
    rows = answer.get("entries") or []
    if not rows:
        return "No entries: none of your actions has changed a file yet.", {"entries": []}, False
    keep = ("id", "kind", "what", "files", "created", "deleted", "ambiguous", "status", "review")
    return "\n".join(_line(e) for e in rows), {"entries": [{k: e.get(k) for k in keep} for e in rows]}, False
