"""Run the OpenHands SDK's terminal and file editor through oh (VS Code or the local runtime).

    from oh.integrations.openhands import install
    install()                     # once, before the conversation is created
    agent = get_default_agent(llm)   # unchanged SDK code: its `terminal` and `file_editor` now act
    conversation = Conversation(agent=agent, workspace=os.getcwd())   # through the oh backend serving cwd

``install()`` re-registers the SDK's standard tool names (``TerminalTool.name`` = "terminal",
``FileEditorTool.name`` = "file_editor") with oh-backed subclasses. Each conversation then connects
to the oh backend whose workspace (or ``oh start --allow`` root) contains its working directory, with
that directory as its shell's starting point. Where no backend serves the directory the SDK's own
tools are used and a warning says so once. ``OhTerminalTool`` / ``OhFileEditorTool`` can also be
registered or composed explicitly. Needs Python >= 3.12 and ``pip install 'oh-editor-runtime[openhands]'``.
"""

from __future__ import annotations

import logging
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm's import blocks offline without it

from openhands.sdk.tool import register_tool  # noqa: E402
from openhands.tools.file_editor.definition import FileEditorTool  # noqa: E402
from openhands.tools.terminal.definition import TerminalTool  # noqa: E402

from .common import settings  # noqa: E402
from .file_editor import OhFileEditorExecutor, OhFileEditorTool  # noqa: E402
from ..discovery import find_session  # noqa: E402
from .terminal import OhTerminalExecutor, OhTerminalTool  # noqa: E402

__all__ = ["install", "uninstall", "OhTerminalTool", "OhFileEditorTool", "OhTerminalExecutor", "OhFileEditorExecutor", "find_session"]


class _QuietDuplicate(logging.Filter):
    # register_tool warns "Duplicate tool name registered": replacing the tools is the point here.
    def filter(self, record: logging.LogRecord) -> bool:
        return "Duplicate tool name registered" not in record.getMessage()


def _register(name: str, cls: type) -> None:
    logger = logging.getLogger("openhands.sdk.tool.registry")
    quiet = _QuietDuplicate()
    logger.addFilter(quiet)
    try:
        register_tool(name, cls)
    finally:
        logger.removeFilter(quiet)


def install(*, name: str = "openhands-sdk", instance: str | None = None) -> None:
    """Make the SDK's standard ``terminal`` and ``file_editor`` tools execute through oh.

    Call once before creating conversations (tools are resolved when a conversation starts).
    ``name`` is the agent name the live view and trace show; ``instance`` (an instance id prefix
    from ``oh status``) picks one backend when several serve the same directory. Idempotent.
    """
    settings.name = name
    settings.instance = instance
    _register(TerminalTool.name, OhTerminalTool)
    _register(FileEditorTool.name, OhFileEditorTool)


def uninstall() -> None:
    """Give the standard tool names back to the SDK's own implementations."""
    _register(TerminalTool.name, TerminalTool)
    _register(FileEditorTool.name, FileEditorTool)
