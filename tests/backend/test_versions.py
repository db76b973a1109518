"""Versions on both sides (protocol/versions.py, docs/protocol.md §4 "Versions"), through a real backend:
the extension older or newer than oh, sharing a protocol (a warning) or not (refused), and what the
live view, `oh status` and the editor itself are told. Each message names the fix."""

from __future__ import annotations

import asyncio
import json

from websockets.asyncio.client import connect

from oh import __version__
from oh.commands.status import render_text
from oh.protocol import frames
from oh.ui.live import LiveState

from .conftest import TOKEN


def url(b) -> str:
    return f"ws://127.0.0.1:{b.port}"


def register(workspace, **kw) -> dict:
    return {
        "type": "register",
        "protocol": 1,
        "session": None,
        "workspace_folders": [str(workspace)],
        "editor": {"name": "Visual Studio Code", "version": "1.99.3", "pid": 1},
        "capabilities": ["run"],
        **kw,
    }


async def _monitor(b) -> tuple[object, LiveState]:
    mon = await connect(url(b) + "/v1/monitor", additional_headers={"Authorization": f"Bearer {TOKEN}"})
    state = LiveState(backend={})
    state.apply(json.loads(await mon.recv()))
    return mon, state


async def _until(mon, state: LiveState, event: str) -> list[str]:
    while True:
        frame = json.loads(await asyncio.wait_for(mon.recv(), 10))
        lines = state.apply(frame)
        if frame.get("event") == event:
            return lines


async def test_older_extension_registers_with_a_warning_everywhere(make_backend, workspace):
    b = await make_backend("vscode")
    mon, state = await _monitor(b)
    async with connect(url(b) + "/v1/editor", additional_headers={"Authorization": f"Bearer {b.editor_token}"}) as ws:
        await ws.send(json.dumps(register(workspace, extension_version="0.0.1", protocol_range=[1, 1])))
        answer = json.loads(await ws.recv())
        # the editor is told: oh's version and range, and the verdict with the fix
        assert (
            answer["type"] == "registered"
            and answer["oh_version"] == __version__
            and answer["protocol_range"] == list(frames.PROTOCOL_RANGE)
        )
        assert answer["version_check"]["status"] == "warn" and "oh vscode install" in answer["version_check"]["fix"]
        # the live view
        lines = await _until(mon, state, "editor_connected")
        assert any(
            "extension version: oh " + __version__ + " and the oh extension 0.0.1 are from different releases" in x
            and "oh vscode install" in x
            for x in lines
        ), lines
        assert state.version_problems()
        # `oh status`
        text = render_text([{**b.status(), "url": "ws://x", "token_fingerprint": "f"}])
        assert (
            "warning    oh " + __version__ + " and the oh extension 0.0.1" in text
            and "Fix: Run `oh vscode install`" in text
        )
    await mon.close()


async def test_newer_extension_is_refused_naming_an_oh_upgrade(make_backend, workspace):
    b = await make_backend("vscode")
    mon, state = await _monitor(b)
    async with connect(url(b) + "/v1/editor", additional_headers={"Authorization": f"Bearer {b.editor_token}"}) as ws:
        await ws.send(json.dumps(register(workspace, protocol=7, protocol_range=[7, 8], extension_version="9.0.0")))
        answer = json.loads(await ws.recv())
        assert answer["type"] == "error" and answer["error_id"] == "PROTOCOL_MISMATCH"
        assert (
            f"oh {__version__} is too old for the oh extension 9.0.0" in answer["message"]
            and "upgrade oh" in answer["message"].lower()
        )
        await ws.wait_closed()
        assert ws.close_code == 4400
    lines = await _until(mon, state, "editor_refused")
    assert lines and lines[0].startswith("editor refused: oh ") and "from a clone: `git pull`" in lines[0]
    st = b.status()
    assert "too old" in st["editor_refused"]["message"] and not st["editors"]
    assert "refused    oh " in render_text([{**st, "url": "ws://x", "token_fingerprint": "f"}])
    # a late live view (snapshot) sees it too
    mon2, late = await _monitor(b)
    assert late.version_problems() and "too old" in late.version_problems()[0]
    await mon.close()
    await mon2.close()


async def test_older_extension_is_refused_by_a_newer_backend(make_backend, workspace, monkeypatch):
    """The other direction: a backend that no longer speaks the extension's protocol says `oh vscode install`."""
    monkeypatch.setattr(frames, "PROTOCOL_RANGE", (2, 3))
    b = await make_backend("vscode")
    async with connect(url(b) + "/v1/editor", additional_headers={"Authorization": f"Bearer {b.editor_token}"}) as ws:
        await ws.send(
            json.dumps(register(workspace, extension_version="0.0.1"))
        )  # an extension from before ranges: protocol 1 only
        answer = json.loads(await ws.recv())
    assert answer["error_id"] == "PROTOCOL_MISMATCH"
    assert (
        "the oh extension 0.0.1 is too old for oh" in answer["message"]
        and "Run `oh vscode install`" in answer["message"]
    )


async def test_same_release_has_no_warning(make_backend, workspace):
    b = await make_backend("vscode")
    async with connect(url(b) + "/v1/editor", additional_headers={"Authorization": f"Bearer {b.editor_token}"}) as ws:
        await ws.send(json.dumps(register(workspace, extension_version=__version__, protocol_range=[1, 1])))
        answer = json.loads(await ws.recv())
        assert answer["type"] == "registered" and "version_check" not in answer
        assert "version_check" not in b.status()["editors"][0]
