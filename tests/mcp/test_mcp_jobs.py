"""`oh mcp`'s job, stat and write-mode tools, driven by the `mcp` SDK's stdio client against a real backend."""

from __future__ import annotations

import pytest

from conftest import mcp_session, text_of

pytestmark = [pytest.mark.slow]


async def test_background_job_poll_wait_output_cancel(oh):
    oh.start("local")
    async with mcp_session(oh) as s:
        # `read` on a marker file makes the job's progress observable without sleeping in the test
        r = await s.call_tool(
            "run",
            {"command": "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second; exit 3", "background": True},
        )
        assert not r.is_error, text_of(r)
        job = r.structured_content["job_id"]
        assert job and r.structured_content["running"] is True and "job tool" in text_of(r)

        again = await s.call_tool(
            "run",
            {"command": "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second; exit 3", "background": True},
        )
        assert again.structured_content["job_id"] == job and again.structured_content["already_running"] is True

        r = await s.call_tool("jobs", {})
        assert [j["job_id"] for j in r.structured_content["jobs"]] == [job]

        r = await s.call_tool("job", {"op": "output", "job_id": job, "offset": 0, "timeout": 10})  # waits for "first"
        assert not r.is_error and text_of(r).startswith("first\n") and r.structured_content["next_offset"] == 6
        r = await s.call_tool("job", {"op": "poll", "job_id": job})
        assert (
            not r.is_error and r.structured_content["state"] == "RUNNING" and r.structured_content["exit_code"] is None
        )

        (oh.workspace / "go").touch()
        r = await s.call_tool("job", {"op": "wait", "job_id": job, "timeout": 30})
        assert r.is_error and r.structured_content["state"] == "FAILED" and r.structured_content["exit_code"] == 3
        assert "second" in text_of(r) and "exit code: 3" in text_of(r)

        r = await s.call_tool("job", {"op": "output", "job_id": job, "offset": 6})  # only what follows the first page
        assert text_of(r).startswith("second\n") and "first" not in text_of(r)
        assert (
            r.structured_content["eof"] is True
            and r.structured_content["next_offset"] == r.structured_content["size"] == 13
        )

        r = await s.call_tool("run", {"command": "sleep 60", "background": True})
        slow = r.structured_content["job_id"]
        assert slow != job
        r = await s.call_tool("job", {"op": "cancel", "job_id": slow})
        assert not r.is_error and r.structured_content["state"] == "CANCELLED", text_of(r)
        r = await s.call_tool("job", {"op": "wait", "job_id": slow, "timeout": 5})
        assert r.is_error and r.structured_content["state"] == "CANCELLED"

        r = await s.call_tool("job", {"op": "poll", "job_id": "j999"})
        assert r.is_error and r.structured_content["error_id"] == "NO_JOB"

        # a soft-timed-out foreground command names its job_id; the follow-up uses it
        r = await s.call_tool(
            "run", {"command": "while [ ! -e go2 ]; do sleep 0.05; done; echo fg-done", "timeout": 0.3}
        )
        assert r.structured_content["running"] is True
        fg = r.structured_content["job_id"]
        (oh.workspace / "go2").touch()
        r = await s.call_tool("run", {"command": "", "job_id": fg, "timeout": 20})
        assert not r.is_error and r.structured_content["exit_code"] == 0 and "fg-done" in text_of(r)


async def test_write_modes_and_stat(oh):
    oh.start("local")
    async with mcp_session(oh) as s:
        r = await s.call_tool("write", {"path": "log.txt", "content": "one\n", "mode": "create"})
        assert not r.is_error and r.structured_content["written"] is True, text_of(r)
        r = await s.call_tool("write", {"path": "log.txt", "content": "two\n", "mode": "create"})
        assert r.is_error and r.structured_content["written"] is False and "already exists" in text_of(r)
        r = await s.call_tool("write", {"path": "log.txt", "content": "three\n", "mode": "append"})
        assert not r.is_error and (oh.workspace / "log.txt").read_text() == "one\nthree\n"

        r = await s.call_tool("stat", {"path": "log.txt"})
        sc = r.structured_content
        assert (
            not r.is_error
            and sc["exists"] is True
            and sc["type"] == "file"
            and sc["size"] == 10
            and sc["encoding"] == "utf-8"
        )
        r = await s.call_tool("stat", {"path": "missing/nothing.txt"})
        assert not r.is_error and r.structured_content["exists"] is False and "does not exist" in text_of(r)
        r = await s.call_tool("stat", {"path": "/etc/hostname"})
        assert r.is_error and r.structured_content["error_id"] == "PATH_DENIED"


async def test_bad_job_arguments_are_clear_error_results(oh):
    async with mcp_session(oh) as s:  # refused before any backend is needed
        r = await s.call_tool("job", {"op": "wait"})
        assert r.is_error and r.structured_content["error_id"] == "BAD_ARGUMENTS" and "job_id" in text_of(r)
        r = await s.call_tool("job", {"op": "output", "job_id": "j1", "tail": 5})
        assert r.is_error and "takes no 'tail'" in text_of(r)
        r = await s.call_tool("run", {"command": "ls", "force": True})
        assert r.is_error and "background" in text_of(r)
        r = await s.call_tool("write", {"path": "f", "content": "", "mode": "truncate"})
        assert r.is_error and "overwrite" in text_of(r)


async def test_ensure_tool_makes_a_node_project_ready_then_a_noop(oh):
    import shutil

    from ensure_projects import node_project

    if shutil.which("npm") is None:
        pytest.skip("npm is needed (extension/e2e/setup.sh installs it)")
    node_project(oh.workspace)
    oh.start("local")
    async with mcp_session(oh) as s:
        r = await s.call_tool("ensure", {})
        assert not r.is_error, text_of(r)
        node = r.structured_content["targets"][0]
        assert (
            r.structured_content["state"] == "ready"
            and node["did"] == "installed"
            and node["ready"] == {"bin": "node_modules/.bin"}
        )
        r = await s.call_tool("ensure", {"targets": ["node"]})
        assert (
            not r.is_error and r.structured_content["targets"][0]["did"] == "nothing" and "nothing to do" in text_of(r)
        )
        r = await s.call_tool("ensure", {"targets": ["ruby"]})
        assert r.is_error and "python and/or node" in text_of(r)
