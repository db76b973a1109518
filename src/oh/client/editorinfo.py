"""Client methods for the editor-knowledge actions (docs/protocol.md §3.6).

The action frames come from ``protocol.actions`` (the one builder every sender uses); the two mixins
give ``Client`` (async) and ``SyncClient`` the same methods on top of their ``send``. Positions are
1-based (line, column), as ``path:line:col``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.actions import (  # noqa: F401 - re-exported: the builders' old home
    definition,
    diagnostics,
    editors,
    open_file,
    references,
    symbols,
)


class AsyncEditorInfo:
    """``await client.diagnostics("src/a.ts")`` etc.; needs ``self.send`` (Client)."""

    if TYPE_CHECKING:  # what the mixin needs of its client (Client.send)

        async def send(self, action: dict[str, Any]) -> Any: ...

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

    if TYPE_CHECKING:  # what the mixin needs of its client (SyncClient.send)

        def send(self, action: dict[str, Any]) -> Any: ...

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
