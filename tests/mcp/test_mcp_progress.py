"""`oh mcp` tells a client that gave a progressToken when its action waits for the user's consent (issue 30 #2),
driven by the `mcp` SDK's stdio client against a real backend with `--consent commands`."""

from __future__ import annotations

import asyncio
import sys

import pytest

from conftest import mcp_session, text_of

pytestmark = [pytest.mark.slow]


async def test_a_run_waiting_for_consent_is_a_progress_notification(oh):
    oh.start("local", None, "--consent", "commands", "--approval-timeout", "30")
    said: list[str] = []
    heard = asyncio.Event()

    async def progress(value, total, message):
        said.append(message or "")
        heard.set()

    async with mcp_session(oh) as s:
        call = asyncio.ensure_future(s.call_tool("run", {"command": "echo allowed"}, progress_callback=progress))
        # Without the notification nothing is heard until the approval times out (30 s): then this fails.
        await asyncio.wait_for(heard.wait(), 20)
        assert "consent (c1)" in said[0] and "oh approve c1" in said[0], said
        approve = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "oh",
            "approve",
            "c1",
            cwd=str(oh.workspace),
            env=oh.env,
            stdout=asyncio.subprocess.DEVNULL,
        )
        assert await asyncio.wait_for(approve.wait(), 30) == 0
        r = await asyncio.wait_for(call, 30)
        assert not r.is_error and "allowed" in text_of(r), text_of(r)
