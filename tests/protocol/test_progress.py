"""protocol/progress.py: which actions asked for progress frames, and a command's output made safe for the
user's terminal before `oh run` writes it there live (issue 30 #1; docs/security.md)."""

from __future__ import annotations

import pytest

from oh.protocol import progress
from oh.protocol.errors import ProtocolError
from oh.protocol.events import parse_action

SAFE = [
    ("plain\n", "plain\n"),
    ("50%\r100%\n", "50%\r100%\n"),  # progress bars still redraw
    ("tab\tback\x08\n", "tab\tback\x08\n"),
    ("\x1b[2Jcleared", "cleared"),  # erase screen
    ("\x1bcreset", "reset"),  # full terminal reset
    ("\x1b[10;1Hmoved", "moved"),  # cursor position
    ("\x1b]52;c;aGk=\x07clip", "52;c;aGk=clip"),  # OSC 52 (clean() strips whole OSCs first; what is left is inert)
    ("\x9b2Jc1", "2Jc1"),  # one-byte CSI
    ("bell\x07nul\x00", "bellnul"),
    ("\x1b[", ""),  # a sequence cut at the chunk's end
]


@pytest.mark.parametrize(("raw", "shown"), SAFE)
def test_output_reaches_the_terminal_without_control_sequences(raw, shown):
    assert progress.terminal_safe(raw) == shown


@pytest.mark.parametrize(
    ("value", "events"),
    [(None, None), (False, None), (True, progress.EVENTS), (["waiting"], frozenset({"waiting"})), ([], None)],
)
def test_which_events_an_action_asked_for(value, events):
    raw = {} if value is None else {"progress": value}
    assert progress.wanted(raw) == events


@pytest.mark.parametrize("value", ["yes", 1, ["waiting", "nope"], {"waiting": True}, ["output"] * 9])
def test_a_bad_progress_value_is_refused(value):
    with pytest.raises(ProtocolError) as info:
        parse_action({"id": 3, "action": "read", "args": {"path": "/x"}, "progress": value})
    assert info.value.cause == 3 and "'progress' must be" in info.value.message


def test_a_waiting_frame_says_how_the_user_answers():
    fields = progress.waiting_for_consent("c4", "rm -rf build", "policy commands", 600)
    frame = progress.frame(7, progress.WAITING, **fields)
    assert frame["type"] == "progress" and frame["cause"] == 7 and frame["approval"] == "c4"
    assert "oh approve c4" in frame["message"] and "600 s" in frame["message"]
