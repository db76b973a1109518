"""The SDK's ``file_editor`` tool, executed by the oh backend (OHEditor semantics, SDK error texts)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from openhands.sdk.llm import ImageContent, TextContent
from openhands.sdk.tool import ToolExecutor
from openhands.tools.file_editor.definition import FileEditorAction, FileEditorObservation, FileEditorTool
from openhands.tools.file_editor.exceptions import EditorToolParameterMissingError

from ...client import actions
from . import link as links
from .common import conversation_link, security_risk_of

if TYPE_CHECKING:
    from openhands.sdk.conversation import LocalConversation
    from openhands.sdk.conversation.state import ConversationState

# The SDK's editor shows these as images (openhands/tools/file_editor/editor.py IMAGE_EXTENSIONS).
IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp"}
_WAIT = 300.0
# Parameters each command needs, in the order the SDK's editor checks them (its message for a missing one
# is reused verbatim; oh's protocol error would name `args.*`).
_REQUIRED = {"create": ("file_text",), "str_replace": ("old_str", "new_str"), "insert": ("insert_line", "new_str")}


class OhFileEditorExecutor(links.LinkedExecutor, ToolExecutor[FileEditorAction, FileEditorObservation]):
    def __call__(
        self, action: FileEditorAction, conversation: "LocalConversation | None" = None
    ) -> FileEditorObservation:
        for param in _REQUIRED.get(action.command, ()):
            if getattr(action, param) is None:
                return FileEditorObservation.from_text(
                    text=EditorToolParameterMissingError(action.command, param).message,
                    command=action.command,
                    is_error=True,
                )
        risk = security_risk_of(action, conversation)
        if action.command == "view" and Path(action.path).suffix.lower() in IMAGE_EXTENSIONS:
            return self._view_image(action, risk)
        # Several agents (docs/protocol.md §3.18): the version this conversation last saw of the file, so a change
        # to a file someone else changed since is refused (STALE, with the diff) even across a reconnection.
        versions = self.versions
        seen = versions.get(action.path) if action.command != "view" else None
        frame = actions.edit(
            action.path,
            action.command,
            file_text=action.file_text,
            old_str=action.old_str,
            new_str=action.new_str,
            insert_line=action.insert_line,
            view_range=action.view_range,
            security_risk=risk,
            if_version=seen,
        )
        # Review mode: a write/edit waits for the user too (the backend's deadline grows by as much).
        obs = self.link.send(
            frame, timeout=_WAIT + (self.link.session.review_timeout if action.command != "view" else 0.0)
        )
        if obs.get("observation") == "error":
            return FileEditorObservation.from_text(text=obs.get("content") or "", command=action.command, is_error=True)
        extras: dict[str, Any] = obs.get("extras") or {}
        if isinstance(extras.get("version"), str):
            versions[action.path] = extras["version"]
        fields: dict[str, Any] = {"path": extras.get("path") or action.path}
        if obs.get("observation") == "edit":
            fields["prev_exist"] = bool(extras.get("prev_exist", True))
            if action.command != "view":
                fields["old_content"] = extras.get("old_content")
                fields["new_content"] = extras.get("new_content")
        return FileEditorObservation.from_text(text=obs.get("content") or "", command=action.command, **fields)

    def _view_image(self, action: FileEditorAction, risk: str | None) -> FileEditorObservation:
        obs = self.link.send(actions.read(action.path, encoding="base64", security_risk=risk), timeout=_WAIT)
        if obs.get("observation") != "read":
            return FileEditorObservation.from_text(text=obs.get("content") or "", command="view", is_error=True)
        extras = obs.get("extras") or {}
        mime = extras.get("mime_type") or ""
        if not mime.startswith("image/"):
            mime = "image/png"  # the SDK's fallback for an image extension it cannot map
        path = extras.get("path") or action.path
        return FileEditorObservation(
            command="view",
            content=[
                TextContent(text=f"Image file {path} read successfully. Displaying image content."),
                ImageContent(image_urls=[f"data:{mime};base64,{obs.get('content') or ''}"]),
            ],
            path=path,
            prev_exist=True,
        )


class OhFileEditorTool(FileEditorTool):
    """The SDK's ``file_editor`` tool (same name, schema and description) backed by oh.

    Falls back to the SDK's own editor (with one warning) when no oh backend serves the
    conversation's working directory."""

    name = FileEditorTool.name

    @classmethod
    def create(cls, conv_state: "ConversationState"):  # type: ignore[override]
        key, link = conversation_link(conv_state)
        if link is None:
            return FileEditorTool.create(conv_state)
        return [tool.set_executor(OhFileEditorExecutor(link, key)) for tool in super().create(conv_state)]
