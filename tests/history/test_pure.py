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


def test_fold_keeps_one_change_per_path_and_drops_what_came_back():
    """Issue 36: history drains while a command runs, so one action's changes arrive in pieces."""
    into = [H.Change("tmp", None, f("t")), H.Change("a", f("1"), f("2")), H.Change("b", None, f("b"), ambiguous=(3,))]
    H.fold(into, [H.Change("tmp", f("t"), None), H.Change("a", f("2"), f("3")), H.Change("b", f("b"), f("c"))])
    assert [(c.path, c.before, c.after, c.ambiguous) for c in into] == [
        ("a", f("1"), f("3"), ()),
        ("b", None, f("c"), (3,)),
    ]
    H.fold(into, [H.Change("tmp", None, f("u"))])  # made again after it was dropped: a new change
    assert [c.path for c in into] == ["a", "b", "tmp"] and into[-1].before is None
    # sed's temporary, seen empty by one drain, then gone in the drain that sees an empty new file: paired as a
    # rename by that drain, but the temporary came back to nothing: the new file is a plain creation.
    into = [H.Change("sedX", None, f("empty"))]
    new, gone = H.classify({"sedX": (f("empty"), None), "new.txt": (None, f("empty"))})
    assert new.renamed == "sedX"
    H.fold(into, [gone, new])
    assert [(c.path, c.kind) for c in into] == [("new.txt", "created")]


def test_an_agent_named_user_is_still_an_agent():
    """Issue 36: the credential decides, not the name: an agent token's undo never takes a `by: user` entry."""
    mine = H.Entry(1, "user", "user", "changes made outside oh's actions", "t", by=H.USER)
    theirs = H.Entry(2, "user", "run", "echo", "t", by=H.AGENT)
    with pytest.raises(ProtocolError, match="the user's"):
        H.select_for_undo([mine, theirs], 1, False, "user")
    with pytest.raises(ProtocolError, match="the user's"):
        H.select_for_undo([mine, theirs], 1, True, "user")
    assert H.select_for_undo([mine, theirs], 2, False, "user") == [theirs]
    # Journals written before `by`: the user's changes and undos are the user's, every action an agent's.
    assert [H.legacy_by(k, a) for k, a in (("user", "user"), ("undo", "user"), ("undo", "bob"), ("run", "user"))] == [
        H.USER,
        H.USER,
        H.AGENT,
        H.AGENT,
    ]


def test_ambiguous_changes_are_split_out_unless_every_candidate_is_undone():
    a = H.Entry(1, "alice", "run", "a", "t", changes=[H.Change("x", None, f("x"), ambiguous=(2,))])
    b = H.Entry(
        2, "bob", "run", "b", "t", changes=[H.Change("x", None, f("x"), ambiguous=(1,)), H.Change("y", None, f("y"))]
    )
    sure, doubtful = H.split_ambiguous([b])
    assert [c.path for c in sure] == ["y"] and [c.path for c in doubtful] == ["x"]
    sure, doubtful = H.split_ambiguous([a, b])
    assert [c.path for c in sure] == ["x", "x", "y"] and doubtful == []
    assert H.parse_request({"op": "undo", "entry": 2, "include_ambiguous": True}).include_ambiguous
    with pytest.raises(ProtocolError, match="include_ambiguous"):
        H.parse_request({"op": "undo", "entry": 2, "include_ambiguous": "yes"})
