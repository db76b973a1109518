"""The MCP tools for editor knowledge (docs/protocol.md §3.6): ``diagnostics``, ``open``, ``editors``,
``symbols``, ``definition``, ``references``.

Pure, like ``tools.py`` (which lists these after its own four and routes calls here). The
descriptions teach when each tool pays off: diagnostics after an edit, definition/references instead
of grepping, ``open`` to show the user something.
"""

from __future__ import annotations

from typing import Any

from ..protocol import actions

NAMES = ("diagnostics", "open", "editors", "symbols", "definition", "references")

_PATH = {"type": "string", "minLength": 1, "description": "File path: absolute, or relative to the project directory."}
_LINE = {"type": "integer", "minimum": 1, "description": "1-based line number."}
_COLUMN = {"type": "integer", "minimum": 1, "description": "1-based column (character) in that line."}
_NEEDS_VSCODE = (
    "Needs oh's vscode runtime (the user's VS Code with the oh extension); elsewhere it answers TOOL_UNSUPPORTED."
)
_READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}

DIAGNOSTICS_DESCRIPTION = f"""Language-server errors and warnings (what VS Code's Problems panel shows) for one file, \
or for the whole workspace without `path`.

Call it after you change code to see the type errors and lint warnings you introduced, before running a slow build: it \
waits until the language servers have settled after your edit (at most `wait` seconds). Each entry is `path:line:col: \
severity message (source code)`; structuredContent has the list. Tip: the `edit` and `write` tools take `diagnostics: \
true` to get the edited file's diagnostics in the same call. {_NEEDS_VSCODE}"""

OPEN_DESCRIPTION = f"""Show a file to the user in their editor, scrolled to `line` (and with `end_line`/`end_column`, \
that range selected).

Use it to point the user at something you found or changed ("look here"). It does not return the file's text (use \
`read`). {_NEEDS_VSCODE}"""

EDITORS_DESCRIPTION = f"""What the user has open in the editor: every open file, which one is active, the selection \
(with the selected text, cut at 2,000 characters) and which files have unsaved changes.

Use it to learn what the user is looking at or has selected when they say "this function" or "here". {_NEEDS_VSCODE}"""

_SYMBOLS_FALLBACK = _NEEDS_VSCODE.replace(
    "answers TOOL_UNSUPPORTED", "answers with ripgrep text matches of definition-like lines and says so"
)
SYMBOLS_DESCRIPTION = f"""Search the workspace's symbols (functions, classes, methods, variables...) by name through \
the language servers, like VS Code's "Go to Symbol in Workspace" (Ctrl+T).

Faster and more precise than grepping for a definition: each result is `path:line:col kind name (container)`. Matching \
is fuzzy (the language server's). \
{_SYMBOLS_FALLBACK}"""

DEFINITION_DESCRIPTION = f"""Where the symbol at a position is defined (VS Code's "Go to Definition"): give the file, \
1-based line and column of a use of the name.

Returns the definition locations with the line's text. Use it to follow a call to its implementation without guessing \
file names. {_NEEDS_VSCODE}"""

REFERENCES_DESCRIPTION = f"""Every reference to the symbol at a position (VS Code's "Find All References"): give the \
file, 1-based line and column of the name.

Use it before renaming or changing a function's signature, to find every caller. Returns locations with each line's \
text (capped at 500). {_NEEDS_VSCODE}"""

TOOLS: list[dict[str, Any]] = [
    {
        "name": "diagnostics",
        "title": "Language-server diagnostics",
        "description": DIAGNOSTICS_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {
                    **_PATH,
                    "description": "A file; omit for every file the language servers report on in the workspace.",
                },
                "severity": {
                    "type": "string",
                    "enum": ["error", "warning", "info", "hint"],
                    "default": "warning",
                    "description": "The least severe level to report (default warning: errors and warnings).",
                },
                "wait": {
                    "type": "number",
                    "minimum": 0,
                    "description": (
                        "Seconds to wait at most for the language servers to settle (default: a few seconds; 0 = "
                        "what they have now)."
                    ),
                },
            },
            "additionalProperties": False,
        },
        "annotations": {"title": "Language-server diagnostics", **_READ_ONLY},
    },
    {
        "name": "open",
        "title": "Show a file to the user",
        "description": OPEN_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "line": _LINE,
                "column": _COLUMN,
                "end_line": {**_LINE, "description": "Select up to this 1-based line."},
                "end_column": {**_COLUMN, "description": "Select up to this 1-based column of end_line."},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        "annotations": {
            "title": "Show a file to the user",
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    },
    {
        "name": "editors",
        "title": "The user's open editors",
        "description": EDITORS_DESCRIPTION,
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
        "annotations": {"title": "The user's open editors", **_READ_ONLY},
    },
    {
        "name": "symbols",
        "title": "Search workspace symbols",
        "description": SYMBOLS_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Part of the symbol's name."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "At most this many results (default 100, up to 1000).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "annotations": {"title": "Search workspace symbols", **_READ_ONLY},
    },
    {
        "name": "definition",
        "title": "Go to definition",
        "description": DEFINITION_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {"path": _PATH, "line": _LINE, "column": _COLUMN},
            "required": ["path", "line", "column"],
            "additionalProperties": False,
        },
        "annotations": {"title": "Go to definition", **_READ_ONLY},
    },
    {
        "name": "references",
        "title": "Find all references",
        "description": REFERENCES_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "line": _LINE,
                "column": _COLUMN,
                "include_declaration": {
                    "type": "boolean",
                    "default": True,
                    "description": "Include the declaration itself.",
                },
            },
            "required": ["path", "line", "column"],
            "additionalProperties": False,
        },
        "annotations": {"title": "Find all references", **_READ_ONLY},
    },
]


def build_action(name: str, a: dict[str, Any], resolve_path) -> dict[str, Any]:
    """The oh action for a checked knowledge tool call (``resolve_path`` makes paths absolute)."""
    args = dict(a)
    if name == "symbols" and "limit" in args:
        args["limit"] = min(args["limit"], 1000)
    if name == "diagnostics" and "wait" in args:
        args["wait"] = min(float(args["wait"]), 60.0)  # the protocol's bound
    if "path" in args:
        args["path"] = resolve_path(args["path"])
    return actions.knowledge(name, args)


def structured(obs: dict[str, Any]) -> dict[str, Any]:
    """structuredContent: the observation's extras (already the structured answer)."""
    return dict(obs.get("extras") or {})
