"""protocol.history: the pure decisions of history and undo (classification, net effect, verdicts,
who may undo what, request parsing)."""

from __future__ import annotations

import pytest

from oh.protocol import history as H
from oh.protocol.errors import ProtocolError


def f(h: str | None, mode: int = 0o644, stored: bool = True, kind: str = H.REGULAR) -> H.FileState:
    return H.FileState(kind, mode, 1, h, stored)


def test_classify_drops_unchanged_and_pairs_a_unique_rename():
    changes = H.classify(
        {
            "same": (f("a"), f("a")),
            "old": (f("r"), None),
            "new": (None, f("r")),
            "mod": (f("x", 0o644), f("x", 0o755)),
            "edit": (f("1"), f("2")),
        }
    )
    kinds = {c.path: c.kind for c in changes}
    assert kinds == {"old": "renamed", "new": "renamed", "mod": "mode", "edit": "changed"}
    assert {c.path: c.renamed for c in changes if c.renamed} == {"old": "new", "new": "old"}


def test_two_copies_of_the_same_content_are_not_guessed_as_a_rename():
    changes = H.classify({"a": (f("r"), None), "b": (None, f("r")), "c": (None, f("r"))})
    assert {c.kind for c in changes} == {"deleted", "created"}


def test_net_keeps_the_first_before_and_the_last_after_and_drops_round_trips():
    seq = [
        H.Change("p", f("1"), f("2")),
        H.Change("q", None, f("x")),
        H.Change("p", f("2"), f("3")),
        H.Change("q", f("x"), None),
    ]
    assert H.net(seq) == {"p": (f("1"), f("3"))}


VERDICTS = [
    # (before, after, current, verdict): what an undo does to one file
    (f("b"), f("a"), f("a"), H.RESTORE),  # untouched since
    (None, f("a"), f("a"), H.RESTORE),  # created: delete it
    (f("b"), None, None, H.RESTORE),  # deleted: bring it back
    (f("b"), f("a"), f("b"), H.NOTHING),  # already back
    (None, f("a"), None, H.NOTHING),  # created, deleted since
    (f("b"), f("a"), f("u"), H.MERGE),  # edited since: three ways
    (f("b"), None, f("u"), H.CONFLICT),  # deleted, re-created since by someone else
    (None, f("a"), f("u"), H.CONFLICT),  # created, changed since: deleting it would lose the change
    (f("b"), f("a"), f("u", kind=H.SYMLINK), H.CONFLICT),  # replaced by a symlink
    (f("b", stored=False), f("a"), f("a"), H.CONFLICT),  # before never stored (too large)
    (f("b"), f(None, stored=False), f("a"), H.CONFLICT),  # after not hashed (ignored)
    (f("b", 0o644), f("b", 0o755), f("b", 0o755), H.RESTORE),  # chmod
]


@pytest.mark.parametrize("before,after,current,want", VERDICTS)
def test_verdict(before, after, current, want):
    assert H.verdict(before, after, current).action == want


def _entries():
    a1 = H.Entry(1, "alice", "run", "x", "t", changes=[H.Change("p", None, f("1"))])
    u2 = H.Entry(2, "user", "user", "x", "t", changes=[H.Change("p", f("1"), f("2"))])
    b3 = H.Entry(3, "bob", "run", "x", "t", changes=[H.Change("q", None, f("3"), ambiguous=(4,))])
    a4 = H.Entry(4, "alice", "run", "x", "t", changes=[H.Change("q", None, f("3"), ambiguous=(3,))])
    return [a1, u2, b3, a4]


def test_undo_to_skips_the_users_entries_and_an_agent_undoes_only_its_own_unambiguous_ones():
    es = _entries()
    assert [e.id for e in H.select_for_undo(es, 1, True, None)] == [1, 3, 4]
    assert [e.id for e in H.select_for_undo(es, 2, False, None)] == [2]  # the user may undo their own entry
    assert [e.id for e in H.select_for_undo(es, 1, False, "alice")] == [1]
    with pytest.raises(ProtocolError, match="bob's, not yours"):
        H.select_for_undo(es, 3, False, "alice")
    with pytest.raises(ProtocolError, match="another action"):
        H.select_for_undo(es, 4, False, "alice")
    with pytest.raises(ProtocolError, match="not yours"):
        H.select_for_undo(es, 1, True, "alice")  # --to would reach bob's entry


@pytest.mark.parametrize(
    "frame,problem",
    [
        ({"op": "drop"}, "one of list, show, undo"),
        ({"op": "undo"}, "needs 'entry'"),
        ({"op": "show", "entry": "3"}, "positive integer"),
        ({"op": "show", "entry": True}, "positive integer"),
        ({"op": "undo", "entry": 0}, "positive integer"),
        ({"op": "list", "agent": ""}, "non-empty"),
    ],
)
def test_bad_requests_are_refused_with_the_reason(frame, problem):
    with pytest.raises(ProtocolError, match=problem):
        H.parse_request(frame)


def test_rows_round_trip():
    c = H.Change("a/b", f("1", 0o755), None, "c", (7,))
    assert H.Change.from_row(c.row()) == c
