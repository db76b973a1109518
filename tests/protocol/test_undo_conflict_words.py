"""An undo conflict names what really happened to the file (issue 41: "created or deleted by someone else" was
said of a file that was only edited). Every combination of absent / three distinct contents is checked."""

from __future__ import annotations

import itertools

from oh.protocol.history import CONFLICT, REGULAR, FileState, verdict


def _f(tag: str) -> FileState:
    return FileState(REGULAR, 0o644, 1, tag * 64)


STATES = {"none": None, "a": _f("a"), "b": _f("b"), "c": _f("c")}


def test_every_conflict_reason_matches_what_happened():
    for (bn, before), (an, after), (cn, current) in itertools.product(STATES.items(), repeat=3):
        v = verdict(before, after, current)
        if v.action != CONFLICT:
            continue
        if current is None:
            assert v.reason == "deleted by someone else since", (bn, an, cn, v)
        elif after is None:
            assert "created again" in v.reason, (bn, an, cn, v)
        elif before is None:
            assert "this entry created it and someone edited it" in v.reason, (bn, an, cn, v)
        assert "created or deleted" not in v.reason


def test_an_entry_that_created_a_file_later_edited_is_not_called_created_or_deleted():
    v = verdict(None, _f("a"), _f("b"))
    assert v.action == CONFLICT and "edited" in v.reason and "deleted" not in v.reason.split("(")[0]
