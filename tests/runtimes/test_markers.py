"""The pure marker parser (runtimes/local/markers.py): a table of pty byte streams and the events each must
give, fed whole, split at every byte position, one byte at a time, and split at random (hypothesis).

Text events are compared per stretch between two control events (the view's bytes and the output's bytes
joined), so a read boundary may split a text event but must never move bytes across a marker, drop a byte,
let a marker or an expected echo through, or change a control event."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oh.runtimes.local.markers import Boot, Done, Exec, Exited, MarkerParser, Output, Ready, Started, View

NONCE = b"0123abcd"
TRIGGER = b" builtin source '/tmp/oh-x/run-1'\r\n"


def m(body: bytes, nonce: bytes = NONCE) -> bytes:
    return b"\x1b]6973;" + nonce + b";" + body + b"\x07"


READY = m(b"R;;0")
START = m(b"S")


def idle(p: MarkerParser) -> None:
    assert p.feed(READY)[-1] == Ready(False, "0")


def triggered(p: MarkerParser) -> None:
    idle(p)
    p.expect_trigger(TRIGGER)


def running(p: MarkerParser) -> None:
    triggered(p)
    p.feed(TRIGGER + START)
    assert p.state == "command"


def typed(echo: bytes):
    def setup(p: MarkerParser) -> None:
        running(p)
        p.expect_input(echo)

    return setup


def fresh(p: MarkerParser) -> None:
    pass


# (name, setup, stream, expected normalized events)
SAMPLES = [
    (
        "rc banner, then ready (set -e seen, rc status 1)",
        fresh,
        b"*** welcome ***\r\n" + m(b"R;1;1"),
        [("text", b"*** welcome ***\r\n", b""), Ready(True, "1")],
    ),
    (
        "the trigger's echo is removed, the command's output goes to both",
        triggered,
        TRIGGER + START + b"hi\r\n" + m(b"D;0\x1f/tmp\x1f/usr/bin:/bin"),
        [Started(), ("text", b"hi\r\n", b"hi\r\n"), Done(0, "/tmp", "/usr/bin:/bin", True)],
    ),
    (
        "exec of a shell: output, E (the exec, its token), the new shell's startup, B, then the end",
        running,
        b"before\r\n" + m(b"E;123456") + b"*** welcome ***\r\nprompt$ " + m(b"B") + m(b"D;0\x1f/w\x1f/bin"),
        [
            ("text", b"before\r\n", b"before\r\n"),
            Exec("123456"),
            ("text", b"*** welcome ***\r\nprompt$ ", b"*** welcome ***\r\nprompt$ "),
            Boot(),
            Done(0, "/w", "/bin", True),
        ],
    ),
    (
        "a background job's line before the trigger's echo stays in the view",
        triggered,
        b"[1]+ Done sleep 1\r\n" + TRIGGER + START + m(b"D;7\x1f/w\x1f/bin"),
        [("text", b"[1]+ Done sleep 1\r\n", b""), Started(), Done(7, "/w", "/bin", True)],
    ),
    (
        "a prefix of the trigger that never completes is shown at the start marker",
        triggered,
        TRIGGER[:9] + START + b"x",
        [("text", TRIGGER[:9], b""), Started(), ("text", b"x", b"x")],
    ),
    (
        "other programs' OSC sequences (a window title) and a marker with another nonce are output",
        running,
        b"a\x1b]0;title\x07b" + m(b"D;0\x1f/\x1f/bin", b"ffffffff") + b"c\x1b]" + m(b"D;0\x1f/\x1f/bin"),
        [
            (
                "text",
                b"a\x1b]0;title\x07b" + m(b"D;0\x1f/\x1f/bin", b"ffffffff") + b"c\x1b]",
                b"a\x1b]0;title\x07b" + m(b"D;0\x1f/\x1f/bin", b"ffffffff") + b"c\x1b]",
            ),
            Done(0, "/", "/bin", True),
        ],
    ),
    (
        "a marker head cut short by another escape is text",
        running,
        b"\x1b]6973;0123\x1b[0m" + m(b"D;1\x1f/\x1f/bin"),
        [("text", b"\x1b]6973;0123\x1b[0m", b"\x1b]6973;0123\x1b[0m"), Done(1, "/", "/bin", True)],
    ),
    (
        "typed input's echo is dropped from the output, kept in the view",
        typed(b"yes\r\n"),
        b"yes\r\nread: yes\r\n" + m(b"D;0\x1f/\x1f/bin"),
        [("text", b"yes\r\nread: yes\r\n", b"read: yes\r\n"), Done(0, "/", "/bin", True)],
    ),
    (
        "output that does not start with the typed text keeps every byte",
        typed(b"yes\r\n"),
        b"yep\r\n" + m(b"D;0\x1f/\x1f/bin"),
        [("text", b"yep\r\n", b"yep\r\n"), Done(0, "/", "/bin", True)],
    ),
    (
        "a prefix of the typed text, then the command ends: the bytes are output",
        typed(b"yes\r\n"),
        b"ye" + m(b"D;0\x1f/\x1f/bin"),
        [("text", b"ye", b"ye"), Done(0, "/", "/bin", True)],
    ),
    (
        "the echo of C-c",
        typed(b"^C"),
        b"^C\r\n" + m(b"D;130\x1f/\x1f/bin"),
        [("text", b"^C\r\n", b"\r\n"), Done(130, "/", "/bin", True)],
    ),
    (
        "a user's prompt hook prints after D: view only; a prompt with no command running",
        running,
        m(b"D;0\x1f/a\x1f/bin") + b"PROMPT-HOOK\r\n" + m(b"D;0\x1f/b\x1f/bin"),
        [Done(0, "/a", "/bin", True), ("text", b"PROMPT-HOOK\r\n", b""), Done(0, "/b", "/bin", False)],
    ),
    (
        "exit: the X marker, a status that is not a number",
        running,
        b"bye\r\n" + m(b"X;3\x1f/home/u") + m(b"D;oops"),
        [("text", b"bye\r\n", b"bye\r\n"), Exited(3, "/home/u"), Done(-1, "", None, True)],
    ),
    (
        "multibyte text and a trailing partial marker (held back, not output)",
        running,
        "h\u00e9llo \u263a\r\n".encode() + b"\x1b]6973;0123",
        [("text", "h\u00e9llo \u263a\r\n".encode(), "h\u00e9llo \u263a\r\n".encode())],
    ),
]


def normalize(events: list) -> list:
    """Join text events between two control events: (\"text\", view bytes, output bytes)."""
    out: list = []
    for ev in events:
        if isinstance(ev, (View, Output)):
            if not out or not isinstance(out[-1], list):
                out.append([b"", b""])
            out[-1][0 if isinstance(ev, View) else 1] += ev.data
        else:
            out.append(ev)
    return [("text", x[0], x[1]) if isinstance(x, list) else x for x in out]


def feed_chunks(setup, chunks: list[bytes]) -> list:
    p = MarkerParser(NONCE)
    setup(p)
    events: list = []
    for c in chunks:
        events += p.feed(c)
    return normalize(events)


IDS = [s[0] for s in SAMPLES]


@pytest.mark.parametrize(("name", "setup", "stream", "expected"), SAMPLES, ids=IDS)
def test_every_split_point_gives_the_same_events(name, setup, stream, expected):
    assert feed_chunks(setup, [stream]) == expected
    for cut in range(len(stream) + 1):
        assert feed_chunks(setup, [stream[:cut], stream[cut:]]) == expected, cut
    assert feed_chunks(setup, [stream[i : i + 1] for i in range(len(stream))]) == expected


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_splits_give_the_same_events(data):
    name, setup, stream, expected = data.draw(st.sampled_from(SAMPLES))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)])]
    assert feed_chunks(setup, chunks) == expected


def test_a_held_partial_echo_is_released_when_given_up():
    p = MarkerParser(NONCE)
    typed(b"yes\r\n")(p)
    assert normalize(p.feed(b"ye")) == [("text", b"ye", b"")]
    assert p.release() == []  # still expected: the rest of the echo may come
    assert p.release(final=True) == [Output(b"ye")]


def test_startup_output_is_kept_bounded_for_the_log():
    p = MarkerParser(NONCE)
    p.feed(b"x" * 10000)
    assert p.startup_out == b"x" * 4096
    p.feed(READY + b"after")
    assert p.startup_out == b"x" * 4096 and p.state == "idle"
