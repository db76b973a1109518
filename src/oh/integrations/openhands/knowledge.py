"""``editor_knowledge``: an SDK tool for what only an editor knows (docs/protocol.md §3.6).

Diagnostics, workspace symbols, definition, references, showing a file to the user, and the user's
open editors, answered by VS Code's language services when the backend runs ``--runtime vscode``.
The local runtime has no language server: it answers ``symbols`` with ripgrep (and says so) and
refuses the rest with a message naming ``oh start --runtime vscode``, which the model sees as an error.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from openhands.sdk.tool import Action, Observation, ToolDefinition, ToolExecutor
from pydantic import Field

from ...client import editorinfo
from .executor import LinkedExecutor, own_tool

if TYPE_CHECKING:
    from openhands.sdk.conversation import LocalConversation
    from openhands.sdk.conversation.state import ConversationState

NAME = "editor_knowledge"
KnowledgeOp = Literal["diagnostics", "symbols", "definition", "references", "open", "editors"]
_NEEDS_POSITION = ("definition", "references")
_WAIT = 90.0  # the backend bounds a diagnostics wait at 60 s; a symbol search on a large tree takes a while

DESCRIPTION = """Ask the user's editor (VS Code's language servers) what a shell cannot tell you.

* `diagnostics` (optional `path`; without it the whole workspace): the errors and warnings the Problems panel shows. \
Call it after editing code to see the type errors you introduced, before a slow build. Waits (at most `wait` seconds) \
for the language servers to settle after your edit; `severity` = the least severe level (default warning).
* `symbols` with `query`: functions, classes, methods... whose name matches, with path:line:col.
* `definition` with `path`, `line`, `column` (1-based) of a use of a name: where it is defined.
* `references` with `path`, `line`, `column`: every use of that symbol (before renaming or changing a signature).
* `open` with `path` (optional `line`, `column`, `end_line`, `end_column`): show the file to the user there (selecting \
the range). It does not return the text.
* `editors`: the files the user has open, the active one, the selection and unsaved changes ("this function" = the \
selection).
These need oh's VS Code runtime (`oh start --runtime vscode`); with the local runtime only `symbols` answers (by text \
search, and it says so), the others answer with an error saying so."""


class EditorKnowledgeAction(Action):
    """One question to the editor."""

    op: KnowledgeOp = Field(description="diagnostics | symbols | definition | references | open | editors")
    path: str | None = Field(
        default=None,
        description=(
            "diagnostics (optional), definition, references, open: the file (absolute, or relative to the working "
            "directory)."
        ),
    )
    line: int | None = Field(default=None, ge=1, description="definition, references, open: 1-based line.")
    column: int | None = Field(
        default=None, ge=1, description="definition, references, open: 1-based column in that line."
    )
    end_line: int | None = Field(default=None, ge=1, description="open: select up to this line.")
    end_column: int | None = Field(default=None, ge=1, description="open: select up to this column of end_line.")
    query: str | None = Field(default=None, description="symbols: part of the symbol's name.")
    limit: int | None = Field(
        default=None, ge=1, le=1000, description="symbols: at most this many results (default 100)."
    )
    severity: Literal["error", "warning", "info", "hint"] | None = Field(
        default=None, description="diagnostics: the least severe level reported (default warning)."
    )
    wait: float | None = Field(
        default=None,
        ge=0,
        le=60,
        description="diagnostics: seconds to wait at most for the language servers to settle.",
    )
    include_declaration: bool | None = Field(
        default=None, description="references: include the declaration itself (default true)."
    )


class EditorKnowledgeObservation(Observation):
    """The editor's answer: ``content`` for the model, ``data`` the structured answer (the observation's extras)."""

    op: str = Field(description="The question asked.")
    data: dict[str, Any] = Field(
        default_factory=dict, description="The structured answer (diagnostics, symbols, locations, editors...)."
    )
    error_id: str | None = Field(
        default=None, description="Why it was refused, e.g. TOOL_UNSUPPORTED (local runtime), NO_EDITOR."
    )


def _frame(action: EditorKnowledgeAction, resolve) -> dict[str, Any] | str:
    """The oh action for a call, or what is missing (a refusal the model can fix)."""
    op = action.op
    if op in _NEEDS_POSITION:
        if not (action.path and action.line and action.column):
            return f"{op} needs `path`, `line` and `column` (1-based) of the name."
        if op == "definition":
            return editorinfo.definition(resolve(action.path), action.line, action.column)
        return editorinfo.references(
            resolve(action.path), action.line, action.column, include_declaration=action.include_declaration
        )
    if op == "symbols":
        if not (action.query or "").strip():
            return "symbols needs `query`: part of the name to look for."
        return editorinfo.symbols(action.query or "", limit=action.limit)
    if op == "open":
        if not action.path:
            return "open needs `path`: the file to show."
        return editorinfo.open_file(
            resolve(action.path),
            line=action.line,
            column=action.column,
            end_line=action.end_line,
            end_column=action.end_column,
        )
    if op == "editors":
        return editorinfo.editors()
    return editorinfo.diagnostics(
        resolve(action.path) if action.path else None, severity=action.severity, wait=action.wait
    )


class EditorKnowledgeExecutor(LinkedExecutor, ToolExecutor[EditorKnowledgeAction, EditorKnowledgeObservation]):
    def __call__(
        self, action: EditorKnowledgeAction, conversation: "LocalConversation | None" = None
    ) -> EditorKnowledgeObservation:
        frame = _frame(action, self._resolve)
        if isinstance(frame, str):
            return EditorKnowledgeObservation.from_text(text=frame, op=action.op, error_id="BAD_REQUEST", is_error=True)
        obs = self.send(frame, timeout=_WAIT)
        extras = dict(obs.get("extras") or {})
        if obs.get("observation") == "error":
            error_id = extras.get("error_id") or "ERROR"
            return EditorKnowledgeObservation.from_text(
                text=f"{error_id}: {obs.get('content') or ''}", op=action.op, error_id=error_id, is_error=True
            )
        return EditorKnowledgeObservation.from_text(
            text=obs.get("content") or f"{action.op}: no results.", op=action.op, data=extras
        )

    def _resolve(self, path: str) -> str:
        # Relative paths are the conversation's working directory's, as for the file editor.
        return path if os.path.isabs(path) else os.path.normpath(os.path.join(self._workdir, path))


class EditorKnowledgeTool(ToolDefinition[EditorKnowledgeAction, EditorKnowledgeObservation]):
    """Editor knowledge as an SDK tool (``Tool(name="editor_knowledge")`` after ``install()``)."""

    name = NAME

    @classmethod
    def create(cls, conv_state: "ConversationState") -> Sequence["EditorKnowledgeTool"]:  # type: ignore[override]
        # `open` changes what the user sees, nothing on disk: not read-only, never destructive.
        return own_tool(
            cls,
            NAME,
            DESCRIPTION,
            EditorKnowledgeAction,
            EditorKnowledgeObservation,
            EditorKnowledgeExecutor(conv_state),
            destructive=False,
            idempotent=True,
            open_world=False,
        )
