"""The run queue's rule (issue 18 item 3; mirrored by extension/src/shellqueue.ts)."""

import pytest

from oh.protocol import shellqueue


@pytest.mark.parametrize(
    ("in_use", "max_shells", "waiting", "limit", "want"),
    [
        (0, 8, 0, 64, "run"),
        (7, 8, 0, 64, "run"),
        (8, 8, 0, 64, "wait"),
        (3, 8, 1, 64, "wait"),  # someone waits already: no overtaking
        (8, 8, 63, 64, "wait"),
        (8, 8, 64, 64, "busy"),
        (1, 1, 0, 0, "busy"),
    ],
)
def test_place(in_use, max_shells, waiting, limit, want):
    assert shellqueue.place(in_use, max_shells, waiting, limit) == want


def test_left_and_the_texts():
    assert shellqueue.left(None, 3) is None and shellqueue.left(10, 2.5) == 7.5
    assert shellqueue.waited_out_message("echo hi", 0.30012, 1) == (
        'Your command "echo hi" was NOT executed: it waited 0.3 s for one of this agent\'s 1 shells '
        "(max_shells) to come free, "
        "which used up its timeout. Send it again with a longer timeout, or wait for the running commands first."
    )
    assert "NOT executed: 8 command(s)" in shellqueue.queue_full_message("make", 8, 8, 64)
