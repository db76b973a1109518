"""The backend's pure decisions, as tables: repetition control (protocol/repetition.py), an action's
deadline (protocol/budget.py), and the job-list text and job events (protocol/joblist.py)."""

from __future__ import annotations

import pytest

from oh.protocol import budget, joblist, repetition
from oh.protocol.events import Action


def _a(kind: str, **args) -> Action:
    return Action(1, kind, args)


RUN = _a("run", command="make")
OTHER_RUN = _a("run", command="make test")
FOLLOW_UP = _a("run", command="")
INPUT = _a("run", command="y", is_input=True)
BLANK = _a("run", command="   ")

# (actions in order, limit, mode) -> the note after the last one: None, or a fragment of it
REPETITION = [
    ([RUN], 0, "note", None),  # off
    ([RUN, RUN, RUN, RUN], 0, "note", None),  # off, however often
    ([RUN], 1, "note", "sent 1 times in a row and ran again"),
    ([RUN, RUN], 3, "note", None),
    ([RUN, RUN, RUN], 3, "note", "sent 3 times in a row and ran again (repeat_limit = 3)"),
    ([RUN, RUN, RUN, RUN], 3, "note", "sent 4 times in a row"),  # and every time after
    ([RUN, RUN, RUN], 3, "skip", "was NOT run again"),
    ([RUN, OTHER_RUN, RUN], 2, "note", None),  # another command restarts the streak
    ([RUN, FOLLOW_UP, INPUT, BLANK, RUN], 2, "note", "sent 2 times"),  # follow-ups are neutral
    ([RUN, _a("job", op="list"), _a("stat", path="x"), RUN], 2, "note", "sent 2 times"),  # job and stat too
    ([RUN, _a("write", path="f", content="x"), RUN], 2, "note", None),  # a write ends it
    ([RUN, _a("read", path="f"), RUN], 2, "note", None),  # so does a read
    ([FOLLOW_UP, FOLLOW_UP], 1, "note", None),  # a follow-up never counts
]


@pytest.mark.parametrize(("actions", "limit", "mode", "expected"), REPETITION)
def test_repetition_table(actions, limit, mode, expected):
    streak = repetition.Streak()
    notes = [repetition.step(streak, a, limit, mode) for a in actions]
    if expected is None:
        assert notes[-1] is None
    else:
        assert notes[-1] is not None and expected in notes[-1], notes[-1]


def test_repetition_streak_state():
    streak = repetition.Streak()
    for a in (RUN, RUN, FOLLOW_UP):
        repetition.step(streak, a, 0, "note")
    assert (streak.command, streak.count) == ("make", 2)
    repetition.step(streak, _a("edit", path="f"), 0, "note")
    assert (streak.command, streak.count) == (None, 0)


# (own timeout, default, runtime allowance, review time, grace) -> deadline in seconds
DEADLINES = [
    ((None, 300.0), {}, 300.0),
    ((10.0, 300.0), {}, 10.0),
    ((0.0, 300.0), {}, 0.0),  # an explicit 0 is the action's own, not "use the default"
    ((10.0, 300.0), {"grace": 5.0}, 15.0),
    ((10.0, 300.0), {"runtime_allowance": 30.0, "grace": 5.0}, 45.0),  # vscode: waiting for an editor
    ((None, 300.0), {"runtime_allowance": 30.0, "review_time": 600.0, "grace": 5.0}, 935.0),  # a proposal
]


@pytest.mark.parametrize(("positional", "keywords", "expected"), DEADLINES)
def test_deadline_table(positional, keywords, expected):
    assert budget.action_deadline(*positional, **keywords) == expected


J1 = {"job_id": "j1", "state": "DONE", "command": "sleep 1"}
J2 = {"job_id": "j2", "state": "LOST", "command": "x" * 200}
LINE1 = "j1  DONE  background  sleep 1"
LINE2 = "j2  LOST  background  " + "x" * 120

# (the editor's listing, remembered records) -> the merged listing
MERGES = [
    ("No jobs.", [J1], LINE1),
    ("No jobs.\n", [J1, J2], f"{LINE1}\n{LINE2}"),
    (None, [J1], LINE1),
    ("", [J1], LINE1),
    ("j7  RUNNING  background  make\n", [J1], f"j7  RUNNING  background  make\n{LINE1}"),
    ("j7  RUNNING  background  make", [], "j7  RUNNING  background  make"),  # nothing to add: unchanged
    ("No jobs.", [], "No jobs."),
]


@pytest.mark.parametrize(("content", "records", "expected"), MERGES)
def test_job_list_merge_table(content, records, expected):
    assert joblist.merge(content, records) == expected


def test_job_listing_alone():
    assert joblist.listing([]) == "No jobs."
    assert joblist.listing([J1, J2]) == f"{LINE1}\n{LINE2}"


# (event, job) -> the monitor event's fields
EVENTS = [
    (
        "job_started",
        {"job_id": "j1", "agent_id": "a1", "shell": "a1", "command": "  make \n  all ", "cwd": "/w"},
        {"job_id": "j1", "agent_id": "a1", "shell": "a1", "summary": "make all", "cwd": "/w"},
    ),
    (
        "job_finished",
        {"job_id": "j1", "command": "make", "state": "DONE", "exit_code": 0, "duration_s": 1.23456},
        {
            "job_id": "j1",
            "agent_id": None,
            "shell": None,
            "summary": "make",
            "state": "DONE",
            "exit_code": 0,
            "duration_ms": 1234.6,
        },
    ),
    (
        "job_finished",
        {"job_id": "j2", "command": "y" * 400, "state": "LOST", "duration_s": None},
        {
            "job_id": "j2",
            "agent_id": None,
            "shell": None,
            "summary": "y" * 299 + "…",  # as long as an action's: a wide terminal shows it (issue 30 item 13)
            "state": "LOST",
            "exit_code": None,
            "duration_ms": None,
        },
    ),
]


@pytest.mark.parametrize(("name", "job", "expected"), EVENTS)
def test_job_event_fields_table(name, job, expected):
    assert joblist.event_fields(name, job) == expected


@pytest.mark.parametrize(
    ("editor_timeout", "timeout", "expected"),
    [
        (30.0, None, 30.0),  # no timeout given: the editor timeout alone
        (30.0, 5.0, 5.0),  # issue 30 #11: `oh run --timeout 5` waits at most 5 s for an editor
        (2.0, 5.0, 2.0),
    ],
)
def test_the_editor_wait_never_exceeds_the_actions_timeout(editor_timeout, timeout, expected):
    assert budget.editor_wait(editor_timeout, timeout) == expected


@pytest.mark.parametrize(
    ("timeout", "waited", "expected"),
    [(None, 3.0, None), (5.0, 0.0, 5.0), (5.0, 2.0, 3.0), (5.0, 7.0, 0.001)],
)
def test_the_editor_gets_what_is_left_of_the_timeout(timeout, waited, expected):
    assert budget.after_editor_wait(timeout, waited) == expected
