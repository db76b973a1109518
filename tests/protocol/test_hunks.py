"""Hunk splitting and partial application (issue 39 item 2): properties on generated texts and edits,
checked against real `git apply` (a patch holding only the chosen hunks) and real `git merge-file`."""

from __future__ import annotations

import subprocess
import types

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oh.history.undo import merge3
from oh.protocol import hunks as H
from oh.protocol.udiff import unified_diff

WORDS = ["alpha\n", "beta\n", "gamma\n", "delta\n", "x = 1\n", "\n", "}\n", "return y\n"]


@st.composite
def change(draw):
    """(old, new): a text of 0-60 lines and a random set of line edits of it."""
    old = draw(st.lists(st.sampled_from(WORDS), max_size=60))
    new = list(old)
    for _ in range(draw(st.integers(0, 8))):
        at = draw(st.integers(0, len(new)))
        op = draw(st.sampled_from(["ins", "del", "rep"]))
        line = draw(st.sampled_from(WORDS + ["new line\n", "z = 2\n"]))
        if op == "ins" or not new:
            new.insert(at, line)
        elif op == "del":
            del new[min(at, len(new) - 1)]
        else:
            new[min(at, len(new) - 1)] = line
    old_text, new_text = "".join(old), "".join(new)
    if draw(st.booleans()) and new_text:
        new_text = new_text.rstrip("\n")  # no newline at the end of file
    return old_text, new_text


def _subset(draw, hs):
    return {h.n for h in hs if draw(st.booleans())}


def _merge(tmp_path):
    tl = types.SimpleNamespace(state=str(tmp_path))

    def merge(current: str, base: str, wanted: str) -> str | None:
        out = merge3(tl, current.encode(), base.encode(), wanted.encode())  # type: ignore[arg-type]
        return None if out is None else out.decode()

    return merge


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FAST
@given(change(), st.data())
def test_all_is_new_none_is_old_and_reverting_in_two_steps_is_old(pair, data):
    old, new = pair
    hs = H.split("f.txt", old, new)
    assert [h.n for h in hs] == list(range(1, len(hs) + 1))
    assert H.partial(old, new, hs, {h.n for h in hs}) == new
    assert H.partial(old, new, hs, set()) == old
    # a change set on disk (new): revert a random subset, then the rest, three ways from what each step left
    rejected = _subset(data.draw, hs)
    kept = {h.n for h in hs} - rejected
    step = H.three_way(new, new, H.partial(old, new, hs, kept), lambda *_: None)
    assert step == H.partial(old, new, hs, kept)
    assert H.three_way(step, step, H.partial(old, new, hs, set()), lambda *_: None) == old
    # the hunks are the diff's: their texts joined are `oh review show`'s diff
    if hs:
        assert unified_diff("f.txt", old, new).split("\n", 2)[2] == "".join(h.diff for h in hs)


@SLOW
@given(change(), st.data())
def test_partial_matches_git_apply_of_the_chosen_hunks(tmp_path_factory, pair, data):
    old, new = pair
    hs = H.split("f.txt", old, new)
    chosen = _subset(data.draw, hs)
    if not chosen:
        return
    work = tmp_path_factory.mktemp("apply")
    (work / "f.txt").write_text(old)
    patch = "--- a/f.txt\n+++ b/f.txt\n" + "".join(h.diff for h in hs if h.n in chosen)
    (work / "p.diff").write_text(patch)
    done = subprocess.run(["git", "apply", "p.diff"], cwd=work, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (work / "f.txt").read_text() == H.partial(old, new, hs, chosen)


@SLOW
@given(change(), st.data())
def test_user_edits_between_are_kept_or_refused(tmp_path_factory, pair, data):
    old, new = pair
    hs = H.split("f.txt", old, new)
    if not hs:
        return
    lines = new.splitlines(keepends=True)
    at = data.draw(st.integers(0, len(lines)))
    mine = "USER EDIT 7\n"
    if at == len(lines) and lines and not lines[-1].endswith("\n"):
        at -= 1  # a line after a last line without its newline would change that line too: the edit goes before it
    current = "".join(lines[:at] + [mine] + lines[at:])  # the user added a line after the command ran
    rejected = _subset(data.draw, hs)
    wanted = H.partial(old, new, hs, {h.n for h in hs} - rejected)
    merge = _merge(tmp_path_factory.mktemp("merge"))
    out = H.three_way(current, new, wanted, merge)
    if out is not None:
        assert mine in out  # nothing of the user's lost
        assert out.replace(mine, "", 1) == wanted  # and the wanted reverts made
    else:
        assert rejected  # nothing to revert never conflicts


def test_whole_file_kinds_and_numbering_from_first():
    assert [h.kind for h in H.split("n.txt", None, "a\nb\n", first=4)] == ["create"]
    gone = H.split("d.txt", "a\n", None, first=7)
    assert (gone[0].n, gone[0].kind, gone[0].removed) == (7, "delete", 1)
    assert H.split("same", "a\n", "a\n") == []
    assert H.whole(2, "bin", H.BINARY, "binary").row()["header"] == "@@ binary @@"


def test_selection_parsing_and_messages():
    assert H.parse_selection("3, 1-2,2") == [1, 2, 3]
    for bad in ("", "0", "2-1", "a", "1,,2", "-3"):
        with pytest.raises(ValueError):
            H.parse_selection(bad)
    hs = H.split("f", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n", "A\nb\nc\nd\ne\nf\ng\nh\ni\nj\nK\n")
    assert len(hs) == 2
    assert H.check_selection(hs, [1, 2]) is None
    assert H.check_selection(hs, [3, 9]) == "No hunk 3, 9 in this change: its hunks are 1-2."
    assert "its files are f" in (H.check_selection(hs, [], ["g"]) or "")
    assert H.named(hs, [], ["f"]) == {1, 2}
    assert H.partial_note("/w/a.py", [1, 3], 4) == (
        "[Review mode: the user accepted part of this change to /w/a.py: hunks 1, 3 of 4 were written; hunks 2, 4 "
        "were rejected and not written. Read the file again before building on it.]"
    )
    one = H.partial_note("/w/a.py", [2], 3)  # one hunk: singular, word for word as the extension's hunks.ts
    assert "hunk 2 of 3 was written; hunks 1, 3 were rejected" in one, one
