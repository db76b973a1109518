"""Client methods for the editor-knowledge actions (docs/protocol.md §3.6).

Builders make the action dicts; the two mixins give ``Client`` (async) and ``SyncClient`` the same
methods on top of their ``send``. Positions are 1-based (line, column), as ``path:line:col``.
"""

from __future__ import annotations

from typing import Any


def _clean(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if v is not None}


def diagnostics(path: str | None = None, *, severity: str | None = None, wait: float | None = None) -> dict[str, Any]:
    return {"action": "diagnostics", "args": _clean({"path": path, "severity": severity, "wait": wait})}


def open_file(
    path: str,
    *,
    line: int | None = None,
    column: int | None = None,
    end_line: int | None = None,
    end_column: int | None = None,
    preserve_focus: bool | None = None,
) -> dict[str, Any]:
    return {
        "action": "open",
        "args": _clean(
            {
                "path": path,
                "line": line,
                "column": column,
                "end_line": end_line,
                "end_column": end_column,
                "preserve_focus": preserve_focus,
            }
        ),
    }


def editors() -> dict[str, Any]:
    return {"action": "editors", "args": {}}


def symbols(query: str, *, limit: int | None = None) -> dict[str, Any]:
    return {"action": "symbols", "args": _clean({"query": query, "limit": limit})}


def definition(path: str, line: int, column: int) -> dict[str, Any]:
    return {"action": "definition", "args": {"path": path, "line": line, "column": column}}


def references(path: str, line: int, column: int, *, include_declaration: bool | None = None) -> dict[str, Any]:
    return {
        "action": "references",
        "args": _clean({"path": path, "line": line, "column": column, "include_declaration": include_declaration}),
    }


class AsyncEditorInfo:
    """``await client.diagnostics("src/a.ts")`` etc.; needs ``self.send`` (Client)."""

    async def diagnostics(self, path: str | None = None, **kw: Any):
        return await self.send(diagnostics(path, **kw))

    async def open_file(self, path: str, **kw: Any):
        return await self.send(open_file(path, **kw))

    async def editors(self):
        return await self.send(editors())

    async def symbols(self, query: str, **kw: Any):
        return await self.send(symbols(query, **kw))

    async def definition(self, path: str, line: int, column: int):
        return await self.send(definition(path, line, column))

    async def references(self, path: str, line: int, column: int, **kw: Any):
        return await self.send(references(path, line, column, **kw))


class SyncEditorInfo:
    """``client.diagnostics("src/a.ts")`` etc.; needs ``self.send`` (SyncClient)."""

    def diagnostics(self, path: str | None = None, **kw: Any):
        return self.send(diagnostics(path, **kw))

    def open_file(self, path: str, **kw: Any):
        return self.send(open_file(path, **kw))

    def editors(self):
        return self.send(editors())

    def symbols(self, query: str, **kw: Any):
        return self.send(symbols(query, **kw))

    def definition(self, path: str, line: int, column: int):
        return self.send(definition(path, line, column))

    def references(self, path: str, line: int, column: int, **kw: Any):
        return self.send(references(path, line, column, **kw))
