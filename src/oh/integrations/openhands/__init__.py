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

``install()`` also registers oh's own tools, which the SDK has no counterpart for:
``background_jobs`` (start a command as a job; list, poll, wait, output from an offset, cancel) and
``editor_knowledge`` (diagnostics, symbols, definition, references, open, editors) and
``ensure_environment`` (make ``.venv`` / ``node_modules`` ready once; a no-op when nothing changed). An
agent gets them by name, ``Tool(name="background_jobs")``, or all at once:

    agent = with_oh_tools(get_default_agent(llm, cli_mode=True))
"""

from __future__ import annotations

import logging
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm's import blocks offline without it

from ..extras import require_extra  # noqa: E402

with require_extra("oh.integrations.openhands", "openhands", "the OpenHands SDK (openhands-sdk, openhands-tools)"):
    from openhands.sdk.tool import register_tool  # noqa: E402
    from openhands.tools.file_editor.definition import FileEditorTool  # noqa: E402
    from openhands.tools.terminal.definition import TerminalTool  # noqa: E402

from ..discovery import find_session  # noqa: E402
from .common import settings  # noqa: E402
from .ensure import EnsureEnvironmentAction, EnsureEnvironmentObservation, EnsureEnvironmentTool  # noqa: E402
from .file_editor import OhFileEditorExecutor, OhFileEditorTool  # noqa: E402
from .jobs import BackgroundJobAction, BackgroundJobObservation, BackgroundJobsTool  # noqa: E402
from .knowledge import EditorKnowledgeAction, EditorKnowledgeObservation, EditorKnowledgeTool  # noqa: E402
from .terminal import OhTerminalExecutor, OhTerminalTool  # noqa: E402

__all__ = [
    "install",
    "uninstall",
    "oh_tools",
    "with_oh_tools",
    "OhTerminalTool",
    "OhFileEditorTool",
    "OhTerminalExecutor",
    "OhFileEditorExecutor",
    "BackgroundJobsTool",
    "BackgroundJobAction",
    "BackgroundJobObservation",
    "EditorKnowledgeTool",
    "EditorKnowledgeAction",
    "EditorKnowledgeObservation",
    "EnsureEnvironmentTool",
    "EnsureEnvironmentAction",
    "EnsureEnvironmentObservation",
    "OH_TOOL_NAMES",
    "find_session",
]

# oh's own tools (no SDK counterpart), by the names an agent spec uses.
OH_TOOL_NAMES = (BackgroundJobsTool.name, EditorKnowledgeTool.name, EnsureEnvironmentTool.name)


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
    _register(BackgroundJobsTool.name, BackgroundJobsTool)
    _register(EditorKnowledgeTool.name, EditorKnowledgeTool)
    _register(EnsureEnvironmentTool.name, EnsureEnvironmentTool)


def uninstall() -> None:
    """Give the standard tool names back to the SDK's own implementations (oh's own tools stay registered:
    an agent spec naming them keeps resolving; without a backend they say how to start one)."""
    _register(TerminalTool.name, TerminalTool)
    _register(FileEditorTool.name, FileEditorTool)


def oh_tools():
    """``[Tool(name="background_jobs"), Tool(name="editor_knowledge"), Tool(name="ensure_environment")]``: the
    specs to add to an agent's tools."""
    from openhands.sdk.tool import Tool

    return [Tool(name=name) for name in OH_TOOL_NAMES]


def with_oh_tools(agent):
    """A copy of ``agent`` (e.g. ``get_default_agent(llm)``) with oh's own tools added (once; call ``install()``
    first)."""
    have = {tool.name for tool in agent.tools}
    return agent.model_copy(update={"tools": [*agent.tools, *(t for t in oh_tools() if t.name not in have)]})
