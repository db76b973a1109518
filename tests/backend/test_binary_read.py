"""Binary reads (docs/protocol.md, "Binary read"): `read` with `args.encoding: "binary"` answers with
one binary frame (4-byte header length, JSON header, raw bytes); everything else stays JSON.
Real backends on loopback, the real headless editor, raw editors whose frames the tests control."""

from __future__ import annotations

import asyncio
import base64
import json
import struct

import pytest
from websockets.asyncio.client import connect

from oh.client import Client
from oh.protocol import binary
from oh.protocol.errors import ProtocolError
from oh.protocol.events import read_observation

from .conftest import TOKEN
from .peers import serve_headless

ALL_BYTES = bytes(range(256)) * 300 + b"\xff\xfe not utf-8 \x00"


def url(b):
    return f"ws://127.0.0.1:{b.port}"


def binary_read(i: int, path: str) -> str:
    return json.dumps({"id": i, "action": "read", "args": {"path": path, "encoding": "binary"}})


# ----------------------------------------------------------------------------- the frame format


def test_pack_unpack_round_trip_and_refusals():
    obs = read_observation(7, "f.bin", b"\x00{raw}")
    frame = binary.pack(obs)
    (n,) = struct.unpack(">I", frame[:4])
    assert json.loads(frame[4 : 4 + n]) == {k: v for k, v in obs.items() if k != "content"}
    assert frame[4 + n :] == b"\x00{raw}"
    assert (
        binary.is_binary_frame(frame)
        and not binary.is_binary_frame(b'{"id": 1}')
        and not binary.is_binary_frame("\x00")
    )
    back = binary.unpack(frame)
    assert bytes(back.pop("content")) == b"\x00{raw}" and back["cause"] == 7
    for bad in (
        b"\x00\x00",
        struct.pack(">I", 99) + b"{}",
        struct.pack(">I", 2) + b"[]",
        struct.pack(">I", 3) + b"{x}",
        struct.pack(">I", binary.MAX_HEADER + 1) + b"x" * (binary.MAX_HEADER + 2),
        struct.pack(">I", 14) + b'{"content":""}',
    ):
        with pytest.raises(ProtocolError):
            binary.unpack(bad)


# ----------------------------------------------------------------------------- local runtime


async def test_local_binary_read_is_one_binary_frame_and_json_stays_json(make_backend, workspace):
    (workspace / "f.bin").write_bytes(ALL_BYTES)
    (workspace / "t.txt").write_text("text\n")
    b = await make_backend("local")
    async with connect(url(b) + "/v1/agent", additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
        await ws.send(binary_read(1, "f.bin"))
        frame = await asyncio.wait_for(ws.recv(), 30)
        assert isinstance(frame, bytes) and binary.is_binary_frame(frame)
        obs = binary.unpack(frame)
        assert bytes(obs["content"]) == ALL_BYTES and obs["cause"] == 1 and obs["observation"] == "read"
        assert obs["extras"]["encoding"] == "binary" and obs["extras"]["mime_type"] == "application/octet-stream"
        await ws.send(json.dumps({"id": 2, "action": "read", "args": {"path": "t.txt"}}))
        text = await asyncio.wait_for(ws.recv(), 30)
        assert isinstance(text, str) and json.loads(text)["content"] == "text\n"
        await ws.send(binary_read(3, "missing.bin"))  # an error stays a JSON text frame
        err = json.loads(await asyncio.wait_for(ws.recv(), 30))
        assert err["observation"] == "error" and err["cause"] == 3


async def test_python_client_read_bytes(make_backend, workspace):
    (workspace / "f.bin").write_bytes(ALL_BYTES)
    b = await make_backend("local")
    async with await Client.connect(url(b), TOKEN) as c:
        got, text = await asyncio.gather(c.read_bytes("f.bin"), c.run("echo hi"))
        assert got.content == ALL_BYTES and isinstance(got.content, bytes) and got.extras["encoding"] == "binary"
        assert text.content == "hi\n"


# ----------------------------------------------------------------------------- vscode runtime


async def test_headless_editor_answers_binary_and_the_backend_forwards_it(make_backend, workspace):
    (workspace / "f.bin").write_bytes(ALL_BYTES)
    b = await make_backend("vscode")
    _, task = await serve_headless(b, workspace)
    try:
        assert "binary" in b.registry.all()[0].registration.capabilities
        async with await Client.connect(url(b), TOKEN) as c:
            got = await asyncio.wait_for(c.read_bytes(str(workspace / "f.bin")), 30)
            assert got.content == ALL_BYTES and got.extras["encoding"] == "binary" and got.kind == "read"
            denied = await asyncio.wait_for(c.read_bytes("/etc/passwd"), 30)
            assert denied.error_id == "PATH_DENIED"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class RawEditor:
    """An editor without the "binary" capability whose answers the test writes."""

    def __init__(self, b, answer, capabilities=("read",)) -> None:
        self.b, self.answer, self.received, self.refusals, self.caps = b, answer, [], [], list(capabilities)

    async def __aenter__(self):
        self.conn = await connect(
            url(self.b) + "/v1/editor", additional_headers={"Authorization": f"Bearer {self.b.editor_token}"}
        )
        await self.conn.send(
            json.dumps(
                {
                    "type": "register",
                    "protocol": 1,
                    "session": self.b.instance_id,
                    "workspace_folders": [self.b.workspace],
                    "editor": {"name": "raw", "version": "0", "pid": 1},
                    "capabilities": self.caps,
                }
            )
        )
        assert json.loads(await self.conn.recv())["type"] == "registered"
        self.task = asyncio.create_task(self._loop())
        return self

    async def _loop(self):
        async for msg in self.conn:
            frame = json.loads(msg)
            if frame.get("type") == "error":
                self.refusals.append(frame)
                continue
            if frame.get("type") is None:
                self.received.append(frame)
                for out in self.answer(frame):
                    await self.conn.send(out)

    async def __aexit__(self, *exc):
        self.task.cancel()
        await self.conn.close()


async def test_editor_without_binary_is_asked_for_base64_and_the_agent_still_gets_bytes(make_backend, workspace):
    b = await make_backend("vscode")

    def answer(frame):
        obs = read_observation(
            frame["id"],
            frame["args"]["path"],
            base64.b64encode(ALL_BYTES).decode(),
            {"encoding": "base64", "mime_type": "x/y"},
        )
        obs["id"] = 1
        return [json.dumps(obs)]

    async with RawEditor(b, answer) as editor, await Client.connect(url(b), TOKEN) as c:
        got = await asyncio.wait_for(c.read_bytes(str(workspace / "f.bin")), 30)
        assert editor.received[0]["args"]["encoding"] == "base64"
        assert got.content == ALL_BYTES and got.extras["encoding"] == "binary" and got.extras["mime_type"] == "x/y"


async def test_bad_or_unasked_binary_frames_from_an_editor(make_backend, workspace):
    b = await make_backend("vscode")

    def answer(frame):
        path = frame["args"]["path"]
        good = binary.pack({**read_observation(frame["id"], path, b"raw"), "id": 1})
        if path.endswith("garbage"):  # refused; then the real (JSON) answer
            return [
                b"\x00\x00\x00\xff{",
                binary.pack({**read_observation(frame["id"], path, b""), "observation": "run", "id": 2}),
                json.dumps({**read_observation(frame["id"], path, "fine"), "id": 3}),
            ]
        return [good]  # a binary answer to a JSON read: never reaches the agent as bytes

    async with RawEditor(b, answer) as editor, await Client.connect(url(b), TOKEN) as c:
        obs = await asyncio.wait_for(c.read(str(workspace / "garbage")), 30)
        assert obs.content == "fine"
        assert [r["error_id"] for r in editor.refusals] == ["BAD_REQUEST", "BAD_REQUEST"]
        obs = await asyncio.wait_for(c.read(str(workspace / "plain.txt")), 30)
        assert obs.error_id == "SERVER_ERROR" and "binary frame" in obs["message"]


# ----------------------------------------------------------------------------- fragments (no join of the content)


def test_parts_are_pack_cut_in_two():
    obs = {**read_observation(9, "f.bin", ALL_BYTES), "id": 4}
    head, content = binary.parts(obs)
    assert head + content == binary.pack(obs) and content is obs["content"], "the content is not copied"
    (n,) = struct.unpack(">I", head[:4])
    assert len(head) == 4 + n


async def test_binary_read_crosses_as_two_fragments_and_editors_may_fragment_anyhow(make_backend, workspace):
    """The backend sends a binary read as [length + header, content] (docs/protocol.md §3.7); an
    editor's answer cut anywhere (here inside the header and inside the content) is reassembled."""
    b = await make_backend("vscode")

    def answer(frame):
        msg = binary.pack({**read_observation(frame["id"], frame["args"]["path"], ALL_BYTES), "id": 1})
        return [[msg[:3], msg[3:20], msg[20:5000], msg[5000:]]]  # one fragmented message

    async with RawEditor(b, answer, capabilities=("read", "binary")) as editor:
        async with connect(url(b) + "/v1/agent", additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
            await ws.send(binary_read(1, str(workspace / "f.bin")))
            frags = [f async for f in ws.recv_streaming()]
        assert editor.received[0]["args"]["encoding"] == "binary"
        data = [f for f in frags if f]
        assert len(data) == 2 and data[1] == ALL_BYTES, [len(f) for f in frags]
        (n,) = struct.unpack(">I", data[0][:4])
        assert len(data[0]) == 4 + n and json.loads(data[0][4:])["cause"] == 1
        async with await Client.connect(url(b), TOKEN) as c:  # the Python client takes the fragments too
            got = await asyncio.wait_for(c.read_bytes(str(workspace / "f.bin")), 30)
            assert got.content == ALL_BYTES and isinstance(got.content, bytes)


def test_the_client_takes_any_fragmentation_of_a_binary_read():
    from oh.client.aio import _binary_fragments

    obs = {**read_observation(9, "f.bin", ALL_BYTES), "id": 4}
    frame = binary.pack(obs)
    head = len(binary.parts(obs)[0])
    for cuts in ([head], [1], [3], [head - 1], [head + 1], [2, 10, head + 100]):
        frags = [frame[a:b] for a, b in zip([0, *cuts], [*cuts, len(frame)])] + [b""]
        got = _binary_fragments(frags)
        assert got["content"] == ALL_BYTES and isinstance(got["content"], bytes) and got["cause"] == 9, cuts
    assert _binary_fragments([struct.pack(">I", 99), b"{}"]) is None  # not a binary read: lands in stray
