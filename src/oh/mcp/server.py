"""``oh mcp``: a stdio MCP server (official ``mcp`` SDK, low-level ``Server``) exposing oh's four tools.

Every tool call becomes one oh action on one persistent connection (``backend.Backend``). Nothing
here raises into the SDK: bad arguments, a missing backend and a lost connection all come back as a
tool result with ``isError`` and a message that says what to do next. stdout belongs to the
protocol; diagnostics go to stderr (MCP clients show it in their server log).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from .. import __version__
from . import history_tools, tools
from .backend import Backend, BackendLost, NoBackend

log = logging.getLogger("oh.mcp")

INSTRUCTIONS = (
    "oh runs your actions in the user's VS Code (terminal, editor, undo history) or, with oh's local runtime, on "
    "this machine, and the user watches each one live. Use `run` for shell commands (one persistent shell), `read` "
    "to read files (encoding base64 for images), `edit` to view and change files (view / create / str_replace / "
    "insert / undo_edit) and `write` to replace whole files. In VS Code, `diagnostics` shows the type errors your "
    "change introduced, `symbols`/`definition`/`references` navigate code, `editors` tells what the user has open "
    "and selected, `open` shows them a file. Servers and long test runs: `run` with `background: true`, then `job` "
    "(wait for the exit code, output from an offset so nothing is cut); `jobs` lists them, `stat` checks a path. "
    "With history on, `history` lists the files your own actions changed and `undo` reverts one of them. "
    "Relative paths start at the project directory."
)


def _client_name(ctx: Any) -> str | None:
    """The MCP client's ``clientInfo.name`` (initialize, or the per-request envelope of newer protocol versions)."""
    try:
        params = ctx.session.client_params
        if params is not None and params.client_info and params.client_info.name:
            return str(params.client_info.name)
    except Exception:  # noqa: BLE001 - identity is a nicety; never fail a call for it
        pass
    meta = getattr(ctx, "meta", None)
    info = None
    if isinstance(meta, dict):
        info = next((v for k, v in meta.items() if k.endswith("clientInfo")), None)
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        return info["name"]
    return None


def _roots_provider(ctx: Any):
    """An async function listing the client's root directories, or None when it declares no roots."""
    try:
        if not ctx.session.check_client_capability(types.ClientCapabilities(roots=types.RootsCapability())):
            return None
    except Exception:  # noqa: BLE001 - no capability information: no roots
        return None

    async def roots() -> list[str]:
        from urllib.parse import unquote, urlparse

        result = await ctx.session.list_roots()
        paths = []
        for root in result.roots:
            uri = urlparse(str(root.uri))
            if uri.scheme == "file" and uri.netloc in ("", "localhost"):
                paths.append(unquote(uri.path))
        return paths

    return roots


def _notifier(ctx):
    """Progress notifications for this request when the client gave a progressToken, else None."""
    meta = getattr(ctx, "meta", None) or {}
    token = meta.get("progress_token", meta.get("progressToken")) if isinstance(meta, dict) else None
    if token is None:
        return None
    count = 0
    tasks: set[asyncio.Task] = set()

    def notify(message: str) -> None:
        nonlocal count
        count += 1
        task = asyncio.ensure_future(ctx.session.report_progress(count, None, message))
        tasks.add(task)  # kept until sent (a task nobody references may be collected)
        task.add_done_callback(tasks.discard)

    return notify


def to_mcp(result: tools.ToolResult) -> types.CallToolResult:
    content: list[Any] = []
    if result.image is not None:
        data, mime = result.image
        content.append(types.ImageContent(type="image", data=data, mime_type=mime))
    content.append(types.TextContent(type="text", text=result.text))
    return types.CallToolResult(content=content, structured_content=result.structured, is_error=result.is_error)


async def call(backend: Backend, name: str, arguments: Any, notify=None) -> tools.ToolResult:
    """One tool call, start to end; returns a result for every outcome. ``notify(message)``: a progress
    notification to the client (when it gave a progressToken): a wait for the user's consent or review,
    what an `ensure` runs (issue 30 #2, docs/protocol.md §3.16)."""
    try:
        if name in history_tools.NAMES:
            return await _history_call(backend, name, tools.check_arguments(name, arguments))
        tools.build_action(
            name, arguments, backend.base_dir
        )  # every check, before connecting: a bad call needs no backend
        await backend.client()
        action = tools.build_action(name, arguments, backend.base_dir)
        on_progress = None
        if notify is not None:

            def on_progress(frame: dict[str, Any]) -> None:
                text = frame.get("message") or frame.get("text")
                if isinstance(text, str):
                    notify(text)

        obs = await backend.send(action, on_progress)
        return tools.to_result(name, obs, action)
    except tools.ArgumentError as exc:
        return tools.error_result(str(exc), "BAD_ARGUMENTS")
    except NoBackend as exc:
        return tools.error_result(str(exc), "NO_BACKEND")
    except BackendLost as exc:
        return tools.error_result(str(exc), "CONNECTION_LOST")
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a bug must still answer the agent, and be logged for us
        log.exception("tool %s failed", name)
        return tools.error_result(
            f"oh mcp failed unexpectedly: {type(exc).__name__}: {exc}. Please report it.", "SERVER_ERROR"
        )


async def _history_call(backend: Backend, name: str, args: dict[str, Any]) -> tools.ToolResult:
    """``history`` / ``undo``: one control request with the agent token, naming this agent (the name its
    actions carry), so the backend lists and undoes only its own entries (§3.15)."""
    await backend.client()  # finds the backend and fixes the name this agent's actions are recorded under
    agent = backend.client_name
    answer = await backend.control(history_tools.request(name, args, agent))
    refused = history_tools.refusal(answer)
    if refused is not None:
        return tools.error_result(*refused)
    text, structured, is_error = history_tools.result(name, args, answer, agent)
    return tools.ToolResult(text, structured, is_error)


def build_server(backend: Backend) -> Server:
    listed = [
        types.Tool(
            name=t["name"],
            title=t["title"],
            description=t["description"],
            input_schema=t["inputSchema"],
            annotations=types.ToolAnnotations(**{_snake(k): v for k, v in t["annotations"].items()}),
        )
        for t in tools.TOOLS
    ]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        backend.set_client_name(_client_name(ctx))
        backend.roots = _roots_provider(ctx)
        return to_mcp(await call(backend, params.name, params.arguments, _notifier(ctx)))

    server = Server(
        "oh",
        version=__version__,
        title="oh: act in the user's editor",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    # The SDK wraps every message in an OpenTelemetry span by default; oh exports no telemetry, and
    # the wrapper is measurable per call (benchmarks/mcp_roundtrip.py).
    server.middleware = [m for m in server.middleware if type(m).__name__ != "OpenTelemetryMiddleware"]
    return server


def _snake(key: str) -> str:
    return {
        "readOnlyHint": "read_only_hint",
        "destructiveHint": "destructive_hint",
        "idempotentHint": "idempotent_hint",
        "openWorldHint": "open_world_hint",
    }.get(key, key)


async def serve(backend: Backend) -> None:
    server = build_server(backend)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await backend.close()


def main(*, workspace: str | None, instance: str | None, start: bool, runtime: str | None) -> None:
    import sys

    logging.basicConfig(level=logging.WARNING, format="oh mcp: %(message)s")
    if sys.stdin.isatty():  # a person ran it by hand: say what it is, then serve anyway
        print(
            "oh mcp speaks MCP (JSON-RPC) on stdin/stdout: an MCP client starts it. Set one up with "
            "`oh mcp install claude|codex|gemini|vscode|cursor`. Ctrl-C stops it.",
            file=sys.stderr,
        )
    backend = Backend(workspace=workspace, instance=instance, start=start, runtime=runtime)
    asyncio.run(serve(backend))
