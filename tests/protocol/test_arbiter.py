"""protocol/arbiter.py (issue 37, docs/protocol.md §3.18): the stale-write decision, the diff a refusal carries,
claims' coverage and the claims control request. Pure: no files, no sockets."""

from __future__ import annotations

import pytest

from oh.protocol import arbiter as a
from oh.protocol.errors import ProtocolError

V1, V2 = a.version_of(b"one\n"), a.version_of(b"two\n")


@pytest.mark.parametrize(
    ("kind", "args", "base", "current", "verdict"),
    [
        ("write", {}, V1, V1, a.Verdict.GO),
        ("write", {}, V1, V2, a.Verdict.STALE),
        ("write", {"force": True}, V1, V2, a.Verdict.GO),
        ("write", {}, a.UNKNOWN, V2, a.Verdict.BLIND),
        ("write", {}, V1, None, a.Verdict.GO),  # the file is gone: creating it loses nothing
        ("write", {"mode": "append"}, V1, V2, a.Verdict.PATCH),
        ("write", {"mode": "create"}, V1, V2, a.Verdict.STALE),
        ("edit", {"command": "str_replace"}, V1, V2, a.Verdict.PATCH),
        ("edit", {"command": "insert"}, V1, V2, a.Verdict.PATCH),
        ("edit", {"command": "create"}, V1, V2, a.Verdict.STALE),
        ("edit", {"command": "undo_edit"}, V1, V2, a.Verdict.STALE),
        ("edit", {"command": "str_replace", "force": "yes"}, V1, V2, a.Verdict.PATCH),  # only a real true forces
    ],
)
def test_decide(kind, args, base, current, verdict):
    assert a.decide(kind, args, base, current) is verdict


def test_versions_and_views():
    assert V1 != V2 and V1.startswith("b2:") and len(V1) == 27 and a.version_of(b"one\n") == V1
    assert a.identity_version(10, 5, 7) == "st:10-5-7"
    assert a.is_view("edit", {"command": "view"}) and a.is_view("read", {})
    assert not a.is_change("edit", {"command": "view"}) and a.is_change("write", {})


def test_stale_diff_is_bounded_and_says_why_it_is_missing():
    d = a.stale_diff("f.py", "a\nb\n", "a\nc\n")
    assert "--- a/f.py (you saw)" in d and "-b\n" in d and "+c\n" in d
    assert a.stale_diff("f.py", None, "x").startswith("(no diff")
    big = a.stale_diff("f.py", "", "".join(f"line {i}\n" for i in range(10_000)), limit=500)
    assert len(big) < 600 and "diff cut at 500 characters" in big
    assert "No newline at end of file" in a.stale_diff("f", "a", "b")


def test_who_changed_names_an_agent_only_when_its_write_is_the_current_version():
    w = a.Writer("a2", "bob", 0.0, V2)
    assert "agent bob (a2)" in a.who_changed(w, V2, "a1")
    assert "you" in a.who_changed(w, V2, "a2")
    assert "outside oh's file actions" in a.who_changed(w, V1, "a1")
    assert "outside oh's file actions" in a.who_changed(None, V1, "a1")


def test_claims_cover_paths_directories_and_globs():
    c = a.Claim("k1", "a1", "alice", ("/w/src", "/w/*.md"), 100.0)
    assert c.covers("/w/src") and c.covers("/w/src/a/b.py") and c.covers("/w/README.md") and c.covers("/w/d/x.md")
    assert not c.covers("/w/srcfile") and not c.covers("/w/a.py")
    assert a.blocking_claim([c], "/w/src/x", "a2", 50.0) is c
    assert a.blocking_claim([c], "/w/src/x", "a1", 50.0) is None  # the holder's own
    assert a.blocking_claim([c], "/w/src/x", "a2", 100.0) is None  # expired
    assert a.conflicting([c], ("/w/src/x.py",), "a2", 50.0) is c
    assert a.conflicting([c], ("/w",), "a2", 50.0) is c  # a claim around it
    assert a.conflicting([c], ("/w/lib",), "a2", 50.0) is None


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"paths": []},
        {"paths": "x"},
        {"paths": [""]},
        {"paths": ["a\x00"]},
        {"paths": ["a"] * 65},
        {"paths": ["a"], "ttl": 0},
        {"paths": ["a"], "ttl": True},
        {"paths": ["a"], "ttl": float("nan")},
    ],
)
def test_bad_claims_are_refused(args):
    with pytest.raises(ProtocolError, match="args"):
        a.check_claim_args(args, 1)


def test_claims_control_request():
    assert a.parse_claims_request({}) == ("list", None)
    assert a.parse_claims_request({"op": "release", "claim_id": "k1"}) == ("release", "k1")
    assert a.parse_claims_request({"op": "release", "all": True}) == ("release", None)
    for bad in ({"op": "drop"}, {"op": "release"}, {"op": "release", "claim_id": 3}):
        with pytest.raises(ProtocolError):
            a.parse_claims_request(bad)
