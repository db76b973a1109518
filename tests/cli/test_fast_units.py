"""Pure parts of the fast path: the argv parser and the JSON codec on `_json`."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oh.fastpath import argv, fastjson, verbs


@pytest.mark.parametrize(
    "verb,args,expected",
    [
        ("run", ["--", "ls", "-la"], ({}, ["ls", "-la"])),
        ("run", ["-t5", "--json", "echo", "hi"], ({"timeout": 5.0, "json_": True}, ["echo", "hi"])),
        ("run", ["--timeout=2.5", "-C", "/w", "--", "--help"], ({"timeout": 2.5, "workspace": "/w"}, ["--help"])),
        ("run", ["--wait"], ({"wait": True}, [])),
        ("run", ["--input", ""], ({"input": ""}, [])),
        ("run", ["--max-output", "0", "x"], ({"max_output": 0}, ["x"])),
        ("read", ["--start", "-1", "f"], ({"start": -1}, ["f"])),  # refused later, with its own sentence
        ("edit", ["f", "--replace", "a", "b"], ({"replace": ("a", "b")}, ["f"])),
        ("edit", ["f", "--insert", "3", "x"], ({"insert": (3, "x")}, ["f"])),
        ("write", ["-", "--content", "x"], ({"content": "x"}, ["-"])),
        ("status", [], ({}, [])),
        (
            "run",
            ["-b", "--force", "--", "npm", "run", "dev"],
            ({"background": True, "force": True}, ["npm", "run", "dev"]),
        ),
        ("write", ["--append", "log", "--content", "x"], ({"append": True, "content": "x"}, ["log"])),
        ("stat", ["-C", "/w", "--json", "f"], ({"workspace": "/w", "json_": True}, ["f"])),
        ("jobs", ["--json"], ({"json_": True}, [])),
        ("jobs wait", ["j3", "-t", "0", "-q"], ({"timeout": 0.0, "quiet": True}, ["j3"])),
        ("jobs output", ["--offset=7", "-f", "j3"], ({"offset": 7, "follow": True}, ["j3"])),
        ("jobs cancel", ["j3"], ({}, ["j3"])),
    ],
)
def test_parses_what_typer_accepts(verb, args, expected):
    assert argv.parse(verb, args) == expected


@pytest.mark.parametrize(
    "verb,args",
    [
        ("run", ["--help"]),
        ("run", ["-h"]),
        ("run", []),
        ("run", ["--bogus", "x"]),
        ("run", ["-t"]),
        ("run", ["-t", "0", "x"]),
        ("run", ["-t", "nan", "x"]),
        ("run", ["--json=1", "x"]),
        ("run", ["-qC", "/w", "x"]),
        ("run", ["--max-output", "-1"]),
        ("read", []),
        ("read", ["a", "b"]),
        ("read", ["--start", "1.5", "f"]),
        ("read", ["--start", "٣", "f"]),
        ("edit", ["f", "--replace", "a"]),
        ("edit", ["f", "--insert", "x", "y"]),
        ("status", ["--watch"]),
        ("status", ["extra"]),
        ("logs", []),
        ("stat", []),
        ("stat", ["-q", "f"]),
        ("jobs", ["wait"]),
        ("jobs", ["--json", "wait", "j1"]),
        ("jobs wait", []),
        ("jobs wait", ["j1", "-t", "-1"]),
        ("jobs output", ["j1", "--offset", "-1"]),
        ("jobs poll", ["j1", "j2"]),
        ("jobs cancel", ["-q", "j1"]),
        ("write", ["--append=1", "f"]),
    ],
)
def test_hands_anything_else_to_typer(verb, args):
    assert argv.parse(verb, args) is None


@pytest.mark.parametrize(
    "args,verb",
    [
        (["jobs"], "jobs"),
        (["jobs", "--json"], "jobs"),
        (["jobs", "wait", "j1"], "jobs wait"),
        (["jobs", "poll"], "jobs poll"),
        (
            ["jobs", "-C", "/w", "wait", "j1"],
            "jobs",
        ),  # a group option first: "jobs" with a positional, which typer gets
        (["run", "wait"], "run"),
    ],
)
def test_job_subcommands_are_their_own_verbs(args, verb):
    assert argv.split_verb(args)[0] == verb


@pytest.mark.parametrize("word", ["", "plain", "a b", "it's", "$HOME", "é", "a\nb", "--x", "x=1,y:2/z.-_@%+"])
def test_shell_quote_is_shlex_quote(word):
    import shlex

    assert verbs.shell_quote(word) == shlex.quote(word)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_fastjson_matches_the_stdlib(value):
    text = fastjson.dumps(value)
    assert text == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert fastjson.loads(text) == json.loads(text)
    assert fastjson.loads(" \n" + text + " ") == json.loads(text)


@pytest.mark.parametrize("bad", ["", "{", "[1,]", "{} {}", "NaN", "Infinity", '{"a":1}x', "\x00"])
def test_fastjson_refuses_what_json_refuses(bad):
    with pytest.raises(ValueError):
        json.loads(bad, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    with pytest.raises(ValueError):
        fastjson.loads(bad)


def test_fastjson_refuses_values_json_cannot_carry():
    for value in (float("nan"), float("inf"), {1: 2}, object()):
        with pytest.raises((ValueError, TypeError)):
            fastjson.dumps(value)
