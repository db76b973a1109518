"""Issue 9 #12 and #11: the editor leg has its own credential, and editor folders are checked.

Real backends (in-process on ephemeral ports, and a real `python -m oh.backend` process with the
headless editor `python -m oh attach`), real WebSocket clients.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from oh.client import Client

from .conftest import TOKEN, start_backend_process
from .peers import EchoEditor


def url(b):
    return f"ws://127.0.0.1:{b.port}"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_the_agent_token_cannot_open_the_editor_leg(make_backend, workspace):
    b = await make_backend("vscode")
    assert b.editor_token and b.editor_token != TOKEN and len(b.editor_token) >= 43
    # An agent (it holds the token) tries to become the editor, e.g. with a wider folder: refused.
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url(b) + "/v1/editor", additional_headers=bearer(TOKEN)):
            pass
    assert refused.value.response.status_code == 401
    assert b"editor token" in refused.value.response.body
    # ...and the editor token opens no other role.
    for path in ("/v1/agent", "/v1/monitor", "/v1/control"):
        with pytest.raises(InvalidStatus) as other:
            async with connect(url(b) + path, additional_headers=bearer(b.editor_token)):
                pass
        assert other.value.response.status_code == 401, path
    assert len(b.registry) == 0
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]) as ed:
        assert ed.answer["type"] == "registered"
        c = await Client.connect(url(b), TOKEN)
        assert (await c.read("x.txt")).content == f"echo:{workspace / 'x.txt'}"
        await c.close()


async def test_session_file_carries_the_editor_token_and_rotation_changes_both(make_backend, workspace, oh_home):
    from oh import sessions

    b = await make_backend("vscode")
    s = sessions.list_sessions()[0]
    assert s.editor_token == b.editor_token and s.token == TOKEN
    assert "editor_token" not in s.public() and "token" not in s.public()
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]) as ed:
        old_editor = b.editor_token
        async with connect(url(b) + "/v1/control", additional_headers=bearer(TOKEN)) as ctl:
            await ctl.send(json.dumps({"type": "rotate_token", "token": "rotated-token-0123456789abcdef"}))
            assert json.loads(await ctl.recv())["closed"] == 1  # the editor's connection
        await ed.conn.wait_closed()
        assert ed.conn.close_code == 4001
    rotated = sessions.list_sessions()[0]
    assert rotated.token == "rotated-token-0123456789abcdef" and rotated.editor_token not in ("", old_editor)
    with pytest.raises(InvalidStatus):
        async with connect(url(b) + "/v1/editor", additional_headers=bearer(old_editor)):
            pass
    async with EchoEditor(b.port, rotated.editor_token, [str(workspace)]) as ed:
        assert ed.answer["type"] == "registered"


def test_headless_editor_process_reads_the_editor_token_from_the_session_file(workspace, oh_home, tmp_path):
    """`python -m oh.backend` + `oh attach` as real processes: attach works (it uses editor_token),
    while a client holding only the agent token is refused on /v1/editor."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(OH_HOME=str(oh_home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    proc, ready = start_backend_process(workspace, env, runtime="vscode")
    editor = None
    try:
        assert ready["ready"], ready
        session = json.loads(next((oh_home / "sessions").glob("*.json")).read_text())
        assert session["editor_token"] and session["editor_token"] != session["token"] == TOKEN
        editor = subprocess.Popen(
            [sys.executable, "-m", "oh", "attach", "--workspace", str(workspace)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        from oh.client import SyncClient

        (workspace / "hello.txt").write_text("hi\n")
        with SyncClient.connect(ready["url"], TOKEN) as c:
            deadline = time.monotonic() + 20
            while True:
                import urllib.request

                req = urllib.request.Request(f"http://127.0.0.1:{ready['port']}/v1/status", headers=bearer(TOKEN))
                if json.loads(urllib.request.urlopen(req, timeout=5).read())["editors"]:
                    break
                assert time.monotonic() < deadline, "oh attach did not register"
                assert editor.poll() is None, editor.stderr.read()
                time.sleep(0.05)
            assert c.read("hello.txt").content.endswith("hi\n")
        # The editor token is a secret like the token: not in argv or the environment of either process.
        for pid in (proc.pid, editor.pid):
            for leak in ("cmdline", "environ"):
                assert session["editor_token"].encode() not in Path(f"/proc/{pid}/{leak}").read_bytes(), (pid, leak)
        import asyncio

        async def agent_as_editor():
            async with connect(ready["url"] + "/v1/editor", additional_headers=bearer(TOKEN)):
                pass

        with pytest.raises(InvalidStatus):
            asyncio.run(agent_as_editor())
    finally:
        if editor is not None:
            editor.kill()
            editor.wait(5)
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("folders", [["."], ["ws"], ["", "/x"], ["/abs", "rel/dir"]])
async def test_relative_editor_folders_are_refused(make_backend, folders):
    b = await make_backend("vscode")
    async with connect(url(b) + "/v1/editor", additional_headers=bearer(b.editor_token)) as ws:
        await ws.send(
            json.dumps({"type": "register", "protocol": 1, "workspace_folders": folders, "editor": {"name": "rel"}})
        )
        answer = json.loads(await ws.recv())
        await ws.wait_closed()
    assert answer["type"] == "error" and answer["error_id"] == "BAD_REQUEST" and "absolute" in answer["message"]
    assert ws.close_code == 4400 and len(b.registry) == 0


async def test_an_editor_on_the_root_folder_serves_the_workspace(make_backend, workspace):
    """Folder "/" used to build the prefix "//", so such an editor never served anything (NO_EDITOR)."""
    b = await make_backend("vscode", editor_timeout=2)
    async with EchoEditor(b.port, b.editor_token, ["/"]) as ed:
        assert ed.answer["type"] == "registered"
        c = await Client.connect(url(b), TOKEN)
        o = await c.read("in-root.txt")
        await c.close()
    assert o.error_id is None and o.content.startswith("echo:") and o.content.endswith("in-root.txt"), (
        o.error_id,
        o.content,
    )
    assert len(ed.received) == 1


def test_registry_containment_unit():
    """The registry's rule is oh.protocol.paths.within (its table: tests/protocol/test_paths.py)."""
    from oh.runtimes.editors import Editor

    def serves(folder: str, workspace: str) -> bool:
        return Editor("e1", None, None, 0.0, real_folders=[folder]).serves(workspace)

    assert serves("/", "/home/u/ws") and serves("/", "/")
    assert serves("/home/u", "/home/u/ws") and not serves("/home/u", "/home/uv")
