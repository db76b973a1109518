"""Editor knowledge kinds (docs/protocol.md §3.6): validation, registration defaults, observations."""

from __future__ import annotations

import pytest

from oh.protocol.errors import ErrorId, ProtocolError
from oh.protocol.events import decode_frame, parse_action, parse_observation, summarize
from oh.protocol.frames import parse_registration
from oh.protocol.kinds import KNOWLEDGE as KNOWLEDGE_KINDS
from oh.protocol.knowledge import knowledge_observation


def _refused(obj) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        parse_action(obj)
    return info.value


@pytest.mark.parametrize(
    "kind,args",
    [
        ("diagnostics", {}),
        ("diagnostics", {"path": "a.ts", "severity": "hint", "wait": 0}),
        ("open", {"path": "a.ts"}),
        ("open", {"path": "a.ts", "line": 3, "column": 1, "end_line": 4, "end_column": 2, "preserve_focus": True}),
        ("editors", {}),
        ("symbols", {"query": ""}),
        ("symbols", {"query": "greet", "limit": 1000}),
        ("definition", {"path": "a.ts", "line": 1, "column": 1}),
        ("references", {"path": "a.ts", "line": 1, "column": 1, "include_declaration": False}),
    ],
)
def test_valid_knowledge_actions(kind, args):
    action = parse_action({"id": 7, "action": kind, "args": args})
    assert (action.kind, action.id, action.args) == (kind, 7, args)


@pytest.mark.parametrize(
    "kind,args,needle",
    [
        ("diagnostics", {"severity": "fatal"}, "args.severity"),
        ("diagnostics", {"wait": 61}, "args.wait"),
        ("diagnostics", {"wait": True}, "args.wait"),
        ("diagnostics", {"path": ""}, "args.path"),
        ("open", {}, "args.path"),
        ("open", {"path": "a", "line": 0}, "args.line"),
        ("open", {"path": "a", "end_line": 2}, "end_line needs args.line"),
        ("symbols", {}, "args.query"),
        ("symbols", {"query": "x" * 501}, "args.query"),
        ("symbols", {"query": "x", "limit": 0}, "args.limit"),
        ("definition", {"path": "a", "line": 1}, "args.column"),
        ("definition", {"path": "a", "line": True, "column": 1}, "args.line"),
        ("references", {"path": "a\x00b", "line": 1, "column": 1}, "NUL"),
        ("references", {"path": "a", "line": 1, "column": 1, "include_declaration": "no"}, "include_declaration"),
    ],
)
def test_bad_knowledge_args_are_bad_request_with_cause(kind, args, needle):
    err = _refused({"id": 3, "action": kind, "args": args})
    assert err.error_id == ErrorId.BAD_REQUEST and err.cause == 3
    assert needle in err.message


def test_float_positions_are_refused_like_other_integers():
    err = _refused(decode_frame('{"id": 1, "action": "definition", "args": {"path": "a", "line": 2.0, "column": 1}}'))
    assert err.error_id == ErrorId.BAD_REQUEST


def test_edit_and_write_take_a_diagnostics_flag():
    assert (
        parse_action({"id": 1, "action": "edit", "args": {"path": "a", "command": "view", "diagnostics": True}}).args[
            "diagnostics"
        ]
        is True
    )
    assert parse_action({"id": 1, "action": "write", "args": {"path": "a", "content": "", "diagnostics": False}})
    assert (
        "args.diagnostics"
        in _refused({"id": 1, "action": "edit", "args": {"path": "a", "command": "view", "diagnostics": "yes"}}).message
    )


def test_unknown_kind_lists_every_kind():
    err = _refused({"id": 1, "action": "browse", "args": {}})
    assert err.error_id == ErrorId.TOOL_UNSUPPORTED
    for kind in ("run", *KNOWLEDGE_KINDS):
        assert kind in err.message


def _register(**extra):
    return {"type": "register", "protocol": 1, "session": None, "workspace_folders": ["/w"], **extra}


def test_registration_capabilities():
    assert parse_registration(_register(capabilities=["run", "symbols", "bogus"]), "i").capabilities == [
        "run",
        "symbols",
    ]
    # an older editor that sends no list gets the four OpenHands kinds, not the knowledge ones
    assert parse_registration(_register(), "i").capabilities == ["run", "read", "write", "edit"]


def test_knowledge_observations_pass_the_editor_leg_check():
    obs = knowledge_observation("symbols", 5, "a.ts:1:1: function f\nmore", {"query": "f", "symbols": []})
    assert parse_observation(obs) is obs
    assert obs["message"] == "a.ts:1:1: function f" and obs["observation"] == "symbols" and obs["cause"] == 5
    with pytest.raises(ProtocolError):
        parse_observation({**obs, "observation": "telepathy"})


def test_summaries_name_the_place_not_the_contents():
    assert (
        summarize(parse_action({"id": 1, "action": "definition", "args": {"path": "/w/a.ts", "line": 3, "column": 4}}))
        == "definition /w/a.ts:3:4"
    )
    assert summarize(parse_action({"id": 1, "action": "diagnostics", "args": {}})) == "diagnostics workspace"
    assert summarize(parse_action({"id": 1, "action": "symbols", "args": {"query": "greet"}})) == "symbols greet"
