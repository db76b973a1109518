"""oh.protocol.actions: the one builder of action frames, on a table; and every surface (the Python client,
the CLI's verbs, `oh mcp`) sends what it builds, so a background `run` carries the OpenHands fields a
foreground one does. Every frame built here is one the backend's parser accepts."""

from __future__ import annotations

import pytest

from oh.client import actions as client_actions
from oh.client import jobs as client_jobs
from oh.mcp.tools import build_action as mcp_action
from oh.protocol import actions
from oh.protocol.events import parse_action

OH_RUN = {
    "is_input": False,
    "thought": "",
    "blocking": False,
    "is_static": False,
    "cwd": None,
    "hidden": False,
    "confirmation_state": "confirmed",
    "security_risk": -1,
}

TABLE = [
    (
        "run, the defaults: OpenHands' own frame",
        actions.run("ls"),
        {"action": "run", "args": {"command": "ls", **OH_RUN}},
    ),
    (
        "run with oh's additions",
        actions.run(
            "make", blocking=True, cwd="/w", timeout=5, reset=True, env={"A": "1"}, max_output=0, exclusive=True
        ),
        {
            "action": "run",
            "timeout": 5.0,
            "args": {
                "command": "make",
                **OH_RUN,
                "blocking": True,
                "cwd": "/w",
                "reset": True,
                "exclusive": True,
                "env": {"A": "1"},
                "max_output": 0,
            },
        },
    ),
    (
        "run in the background",
        actions.run("npm run dev", background=True, force=True, cwd="/w"),
        {"action": "run", "args": {"command": "npm run dev", **OH_RUN, "cwd": "/w", "background": True, "force": True}},
    ),
    (
        "input for a running job",
        actions.run("y", is_input=True, job_id="j2", timeout=3),
        {"action": "run", "timeout": 3.0, "args": {"command": "y", **OH_RUN, "is_input": True, "job_id": "j2"}},
    ),
    (
        "run with a risk label",
        actions.run("rm x", security_risk="HIGH"),
        {"action": "run", "security_risk": "HIGH", "args": {"command": "rm x", **OH_RUN}},
    ),
    (
        "read",
        actions.read("/w/f"),
        {
            "action": "read",
            "args": {
                "path": "/w/f",
                "start": 0,
                "end": -1,
                "thought": "",
                "security_risk": -1,
                "impl_source": "oh_aci",
                "view_range": None,
            },
        },
    ),
    (
        "read a range in an encoding",
        actions.read("/w/f", start=2, end=9, view_range=[1, 3], encoding="base64"),
        {
            "action": "read",
            "args": {
                "path": "/w/f",
                "start": 2,
                "end": 9,
                "thought": "",
                "security_risk": -1,
                "impl_source": "oh_aci",
                "view_range": [1, 3],
                "encoding": "base64",
            },
        },
    ),
    (
        "write",
        actions.write("/w/f", "x"),
        {
            "action": "write",
            "args": {"path": "/w/f", "content": "x", "start": 0, "end": -1, "thought": "", "security_risk": -1},
        },
    ),
    (
        "write in a mode, with diagnostics",
        actions.write("/w/f", "x", mode="append", diagnostics=True),
        {
            "action": "write",
            "args": {
                "path": "/w/f",
                "content": "x",
                "start": 0,
                "end": -1,
                "thought": "",
                "security_risk": -1,
                "mode": "append",
                "diagnostics": True,
            },
        },
    ),
    (
        "edit",
        actions.edit("/w/f", "str_replace", old_str="a", new_str="b"),
        {
            "action": "edit",
            "args": {
                "path": "/w/f",
                "command": "str_replace",
                "file_text": None,
                "old_str": "a",
                "new_str": "b",
                "insert_line": None,
                "content": "",
                "start": 1,
                "end": -1,
                "thought": "",
                "security_risk": -1,
                "impl_source": "oh_aci",
            },
        },
    ),
    (
        "job: None arguments are left out",
        actions.job("output", "j1", offset=10, limit=None, wait=5.0),
        {"action": "job", "args": {"op": "output", "offset": 10, "wait": 5.0, "job_id": "j1"}},
    ),
    (
        "job wait with its deadline",
        actions.job("wait", "j1", timeout=200),
        {"action": "job", "timeout": 200.0, "args": {"op": "wait", "job_id": "j1"}},
    ),
    ("stat", actions.stat("/w/f"), {"action": "stat", "args": {"path": "/w/f"}}),
]


@pytest.mark.parametrize("built,expected", [(b, e) for _, b, e in TABLE], ids=[name for name, _, _ in TABLE])
def test_frames(built, expected):
    assert built == expected
    parse_action(dict(built, id=1))  # the backend takes it (raises ProtocolError otherwise)


def test_a_write_mode_outside_the_three_is_refused():
    with pytest.raises(ValueError, match="overwrite, create, append"):
        actions.write("/w/f", "x", mode="truncate")


# The same request through each surface gives the same frame (they only differ in how they take it).
SAME = [
    (
        "background run",
        client_jobs.run_background("sleep 9", cwd="/w"),
        mcp_action("run", {"command": "sleep 9", "background": True}, "/w"),
        {"cwd": "/w"},
    ),
    (
        "foreground run",
        client_actions.run("ls", timeout=4.0, blocking=True),
        mcp_action("run", {"command": "ls", "blocking": True, "timeout": 4}, "/w"),
        {},
    ),
    ("follow-up", client_jobs.follow_up("", "j3"), mcp_action("run", {"command": "", "job_id": "j3"}, "/w"), {}),
    ("read", client_actions.read("/w/f"), mcp_action("read", {"path": "f"}, "/w"), {}),
    ("write", client_actions.write("/w/f", "x"), mcp_action("write", {"path": "f", "content": "x"}, "/w"), {}),
    (
        "write in a mode",
        client_jobs.write("/w/f", "x", mode="create"),
        mcp_action("write", {"path": "f", "content": "x", "mode": "create"}, "/w"),
        {},
    ),
    ("job list", client_jobs.job("list"), mcp_action("jobs", {}, "/w"), {}),
    ("stat", client_jobs.stat("/w/f"), mcp_action("stat", {"path": "f"}, "/w"), {}),
]


@pytest.mark.parametrize("client,mcp,mcp_cwd", [row[1:] for row in SAME], ids=[row[0] for row in SAME])
def test_every_surface_builds_the_same_frame(client, mcp, mcp_cwd):
    mcp = dict(mcp, args={**mcp["args"], **mcp_cwd})  # the mcp tool takes no cwd for a job; the client here gave /w
    assert client == mcp


def test_the_cli_verbs_send_the_builders_frames(monkeypatch):
    """`oh run` / `oh run --background` / `oh write --append` build their frames with the same builder."""
    from oh.fastpath import jobs, verbs
    from oh.fastpath.streams import Streams

    sent: list[dict] = []

    class Link:
        def __init__(self, session, **_kw):
            pass

        def ask(self, action, watch=None):  # the progress opt-in is added by the real link
            sent.append(action)
            if action["action"] == "run" and action["args"].get("background"):
                return {"observation": "run", "content": "", "extras": {"metadata": {"job_id": "j1"}}}
            return {"observation": action["action"], "content": "", "extras": {"metadata": {"exit_code": 0}}}

        def close(self):
            pass

    monkeypatch.setattr(verbs, "AgentLink", Link)
    monkeypatch.setattr(jobs, "AgentLink", Link)
    session = {"workspace": "/w", "runtime": "local"}
    monkeypatch.chdir("/")
    io = Streams.buffers()
    assert verbs.run(io, session, command=["ls"], timeout=3.0, json_=True) == 0
    assert jobs.start_background(io, session, command=["sleep", "9"]) == 0
    assert jobs.write_mode(io, session, path="/w/f", content="x", mode="append") == 0
    assert sent == [
        actions.run("ls", blocking=True, cwd="/w", timeout=3.0),
        actions.run("sleep 9", background=True, cwd="/w"),
        actions.write("/w/f", "x", mode="append"),
    ]
