"""Review mode's pure rules (src/oh/protocol/review.py, frames.parse_proposal_event)."""

from __future__ import annotations

import pytest

from oh.protocol import frames, review
from oh.protocol.errors import ErrorId, ProtocolError


def test_which_actions_are_proposals():
    assert review.is_proposal("write", {"path": "/a", "content": ""})
    for cmd in ("create", "str_replace", "insert", "undo_edit"):
        assert review.is_proposal("edit", {"command": cmd})
    assert not review.is_proposal("edit", {"command": "view"})
    assert not review.is_proposal("read", {}) and not review.is_proposal("run", {"command": "rm -rf x"})


def test_requests_parse_or_say_what_to_fix():
    assert review.parse_review_request({"op": "list"}) == review.ReviewRequest("list")
    assert review.parse_review_request({"op": "accept", "all": True}).all
    r = review.parse_review_request({"op": "reject", "id": "p12", "reason": "  too broad  "})
    assert (r.proposal_id, r.reason) == ("p12", "too broad")
    assert review.parse_review_request({"op": "reject", "id": "p1", "reason": "x" * 5000}).reason.endswith(" [...]")
    for bad in ({"op": "show"}, {"op": "show", "id": "../p1"}, {"op": "accept", "id": 3}, {"op": "delete", "id": "p1"}):
        with pytest.raises(ProtocolError) as info:
            review.parse_review_request(bad)
        assert info.value.error_id is ErrorId.BAD_REQUEST


def test_messages_carry_the_reason_last():
    assert review.rejected_message("/w/a", "no tabs").endswith("Reason: no tabs")
    assert review.rejected_message("/w/a", "").endswith("Reason: (no reason given)")
    assert "within 2.5 s" in review.timeout_message("/w/a", 2.5)
    assert str(ErrorId.REJECTED) == "REJECTED"


def test_proposal_event_frames():
    ok = frames.parse_proposal_event(
        {"event": "proposal_closed", "proposal": {"cause": 4, "path": "/p", "kind": "write", "decision": "accepted"}}
    )
    assert ok == ("proposal_closed", {"action_id": 4, "path": "/p", "kind": "write", "decision": "accepted"})
    for bad in (
        {"event": "proposal_opened", "proposal": {"cause": True}},
        {"event": "x", "proposal": {"cause": 1}},
        {"event": "proposal_opened"},
    ):
        assert frames.parse_proposal_event(bad) is None
    assert "review" in frames.KNOWN_CAPABILITIES
    assert frames.registered("e1", "i", "/w", review=True, review_timeout=5.0)["review_timeout"] == 5.0
