"""The editor-knowledge MCP tools (docs/protocol.md §3.6): schemas that teach, actions, results."""

from __future__ import annotations

import pytest

from oh.mcp import tools
from oh.protocol.events import parse_action
from oh.protocol.kinds import KNOWLEDGE as KNOWLEDGE_KINDS
from oh.protocol.knowledge import knowledge_observation


def test_listed_with_teaching_descriptions_and_strict_schemas():
    listed = {t["name"]: t for t in tools.TOOLS}
    for name in KNOWLEDGE_KINDS:
        t = listed[name]
        assert t["inputSchema"]["additionalProperties"] is False
        assert "vscode" in t["description"], name  # says what it needs
        assert t["annotations"]["destructiveHint"] is False, name
    assert "after you change code" in listed["diagnostics"]["description"]
    assert "diagnostics: true" in listed["diagnostics"]["description"]
    assert "ripgrep" in listed["symbols"]["description"]  # the local runtime's honest fallback
    assert listed["definition"]["inputSchema"]["required"] == ["path", "line", "column"]
    assert (
        "diagnostics" in listed["edit"]["inputSchema"]["properties"]
        and "diagnostics" in listed["write"]["inputSchema"]["properties"]
    )


@pytest.mark.parametrize(
    "name,args",
    [
        ("diagnostics", {}),
        ("diagnostics", {"path": "src/a.ts", "severity": "error", "wait": 99}),
        ("open", {"path": "a.ts", "line": 3, "column": 2, "end_line": 4, "end_column": 1}),
        ("editors", {}),
        ("symbols", {"query": "greet", "limit": 5000}),
        ("definition", {"path": "a.ts", "line": 1, "column": 17}),
        ("references", {"path": "/abs/a.ts", "line": 1, "column": 17, "include_declaration": False}),
    ],
)
def test_actions_are_valid_protocol_actions(name, args):
    action = tools.build_action(name, args, "/ws/sub")
    assert action["action"] == name
    if "path" in args:
        assert action["args"]["path"] == ("/abs/a.ts" if args["path"].startswith("/") else f"/ws/sub/{args['path']}")
    parsed = parse_action({"id": 1, **action})  # the backend accepts what the tool sends (wait and limit clamped)
    assert parsed.kind == name


@pytest.mark.parametrize(
    "name,args,fragment",
    [
        ("definition", {"path": "a.ts", "line": 1}, "needs the argument 'column'"),
        ("definition", {"path": "a.ts", "line": 0, "column": 1}, "'line' must be >= 1"),
        ("symbols", {}, "needs the argument 'query'"),
        ("open", {"path": "a.ts", "lines": 3}, "Unknown argument 'lines'"),
        ("diagnostics", {"severity": "fatal"}, "'severity' must be one of"),
    ],
)
def test_bad_arguments_say_what_to_send(name, args, fragment):
    with pytest.raises(tools.ArgumentError, match=fragment):
        tools.build_action(name, args, "/ws")


def test_edit_and_write_pass_the_diagnostics_flag():
    edit = tools.build_action(
        "edit", {"command": "str_replace", "path": "a.ts", "old_str": "x", "diagnostics": True}, "/ws"
    )
    assert edit["args"]["diagnostics"] is True
    assert "diagnostics" not in tools.build_action("write", {"path": "a.ts", "content": ""}, "/ws")["args"]


def test_results_carry_the_text_and_the_structured_answer():
    d = {
        "path": "/ws/a.ts",
        "line": 4,
        "column": 7,
        "severity": "error",
        "message": "bad",
        "source": "ts",
        "code": 2322,
    }
    obs = knowledge_observation(
        "diagnostics",
        1,
        "/ws/a.ts:4:7: error: bad (ts 2322)\n1 error, 0 warnings in 1 file.",
        {"path": "/ws/a.ts", "diagnostics": [d], "settled": True},
    )
    r = tools.to_result("diagnostics", obs)
    assert not r.is_error and r.text.startswith("/ws/a.ts:4:7: error") and r.structured["diagnostics"] == [d]
    err = tools.to_result(
        "definition",
        {"observation": "error", "content": "needs --runtime vscode", "extras": {"error_id": "TOOL_UNSUPPORTED"}},
    )
    assert err.is_error and err.text == "TOOL_UNSUPPORTED: needs --runtime vscode"
    edit = tools.to_result(
        "edit",
        {
            "observation": "edit",
            "content": "ok\n\nDiagnostics after this change:\nNo problems",
            "extras": {"path": "/ws/a.ts", "diff": "", "diagnostics": []},
        },
    )
    assert edit.structured["diagnostics"] == [] and "Diagnostics after this change" in edit.text
