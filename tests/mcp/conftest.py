"""Fixtures for `oh mcp`: real `oh` processes (isolated OH_HOME/HOME), driven by the `mcp` SDK's own stdio client."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

from cli.conftest import Oh  # noqa: F401 - shared launcher fixture

mcp = pytest.importorskip("mcp", reason="the `mcp` extra is not installed (pip install -e '.[mcp,test]')")
import mcp_types as types  # noqa: E402

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402


@pytest.fixture
def oh(tmp_path: Path):
    runner = Oh(tmp_path)
    # These suites read the tools' text line by line and run npm installs; the sandbox's first-observation line
    # and its network wall are tested on every route in tests/sandbox.
    runner.env["OH_SANDBOX"] = "off"
    yield runner
    runner.cleanup()


@contextlib.asynccontextmanager
async def mcp_session(
    oh: Oh, *args: str, cwd: Path | None = None, client: str = "claude-code", roots: list[Path] | None = None
):
    """`python -m oh mcp ARGS` as an MCP client starts it, with an initialized ClientSession."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "oh", "mcp", *args], env=dict(oh.env), cwd=str(cwd or oh.workspace)
    )
    errlog = open(oh.tmp / "mcp-stderr.log", "a")  # noqa: SIM115 - closed below; the server's diagnostics
    try:
        async with stdio_client(params, errlog=errlog) as (read, write):
            kw = {}
            if roots is not None:

                async def list_roots(context):
                    return types.ListRootsResult(
                        roots=[types.Root(uri=p.resolve().as_uri(), name=p.name) for p in roots]
                    )

                kw["list_roots_callback"] = list_roots
            async with ClientSession(
                read, write, client_info=types.Implementation(name=client, version="1.0"), **kw
            ) as session:
                await session.initialize()
                yield session
    finally:
        errlog.close()


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
