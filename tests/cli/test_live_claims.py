"""The live view's lines for several agents (issue 37, docs/protocol.md §3.18): a stale write refused, claims made
and ended (and counted in the footer), a blind write marked; agent-controlled text escaped."""

from __future__ import annotations

from oh.ui.live import LiveState


def _ev(event: str, /, **fields) -> dict:
    return {"type": "event", "event": event, **fields}


def test_stale_refusals_claims_and_blind_writes_are_shown():
    st = LiveState(backend={"instance_id": "abc", "runtime": "local"})
    st.apply(_ev("agent_connected", agent_id="a1", name="alice"))
    lines = st.apply(_ev("claim_made", claim_id="k1", agent_id="a1", name="alice", paths=["/w/src"], until=1.0))
    assert lines == ["claim k1: alice (a1) holds /w/src"] and "1 claim" in st.stats_line()
    lines = st.apply(_ev("stale_refused", agent_id="a2", name="bob\x1b[2J", path="a.py", changed_by="agent alice (a1)"))
    assert lines == ["stale write refused: bob\\x1b[2J (a2) a.py, changed by agent alice (a1)"]  # ESC shown, not sent
    lines = st.apply(_ev("claim_ended", claim_id="k1", agent_id="a1", name="alice", why="disconnected"))
    assert lines == ["claim k1 of alice ended (disconnected)"] and "claim" not in st.stats_line()
    st.apply(_ev("action_started", agent_id="a1", action_id=7, kind="write", summary="b.py"))
    lines = st.apply(
        _ev("action_finished", agent_id="a1", action_id=7, kind="write", summary="b.py", outcome="ok", blind=True)
    )
    assert len(lines) == 1 and lines[0].endswith("(blind: never read)")
    snap = {"type": "snapshot", "backend": {"instance_id": "abc", "claims": [{"claim_id": "k2", "name": "x"}]}}
    st.apply(snap)
    assert set(st.claims) == {"k2"}
