"""VS Code's undo (§3.15.2) through a real in-process backend: an editor on its own leg (editor token) lists
the history, asks for an undo with its unsaved buffers, gets the edits (nothing written by the backend), applies
them as the extension would, says `applied`; the undo's entry then holds what the editor wrote. Real bash makes
the agent's changes; the real `git merge-file` merges the user's unsaved text."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from backend.conftest import TOKEN, make_backend  # noqa: F401 - the fixture
from oh.client import Client
from oh.protocol.sandbox import Spec

WAIT = 30


def _url(b) -> str:
    return f"ws://127.0.0.1:{b.port}"


async def _editor(b, workspace: Path):
    ws = await connect(_url(b) + "/v1/editor", additional_headers={"Authorization": f"Bearer {b.editor_token}"})
    await ws.send(
        json.dumps(
            {
                "type": "register",
                "protocol": 1,
                "session": None,
                "workspace_folders": [str(workspace)],
                "editor": {"name": "e", "version": "0", "pid": 1},
                "extension_version": "0",
                "capabilities": ["run", "read", "write", "edit"],
            }
        )
    )
    assert json.loads(await ws.recv())["type"] == "registered"
    return ws


async def _ask(ed, frame: dict) -> dict:
    await ed.send(json.dumps({"type": "history", **frame}))
    while True:  # other one-way frames (events) may come first
        answer = json.loads(await asyncio.wait_for(ed.recv(), WAIT))
        if answer.get("rid") == frame["rid"]:
            return answer


def _apply(workspace: Path, edits: list[dict], buffers: dict[str, str]) -> dict[str, str]:
    """What the extension does: deletions, then each file's content; a file with an unsaved buffer gets the
    text in its buffer (returned), not on disk."""
    kept = {}
    for e in edits:
        p = workspace / e["path"]
        if e.get("delete"):
            p.unlink(missing_ok=True)
            continue
        data = base64.b64decode(e["content"])
        if e["path"] in buffers:
            kept[e["path"]] = data.decode()
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return kept


@pytest.fixture
async def backend(make_backend, workspace, oh_home):  # noqa: F811 - the fixture imported above
    (workspace / "app.py").write_text("A = 1\nB = 2\nC = 3\nD = 4\nE = 5\nF = 6\n")
    return await make_backend("local", history_dir=str(oh_home / "history"), sandbox=Spec(level="off"))


async def test_the_editor_gets_edits_merges_unsaved_text_and_the_undo_is_an_entry(backend, workspace):
    b = backend
    agent = await Client.connect(_url(b), TOKEN, name="alice")
    try:
        obs = await agent.run("sed -i 's/B = 2/B = 20/' app.py && echo new > made.txt", timeout=WAIT)
        assert obs.exit_code == 0
    finally:
        await agent.close()
    ed = await _editor(b, workspace)
    try:
        listed = await _ask(ed, {"op": "list", "rid": "r1"})
        (run,) = [e for e in listed["entries"] if e["kind"] == "run"]
        # The user's unsaved buffer changed another line of app.py: it is the file's "current" text.
        unsaved = "A = 1\nB = 20\nC = 3\nD = 4\nE = 5\nF = 600\n"
        answer = await _ask(ed, {"op": "undo", "rid": "r2", "entry": run["id"], "buffers": {"app.py": unsaved}})
        assert answer["ok"] and answer["entry"] and sorted(answer["files"]) == ["app.py", "made.txt"], answer
        # Nothing was written by the backend: the editor applies the edits.
        assert (workspace / "made.txt").exists() and "B = 20" in (workspace / "app.py").read_text()
        kept = _apply(workspace, answer["edits"], {"app.py": unsaved})
        assert kept == {
            "app.py": "A = 1\nB = 2\nC = 3\nD = 4\nE = 5\nF = 600\n"
        }  # the agent's line undone, the user's kept
        assert not (workspace / "made.txt").exists()
        done = await _ask(ed, {"op": "applied", "rid": "r3", "entry": answer["entry"]})
        assert done["ok"] is True
        again = await _ask(ed, {"op": "applied", "rid": "r4", "entry": answer["entry"]})
        assert again["ok"] is False  # finished once only
        listed = await _ask(ed, {"op": "list", "rid": "r5"})
        (undo,) = [e for e in listed["entries"] if e["kind"] == "undo"]
        assert undo["id"] == answer["entry"] and undo["status"] == "done" and undo["undoes"] == [run["id"]], undo
        assert undo["files"] >= 1  # the deletion the editor made is the undo's change
    finally:
        await ed.close()


async def test_an_undo_the_editor_never_applies_leaves_no_timer_behind_the_stopped_backend(backend, workspace):
    """The entry of an editor undo with no `applied` ends by a 60 s timeout; a backend that stops first cancels it
    (its loop is gone: the timer would fire into nothing)."""
    b = backend
    agent = await Client.connect(_url(b), TOKEN, name="alice")
    try:
        assert (await agent.run("echo new > made.txt", timeout=WAIT)).exit_code == 0
    finally:
        await agent.close()
    ed = await _editor(b, workspace)
    try:
        listed = await _ask(ed, {"op": "list", "rid": "r1"})
        (run,) = [e for e in listed["entries"] if e["kind"] == "run"]
        answer = await _ask(ed, {"op": "undo", "rid": "r2", "entry": run["id"], "buffers": {}})
        assert answer["ok"], answer
        (timer,) = b.historyctl._editor_timers
        assert not timer.cancelled()
    finally:
        await ed.close()
    await b.stop()
    assert timer.cancelled() and not b.historyctl._editor_timers


BAD = [
    {"op": "undo", "entry": 1, "buffers": {"../x": "t"}},
    {"op": "undo", "entry": 1, "buffers": {"/etc/passwd": "t"}},
    {"op": "undo", "entry": 1, "buffers": ["x"]},
    {"op": "undo", "entry": 1, "buffers": {"a": "x" * (8 * 1024 * 1024 + 1)}},
    {"op": "applied"},
    {"op": "nope"},
    {"op": "list", "rid": 5},
    {"op": "undo", "entry": "1"},
]


async def test_bad_editor_history_requests_get_a_refusal_and_change_nothing(backend, workspace):
    ed = await _editor(backend, workspace)
    try:
        for frame in BAD:
            await ed.send(json.dumps({"type": "history", "rid": "bad", **frame}))
            answer = json.loads(await asyncio.wait_for(ed.recv(), WAIT))
            assert answer["type"] == "error" and answer["error_id"] == "BAD_REQUEST", (frame, answer)
        ok = await _ask(ed, {"op": "list", "rid": "after"})  # the leg still serves
        assert ok["type"] == "history" and ok["entries"] == []
        assert os.listdir(workspace) == ["app.py"]
    finally:
        await ed.close()
