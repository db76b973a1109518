"""`oh mcp` driven by the `mcp` SDK's own stdio client against real backends (`oh start --runtime local`)."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import subprocess
import sys
import zlib

import pytest

from conftest import mcp_session, text_of

pytestmark = pytest.mark.slow


def _png(width: int = 2, height: int = 1) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


async def test_lists_the_four_tools_with_schemas_that_teach(oh):
    async with mcp_session(oh) as s:  # no backend needed to list tools
        listed = {t.name: t for t in (await s.list_tools()).tools}
    assert sorted(listed) == [
        "claim",
        "definition",
        "diagnostics",
        "edit",
        "editors",
        "ensure",
        "history",
        "job",
        "jobs",
        "open",
        "read",
        "references",
        "release",
        "run",
        "stat",
        "symbols",
        "undo",
        "write",
    ]
    run = listed["run"]
    assert run.input_schema["required"] == ["command"]
    for key in ("is_input", "timeout", "blocking", "reset", "max_output"):
        assert key in run.input_schema["properties"], key
    assert "C-c" in run.description and 'command: ""' in run.description and "reset" in run.description
    assert listed["edit"].input_schema["properties"]["command"]["enum"] == [
        "view",
        "create",
        "str_replace",
        "insert",
        "undo_edit",
    ]
    assert listed["read"].input_schema["properties"]["encoding"]["enum"] == ["auto", "base64"]
    assert "image" in listed["read"].description
    assert listed["read"].annotations.read_only_hint is True and listed["run"].annotations.read_only_hint is False
    assert listed["history"].annotations.read_only_hint is True and listed["undo"].annotations.destructive_hint is True
    for t in listed.values():
        assert t.input_schema["additionalProperties"] is False


async def test_each_tool_through_a_real_backend(oh):
    oh.start("local")
    sub = oh.workspace / "pkg"
    sub.mkdir()
    async with mcp_session(oh, cwd=sub) as s:
        r = await s.call_tool("run", {"command": "echo hello; pwd"})
        assert not r.is_error and r.structured_content["exit_code"] == 0
        assert text_of(r).startswith("hello\n") and text_of(r).rstrip().endswith("[exit code: 0]")

        r = await s.call_tool("run", {"command": "echo oops >&2; (exit 3)"})
        assert (
            r.is_error
            and r.structured_content["exit_code"] == 3
            and "oops" in text_of(r)
            and "[exit code: 3]" in text_of(r)
        )

        # relative paths start where the MCP client started the server (here: a subdirectory)
        r = await s.call_tool("write", {"path": "notes.txt", "content": "alpha\nbeta\n"})
        assert not r.is_error, text_of(r)
        assert (sub / "notes.txt").read_text() == "alpha\nbeta\n"
        r = await s.call_tool("read", {"path": "notes.txt"})
        assert not r.is_error and text_of(r) == "alpha\nbeta\n"
        r = await s.call_tool("read", {"path": "notes.txt", "view_range": [2, -1]})
        assert text_of(r) == "beta\n"

        r = await s.call_tool(
            "edit", {"command": "str_replace", "path": "notes.txt", "old_str": "beta", "new_str": "gamma"}
        )
        assert not r.is_error and "gamma" in text_of(r) and (sub / "notes.txt").read_text() == "alpha\ngamma\n"
        r = await s.call_tool("edit", {"command": "insert", "path": "notes.txt", "insert_line": 0, "new_str": "top"})
        assert not r.is_error and (sub / "notes.txt").read_text() == "top\nalpha\ngamma\n"
        r = await s.call_tool("edit", {"command": "undo_edit", "path": "notes.txt"})
        assert not r.is_error and (sub / "notes.txt").read_text() == "alpha\ngamma\n"
        r = await s.call_tool("edit", {"command": "create", "path": "new.py", "file_text": "print(1)\n"})
        assert not r.is_error and (sub / "new.py").read_text() == "print(1)\n"
        r = await s.call_tool("edit", {"command": "view", "path": "new.py"})
        assert "1\tprint(1)" in text_of(r)
        r = await s.call_tool("edit", {"command": "view", "path": "."})
        assert "new.py" in text_of(r) and "notes.txt" in text_of(r)

        # failures of the tool itself are error results with the backend's error id
        r = await s.call_tool("edit", {"command": "create", "path": "new.py", "file_text": "again"})
        assert r.is_error and r.structured_content["error_id"]
        r = await s.call_tool("read", {"path": "/etc/hostname"})
        assert r.is_error and r.structured_content["error_id"] == "PATH_DENIED"

        # the MCP client's name is the agent's name in the backend (live view, status, trace)
        status = json.loads(oh("status", "--json", check=0).stdout)
        names = [a["name"] for sess in status["sessions"] for a in sess.get("agents", [])]
        assert "claude-code" in names


async def test_soft_timeout_then_continue_then_interrupt(oh):
    oh.start("local")
    async with mcp_session(oh) as s:
        r = await s.call_tool("run", {"command": "echo start; sleep 1.5; echo done", "timeout": 0.5})
        assert not r.is_error and r.structured_content["running"] is True and r.structured_content["exit_code"] == -1
        assert "start" in text_of(r) and "still running" in text_of(r)
        r = await s.call_tool("run", {"command": "", "timeout": 10})
        assert not r.is_error and r.structured_content["exit_code"] == 0 and "done" in text_of(r)

        r = await s.call_tool("run", {"command": "sleep 30", "timeout": 0.3})
        assert r.structured_content["running"] is True
        r = await s.call_tool("run", {"command": "C-c", "is_input": True, "timeout": 5})
        assert r.structured_content["running"] is False and r.structured_content["exit_code"] == 130 and r.is_error

        r = await s.call_tool("run", {"command": "sleep 30", "timeout": 0.5, "blocking": True})  # hard timeout: killed
        assert r.is_error and r.structured_content["running"] is False
        r = await s.call_tool("run", {"command": "echo alive"})
        assert not r.is_error and "alive" in text_of(r)


async def test_image_read_comes_back_as_image_content(oh):
    oh.start("local")
    png = _png()
    (oh.workspace / "dot.png").write_bytes(png)
    async with mcp_session(oh) as s:
        r = await s.call_tool("read", {"path": "dot.png", "encoding": "base64"})
    if r.is_error and "binary file" in text_of(r) and "base64" not in text_of(r):
        pytest.skip("this backend has no base64 reads yet (SPEC-wave2 D, branch core)")
    assert not r.is_error, text_of(r)
    images = [c for c in r.content if c.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data) == png
    assert r.structured_content["mime_type"] == "image/png" and r.structured_content["size"] == len(png)


async def test_concurrent_calls_share_one_connection(oh):
    oh.start("local")
    for i in range(5):
        (oh.workspace / f"f{i}.txt").write_text(f"file {i}\n")
    async with mcp_session(oh) as s:
        calls = [s.call_tool("read", {"path": f"f{i}.txt"}) for i in range(5)]
        calls += [s.call_tool("write", {"path": f"w{i}.txt", "content": str(i)}) for i in range(5)]
        calls.append(s.call_tool("run", {"command": "sleep 0.3; echo ran"}))
        results = await asyncio.gather(*calls)
        assert [text_of(r) for r in results[:5]] == [f"file {i}\n" for i in range(5)]
        assert not any(r.is_error for r in results), [text_of(r) for r in results if r.is_error]
        assert all((oh.workspace / f"w{i}.txt").read_text() == str(i) for i in range(5))
        assert "ran" in text_of(results[-1])

        # two commands at once in one shell: both run, the second in an extra shell (issue 11, protocol §3.8)
        a, b = await asyncio.gather(
            s.call_tool("run", {"command": "sleep 0.5; echo first"}), s.call_tool("run", {"command": "echo second"})
        )
        assert not a.is_error and not b.is_error, (text_of(a), text_of(b))
        assert "first" in text_of(a) and "second" in text_of(b)


async def test_backend_stopped_mid_session_then_restarted(oh):
    info = oh.start("local")
    async with mcp_session(oh) as s:
        assert not (await s.call_tool("run", {"command": "true"})).is_error

        # stopped while an action runs: a clear error result, not a hang or a crash
        pending = asyncio.ensure_future(s.call_tool("run", {"command": "sleep 30", "timeout": 60, "blocking": True}))
        await asyncio.sleep(0.5)
        oh("stop", info["instance_id"], check=0)
        r = await asyncio.wait_for(pending, 30)
        assert r.is_error and r.structured_content["error_id"] in ("CONNECTION_LOST", "INTERRUPTED", "SERVER_ERROR"), (
            text_of(r)
        )

        r = await s.call_tool("run", {"command": "true"})
        assert r.is_error and r.structured_content["error_id"] == "NO_BACKEND"
        assert "oh start" in text_of(r) and str(oh.workspace.resolve()) in text_of(r)

        oh.start("local")  # new port, new session file: the next call finds it
        r = await s.call_tool("run", {"command": "echo back"})
        assert not r.is_error and "back" in text_of(r), text_of(r)


async def test_bad_arguments_are_error_results_and_the_server_lives_on(oh):
    oh.start("local")
    async with mcp_session(oh) as s:
        cases = [
            ("run", {}, "needs the argument 'command'"),
            ("run", {"command": 3}, "'command' must be a string"),
            ("run", {"command": "true", "timeout": -1}, "'timeout' must be >= 0"),
            ("run", {"command": "true", "timout": 5}, "Unknown argument 'timout'"),
            ("read", {"path": ""}, "'path' must not be empty"),
            ("read", {"path": "x", "view_range": [1]}, "view_range"),
            ("read", {"path": "x", "encoding": "utf-16"}, "'encoding' must be one of"),
            ("edit", {"command": "delete", "path": "x"}, "'command' must be one of"),
            ("edit", {"command": "str_replace", "path": "x"}, "needs a non-empty 'old_str'"),
            ("edit", {"command": "create", "path": "x"}, "needs 'file_text'"),
            ("write", {"path": "x"}, "needs the argument 'content'"),
            ("frobnicate", {}, "Unknown tool"),
        ]
        for name, args, expected in cases:
            r = await s.call_tool(name, args)
            assert r.is_error and r.structured_content["error_id"] == "BAD_ARGUMENTS", (name, args, text_of(r))
            assert expected in text_of(r), (name, args, text_of(r))
        r = await s.call_tool("run", {"command": "echo still here", "timeout": 0})  # timeout 0 = none given
        assert not r.is_error and "still here" in text_of(r)


async def test_no_backend_says_how_to_start_one_and_start_flag_starts_one(oh, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with mcp_session(oh, cwd=elsewhere) as s:
        r = await s.call_tool("run", {"command": "true"})
        assert r.is_error and r.structured_content["error_id"] == "NO_BACKEND"
        assert "oh start" in text_of(r) and "--start" in text_of(r)
        # bad arguments are reported as such even without a backend
        r = await s.call_tool("edit", {"command": "nope", "path": "x"})
        assert r.structured_content["error_id"] == "BAD_ARGUMENTS"

    async with mcp_session(oh, "--instance", "f00d", cwd=elsewhere) as s:
        r = await s.call_tool("read", {"path": "x"})
        assert r.structured_content["error_id"] == "NO_BACKEND" and "instance id 'f00d'" in text_of(r)

    async with mcp_session(oh, "--start", "--runtime", "local", cwd=elsewhere) as s:
        r = await s.call_tool("run", {"command": "pwd"})
        assert not r.is_error, text_of(r)
        assert str(elsewhere.resolve()) in text_of(r)
    status = json.loads(oh("status", "--json", check=0).stdout)
    started = [x for x in status["sessions"] if x["workspace"] == str(elsewhere.resolve())]
    assert len(started) == 1  # detached: it outlives the MCP server
    oh.started.append({"pid": started[0]["pid"]})


async def test_token_rotation_reconnects_with_the_new_token(oh):
    oh.start("local")
    async with mcp_session(oh) as s:
        assert not (await s.call_tool("run", {"command": "true"})).is_error
        p = oh("token", "rotate", "--json", check=0)
        assert json.loads(p.stdout)["updated"][0]["closed"] >= 1  # our connection was closed (4001)
        await asyncio.sleep(0.3)
        r = await s.call_tool("run", {"command": "echo again"})
        assert not r.is_error and "again" in text_of(r), text_of(r)


async def test_one_shell_per_client_name_starting_in_the_servers_directory(oh):
    oh.start("local")
    sub = oh.workspace / "sub"
    sub.mkdir()
    async with mcp_session(oh, cwd=sub, client="codex") as s:
        r = await s.call_tool("run", {"command": "pwd; export OH_MCP_MARK=kept"})
        assert text_of(r).splitlines()[0] == str(
            sub.resolve()
        )  # X-OH-Workdir: the shell starts where the client started us
    async with mcp_session(oh, cwd=sub, client="codex") as s:  # a new server process, same client: same shell
        r = await s.call_tool("run", {"command": "echo mark=$OH_MCP_MARK"})
        assert "mark=kept" in text_of(r)
        r = await s.call_tool("run", {"command": "", "reset": True})
        assert not r.is_error and "reset" in text_of(r)
        r = await s.call_tool("run", {"command": "echo mark=$OH_MCP_MARK; pwd"})
        assert "mark=\n" in text_of(r) and str(sub.resolve()) in text_of(r)
        r = await s.call_tool("run", {"command": "export OH_MCP_MARK=again; seq 1 5000", "max_output": 200})
        assert len(text_of(r)) < 2000 and "5000" in text_of(r)  # cut in the middle, the end kept
    async with mcp_session(oh, cwd=sub, client="gemini-cli") as s:  # another client: its own shell
        r = await s.call_tool("run", {"command": "echo mark=$OH_MCP_MARK"})
        assert "mark=\n" in text_of(r)


async def test_client_roots_find_the_backend_when_the_cwd_has_none(oh, tmp_path):
    oh.start("local")
    home = tmp_path / "desktop-app-cwd"  # desktop clients start servers in $HOME or /
    home.mkdir()
    async with mcp_session(oh, cwd=home, roots=[tmp_path / "unrelated", oh.workspace]) as s:
        r = await s.call_tool("run", {"command": "pwd"})
        assert not r.is_error and text_of(r).splitlines()[0] == str(oh.workspace.resolve()), text_of(r)
        r = await s.call_tool("write", {"path": "via-roots.txt", "content": "ok"})
        assert not r.is_error and (oh.workspace / "via-roots.txt").read_text() == "ok"


async def test_runtime_vscode_through_the_headless_editor(oh):
    """The editor leg (`oh attach`, the extension's conformance peer): same tools, same results."""
    oh.start("vscode", None, "--editor-timeout", "20")
    editor = subprocess.Popen(
        [sys.executable, "-m", "oh", "attach"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with mcp_session(oh, client="cursor") as s:
            r = await s.call_tool("edit", {"command": "create", "path": "hello.py", "file_text": "print('hi')\n"})
            assert not r.is_error, text_of(r)
            r = await s.call_tool("run", {"command": "python3 hello.py; exit 4"})
            assert r.is_error and r.structured_content["exit_code"] == 4 and "hi" in text_of(r)
            r = await s.call_tool("read", {"path": "hello.py"})
            assert text_of(r) == "print('hi')\n"
    finally:
        editor.terminate()
        try:
            editor.wait(10)
        except subprocess.TimeoutExpired:
            editor.kill()


async def test_consent_waits_and_a_rejection_is_an_error_result_with_the_reason(oh):
    """Issue 19: under `--consent commands` an MCP `run` waits for the user; rejected, it is an error
    result naming REJECTED and the user's reason, and the command never ran. The agent's security_risk
    reaches what the user sees."""
    oh.start("local", None, "--consent", "commands")
    async with mcp_session(oh) as s:
        call = asyncio.ensure_future(s.call_tool("run", {"command": "touch mcp-made.txt", "security_risk": "MEDIUM"}))
        rows = await asyncio.to_thread(oh.pending)  # the loop goes on serving the MCP call meanwhile
        assert rows[0]["what"] == "touch mcp-made.txt" and rows[0]["security_risk"] == "MEDIUM"
        assert not call.done() and not (oh.workspace / "mcp-made.txt").exists()
        oh("reject", rows[0]["id"], "--reason", "not in this repo", check=0)
        r = await asyncio.wait_for(call, 30)
        assert r.is_error and r.structured_content["error_id"] == "REJECTED" and "not in this repo" in text_of(r)
        assert not (oh.workspace / "mcp-made.txt").exists()


async def test_a_backend_mcp_starts_keeps_the_users_consent(oh):
    """`oh mcp --start` starts the backend with the user's consent settings (here OH_CONSENT=commands), so
    starting it through MCP is no way around them."""
    oh.env["OH_CONSENT"] = "commands"
    oh.env["OH_APPROVAL_TIMEOUT"] = "1"
    async with mcp_session(oh, "--start") as s:
        r = await asyncio.wait_for(s.call_tool("run", {"command": "touch via-start.txt"}), 60)
    for sf in (oh.home / "sessions").glob("*.json"):
        oh.started.append(json.loads(sf.read_text()))  # stopped at teardown
    assert r.is_error and r.structured_content["error_id"] == "REJECTED" and "approval_timeout" in text_of(r), text_of(
        r
    )
    assert not (oh.workspace / "via-start.txt").exists()


async def test_a_unicode_client_name_in_a_unicode_directory(oh):
    """Issue 18 item 4: `clientInfo.name` "claude ✨" and a directory like /tmp/проект made every call fail."""
    oh.start("local")
    sub = oh.workspace / "проект"
    sub.mkdir()
    async with mcp_session(oh, cwd=sub, client="claude ✨ \u202e") as s:
        r = await s.call_tool("run", {"command": "pwd"})
        assert not r.is_error and text_of(r).splitlines()[0] == str(sub.resolve()), text_of(r)
