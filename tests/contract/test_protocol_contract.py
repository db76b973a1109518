"""The shared protocol contract: the backend's validator gives each committed frame its recorded verdict
(the extension's suite checks the same file: extension/test/contract.test.ts), and the file is what the
generator writes."""

from __future__ import annotations

import json

from oh.protocol.errors import ProtocolError
from oh.protocol.events import parse_action_frame

from . import gen_protocol_fixtures as gen

FIXTURES = json.loads(gen.FIXTURES.read_text(encoding="ascii"))


def test_fixtures_are_current_and_cover_both_verdicts():
    assert gen.render(gen.fixtures()) == gen.FIXTURES.read_text(encoding="ascii")
    assert len(FIXTURES) >= 500
    assert {v["ok"] for v in FIXTURES} == {True, False}
    assert {v.get("error_id") for v in FIXTURES} >= {"BAD_REQUEST", "TOOL_UNSUPPORTED"}


def test_the_kind_table_fixture_is_current():
    """extension/test/contract.test.ts checks the extension's kind lists against this file."""
    assert json.loads(gen.KINDS.read_text(encoding="ascii")) == json.loads(json.dumps(gen.kind_table()))


def test_every_frame_gets_its_verdict():
    wrong = [v for v in FIXTURES if gen.verdict(v["frame"]) != v]
    assert wrong == [], f"{len(wrong)} differ, first: {wrong[:2]}"


def test_named_rules():
    """The rules the fixtures exist for, spelled out (a regenerated file cannot silently flip them)."""
    by_frame = {v["frame"]: v for v in FIXTURES}
    assert by_frame['{"id": 2.0, "action": "run", "args": {"command": "x"}}'] == {
        "frame": '{"id": 2.0, "action": "run", "args": {"command": "x"}}',
        "ok": False,
        "error_id": "BAD_REQUEST",
        "cause": None,
    }
    start_float = by_frame['{"id": 3, "action": "read", "args": {"path": "/w/a", "start": 1.0}}']
    assert (start_float["ok"], start_float["cause"]) == (False, 3)
    assert by_frame['{"id": 3, "action": "browse", "args": {}}']["error_id"] == "TOOL_UNSUPPORTED"
    assert by_frame['{"id": 1e0, "id": 15, "action": "run", "args": {"command": "x"}}']["id"] == 15
    try:
        parse_action_frame('{"id": 1, "x": 1e400}')
    except ProtocolError as exc:
        assert str(exc.error_id) == "BAD_REQUEST"
    else:
        raise AssertionError("an out-of-range number must be refused")
