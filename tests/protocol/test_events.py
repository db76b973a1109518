"""Pure protocol core: shapes, validation, correlation. No sockets."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oh.protocol.correlation import Correlator
from oh.protocol.errors import ErrorId, ProtocolError
from oh.protocol.events import (
    decode_frame,
    edit_observation,
    encode,
    error_from,
    error_observation,
    parse_action,
    parse_action_frame,
    parse_observation,
    read_observation,
    run_observation,
    summarize,
    write_observation,
)
from oh.protocol.frames import RegistrationError, parse_control, parse_registration
from reference_shapes import REFERENCE_EXTRAS
from reference_shapes import REFERENCE_RUN_METADATA as REFERENCE_METADATA

REFERENCE_ACTIONS = [
    {
        "id": 5,
        "timestamp": "2025-06-24T10:00:00",
        "source": "agent",
        "message": "Running command: ls -la",
        "action": "run",
        "args": {
            "command": "ls -la",
            "is_input": False,
            "thought": "list",
            "blocking": False,
            "is_static": False,
            "cwd": None,
            "hidden": False,
            "confirmation_state": "confirmed",
            "security_risk": -1,
        },
        "timeout": 30.0,
    },
    {
        "id": 6,
        "source": "agent",
        "message": "Reading file: /w/a.py",
        "action": "read",
        "args": {
            "path": "/w/a.py",
            "start": 0,
            "end": -1,
            "thought": "",
            "security_risk": -1,
            "impl_source": "oh_aci",
            "view_range": [1, 10],
        },
    },
    {
        "id": 7,
        "source": "agent",
        "message": "Writing file: /w/a.py",
        "action": "write",
        "args": {"path": "/w/a.py", "content": "x", "start": 0, "end": -1, "thought": "", "security_risk": -1},
    },
    {
        "id": 8,
        "source": "agent",
        "message": "",
        "action": "edit",
        "args": {
            "path": "/w/a.py",
            "command": "str_replace",
            "file_text": None,
            "old_str": "a",
            "new_str": "b",
            "insert_line": None,
            "content": "",
            "start": 1,
            "end": -1,
            "thought": "",
            "security_risk": -1,
            "impl_source": "oh_aci",
        },
    },
]


@pytest.mark.parametrize("frame", REFERENCE_ACTIONS, ids=lambda f: f["action"])
def test_reference_actions_parse(frame):
    a = parse_action_frame(json.dumps(frame))
    assert a.id == frame["id"] and a.kind == frame["action"]
    assert a.with_id(42)["id"] == 42 and a.with_id(42)["args"] == frame["args"]


def test_observation_shapes_match_reference():
    built = [
        run_observation(5, "ls -la", "out", 0, "/w"),
        read_observation(6, "/w/a.py", "txt"),
        write_observation(7, "/w/a.py"),
        edit_observation(8, "/w/a.py", "edited", prev_exist=True, old_content="a", new_content="b", diff="--- a"),
        error_observation(8, ErrorId.TOOL_ERROR, "boom"),
    ]
    for obs in built:
        kind = obs["observation"]
        assert set(obs["extras"]) == REFERENCE_EXTRAS[kind], kind
        assert isinstance(obs["cause"], int)
        assert parse_observation(obs) is obs
        json.dumps(obs)  # serialisable
    assert set(built[0]["extras"]["metadata"]) == REFERENCE_METADATA
    assert built[0]["success"] is True
    assert run_observation(1, "x", "", 3)["success"] is False
    assert built[0]["message"] == "Command `ls -la` executed with exit code 0."


def test_error_without_readable_id_has_no_cause():
    with pytest.raises(ProtocolError) as exc:
        parse_action_frame("{")
    obs = error_from(exc.value)
    assert "cause" not in obs and obs["extras"] == {"error_id": "BAD_REQUEST"}


@pytest.mark.parametrize("bad_id", [True, -1, 1.5, "1", None, 2**60])
def test_bad_ids_refused(bad_id):
    with pytest.raises(ProtocolError) as exc:
        parse_action({"id": bad_id, "action": "run", "args": {"command": "x"}})
    assert exc.value.error_id == ErrorId.BAD_REQUEST and exc.value.cause is None


def test_observation_sent_to_agent_leg_refused():
    with pytest.raises(ProtocolError) as exc:
        parse_action({"id": 3, "observation": "run", "content": ""})
    assert exc.value.cause == 3 and "actions, not observations" in exc.value.message


def test_summarize_never_includes_contents():
    a = parse_action({"id": 1, "action": "write", "args": {"path": "/w/secret.txt", "content": "TOPSECRET"}})
    assert "TOPSECRET" not in summarize(a) and summarize(a) == "/w/secret.txt"
    long = parse_action({"id": 1, "action": "run", "args": {"command": "echo " + "x" * 500}})
    assert len(summarize(long)) <= 80


def test_registration_and_control():
    reg = parse_registration(
        {
            "type": "register",
            "protocol": 1,
            "workspace_folders": ["/w"],
            "session": "abc",
            "editor": {"name": "VS Code", "version": "1.99", "pid": 9},
            "capabilities": ["run", "bogus"],
        },
        "abc",
    )
    assert reg.capabilities == ["run"] and reg.editor_pid == 9
    with pytest.raises(RegistrationError) as exc:
        parse_registration({"type": "register", "protocol": 2, "workspace_folders": ["/w"]}, "abc")
    assert exc.value.error_id == "PROTOCOL_MISMATCH"
    assert parse_control({"type": "shutdown"})[0] == "shutdown"
    for bad in (
        {"type": "rotate_token", "token": "short"},
        {"type": "rotate_token", "token": "a b" * 10},
        {"type": "reboot"},
    ):
        with pytest.raises(ProtocolError):
            parse_control(bad)


def test_correlator():
    c: Correlator[None] = Correlator()
    e1 = c.start("a", 7, "run", 0.0)
    e2 = c.start("b", 7, "run", 0.0)
    assert e1.leg_id != e2.leg_id
    with pytest.raises(KeyError):
        c.start("a", 7, "run", 0.0)
    assert c.finish(e1.leg_id).agent == "a"
    assert c.finish(e1.leg_id) is None  # a late duplicate answer maps to nothing
    assert not c.in_flight("a", 7) and c.in_flight("b", 7)
    assert [e.leg_id for e in c.of_agent("b")] == [e2.leg_id]


# ---------------------------------------------------------------- properties

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200), json_values.map(json.dumps)))
def test_garbage_becomes_protocol_error_never_other_exception(data):
    try:
        parse_action_frame(data)
    except ProtocolError as exc:
        obs = error_from(exc)
        assert obs["observation"] == "error"
        assert obs["extras"]["error_id"] in {e.value for e in ErrorId}
        json.dumps(obs)


action_strategy = st.one_of(
    st.builds(
        lambda i, c, t: {
            "id": i,
            "action": "run",
            "args": {"command": c, "is_input": False, "blocking": False},
            **({"timeout": t} if t else {}),
        },
        st.integers(0, 2**53 - 1),
        st.text(max_size=50),
        st.one_of(st.none(), st.floats(0.1, 1000)),
    ),
    st.builds(
        lambda i, p: {"id": i, "action": "read", "args": {"path": p, "start": 0, "end": -1}},
        st.integers(0, 10**9),
        st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s),
    ),
    st.builds(
        lambda i, p, c: {"id": i, "action": "write", "args": {"path": p, "content": c}},
        st.integers(0, 10**9),
        st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s),
        st.text(max_size=100),
    ),
    st.builds(
        lambda i, o, n: {
            "id": i,
            "action": "edit",
            "args": {"path": "/w/f", "command": "str_replace", "old_str": o, "new_str": n},
        },
        st.integers(0, 10**9),
        st.text(min_size=1, max_size=30),
        st.text(max_size=30),
    ),
)


@settings(max_examples=300, deadline=None)
@given(action_strategy)
def test_action_round_trip(frame):
    a = parse_action_frame(encode(frame).decode())
    assert a.id == frame["id"] and a.kind == frame["action"] and a.args == frame["args"]
    again = parse_action_frame(encode(a.with_id(a.id)).decode())
    assert again.raw == a.raw


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**53 - 1), st.text(max_size=50), st.text(max_size=200), st.integers(-1, 255))
def test_observation_round_trip(cause, command, content, code):
    obs = run_observation(cause, command, content, code, "/w")
    back = parse_observation(decode_frame(encode(obs).decode()))
    assert back == obs


@pytest.mark.parametrize("where", ["top", "args"])
def test_no_frame_field_claims_what_only_the_backend_and_the_gate_set(where):
    """consent, leaving the sandbox and the progress sink are fields of the Action object, set by the consent
    gate and the backend only: a frame naming them (at the top or in args) gets none of them."""
    claims = {"consented": True, "unsandboxed": True, "on_progress": "print", "own_request": True}
    args = {"command": "true", "sandbox": "off", "reason": "r"}
    frame = {"id": 1, "action": "run", "args": {**args, **claims} if where == "args" else args}
    if where == "top":
        frame.update(claims)
    action = parse_action(frame)  # unknown fields are tolerated (OpenHands sends more), never obeyed
    assert (action.consented, action.unsandboxed, action.on_progress, action.own_request) == (False, False, None, False)
