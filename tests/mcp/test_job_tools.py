"""The pure half of the job/stat MCP tools: argument checks and oh actions (no processes)."""

from __future__ import annotations

import pytest

from oh.mcp import job_tools, tools


def test_job_actions_follow_the_protocol():
    bg = tools.build_action("run", {"command": "npm run dev", "background": True, "force": True}, "/ws")
    assert bg["args"]["background"] is True and bg["args"]["force"] is True and "timeout" not in bg
    follow = tools.build_action("run", {"command": "", "job_id": "j4", "timeout": 3}, "/ws")
    assert follow["args"]["job_id"] == "j4" and follow["timeout"] == 3.0
    plain = tools.build_action("run", {"command": "ls"}, "/ws")["args"]
    assert not {"background", "force", "job_id"} & set(plain)  # older backends see what they know

    assert tools.build_action("jobs", {}, "/ws") == {"action": "job", "args": {"op": "list"}}
    wait = tools.build_action("job", {"op": "wait", "job_id": "j2", "timeout": 9, "tail": 100}, "/ws")
    assert wait == {"action": "job", "args": {"op": "wait", "job_id": "j2", "tail": 100}, "timeout": 9.0}
    assert tools.build_action("job", {"op": "wait", "job_id": "j2"}, "/ws")["timeout"] == job_tools.WAIT_DEFAULT
    out = tools.build_action("job", {"op": "output", "job_id": "j2", "offset": 7, "timeout": 2}, "/ws")["args"]
    assert out == {"op": "output", "job_id": "j2", "offset": 7, "limit": job_tools.OUTPUT_PAGE, "wait": 2.0}
    assert tools.build_action("stat", {"path": "a"}, "/ws/sub") == {"action": "stat", "args": {"path": "/ws/sub/a"}}
    assert (
        tools.build_action("write", {"path": "f", "content": "x", "mode": "append"}, "/ws")["args"]["mode"] == "append"
    )
    assert "mode" not in tools.build_action("write", {"path": "f", "content": "x", "mode": "overwrite"}, "/ws")["args"]


@pytest.mark.parametrize(
    "name, args, says",
    [
        ("run", {"command": "x", "background": True, "is_input": True}, "is_input"),
        ("run", {"command": "x", "background": True, "timeout": 5}, "timeout"),
        ("run", {"command": " ", "background": True}, "needs a command"),
        ("run", {"command": "x", "force": True}, "only goes with background"),
        ("run", {"command": "ls", "job_id": "j1"}, "follow-up"),
        ("job", {"op": "wait"}, "needs the argument 'job_id'"),
        ("job", {"op": "kill", "job_id": "j1"}, "one of 'poll'"),
        ("job", {"op": "wait", "job_id": "j1", "offset": 3}, "takes no 'offset'"),
        ("job", {"op": "output", "job_id": "j1", "offset": -1}, ">= 0"),
        ("write", {"path": "f", "content": "", "mode": "truncate"}, "one of 'overwrite'"),
        ("stat", {}, "needs the argument 'path'"),
    ],
)
def test_bad_arguments_say_what_to_send(name, args, says):
    with pytest.raises(tools.ArgumentError) as exc:
        tools.build_action(name, args, "/ws")
    assert says in str(exc.value)


def test_results_flag_failed_jobs_and_refused_creates():
    record = {"job_id": "j2", "state": "FAILED", "exit_code": 3}
    r = tools.to_result(
        "job", {"observation": "job", "content": "boom\n", "extras": {"op": "wait", "job": record, "timed_out": False}}
    )
    assert r.is_error and r.structured["exit_code"] == 3 and r.text.endswith("[job j2 FAILED, exit code: 3]")
    ok = tools.to_result(
        "job",
        {
            "observation": "job",
            "content": "",
            "extras": {"op": "poll", "job": dict(record, state="RUNNING", exit_code=None)},
        },
    )
    assert not ok.is_error and ok.structured["state"] == "RUNNING"
    w = tools.to_result(
        "write",
        {
            "observation": "write",
            "content": "The file /f already exists; it was not changed (mode create).",
            "extras": {"path": "/f"},
        },
        {"action": "write", "args": {"mode": "create"}},
    )
    assert w.is_error and w.structured["written"] is False


def test_ensure_tool_action_and_result():
    assert tools.build_action("ensure", {}, "/ws") == {"action": "ensure", "args": {"path": "/ws"}, "timeout": 50.0}
    assert tools.build_action(
        "ensure", {"path": "sub", "targets": ["node", "node"], "force": True, "wait": False, "timeout": 9}, "/ws"
    ) == {
        "action": "ensure",
        "args": {"path": "/ws/sub", "targets": ["node"], "force": True, "wait": False},
        "timeout": 9.0,
    }
    for bad in ({"targets": []}, {"targets": ["go"]}, {"force": "yes"}, {"timeout": 0}):
        with pytest.raises(tools.ArgumentError):
            tools.build_action("ensure", bad, "/ws")
    failed = tools.to_result(
        "ensure",
        {"observation": "ensure", "content": "Environment NOT ready", "extras": {"state": "failed", "targets": []}},
    )
    assert failed.is_error and failed.structured["state"] == "failed"
    ready = tools.to_result(
        "ensure", {"observation": "ensure", "content": "Environment ready", "extras": {"state": "ready", "targets": []}}
    )
    assert not ready.is_error and ready.text == "Environment ready"
