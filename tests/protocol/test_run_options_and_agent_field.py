"""Protocol options of run/read/write and the agent field (pure): new run/read/write args, timeout 0,
security_risk, error ids, the agent field, shell keys, agent_gone, registered.allowed_roots."""

from __future__ import annotations

import pytest

from oh.protocol import frames
from oh.protocol.errors import ErrorId, ProtocolError
from oh.protocol.events import DEFAULT_MAX_OUTPUT, error_observation, parse_action, run_observation


def run(args, **top):
    return parse_action({"id": 1, "action": "run", "args": {"command": "x", **args}, **top})


def refused(frame) -> str:
    with pytest.raises(ProtocolError) as exc:
        parse_action(frame)
    assert exc.value.error_id == ErrorId.BAD_REQUEST and exc.value.cause == 1
    return exc.value.message


def test_timeout_zero_is_no_timeout_and_negative_is_refused():
    assert run({}, timeout=0).timeout is None
    assert run({}, timeout=0.0).timeout is None
    assert run({}, timeout=2).timeout == 2.0
    assert "from 0 to" in refused({"id": 1, "action": "run", "args": {"command": "x"}, "timeout": -1})


def test_run_args():
    a = run({"reset": True, "env": {"A_1": "v"}, "max_output": 0})
    assert a.reset and a.env == {"A_1": "v"} and a.max_output == 0
    assert run({}).max_output == DEFAULT_MAX_OUTPUT and run({}).env == {} and not run({}).reset
    for bad in (
        {"reset": "yes"},
        {"max_output": -1},
        {"max_output": 1.5},
        {"max_output": True},
        {"env": {"A": 1}},
        {"env": {"bad name": "v"}},
        {"env": "A=1"},
        {"reset": True, "is_input": True},
        {"env": {f"V{i}": "" for i in range(300)}},
    ):
        refused({"id": 1, "action": "run", "args": {"command": "x", **bad}})


def test_env_values_never_in_messages():
    msg = refused({"id": 1, "action": "run", "args": {"command": "x", "env": {"OK": "hunter2", "B": "pw\x00x"}}})
    assert "hunter2" not in msg and "pw" not in msg


def test_read_write_encodings():
    assert parse_action({"id": 1, "action": "read", "args": {"path": "p", "encoding": "base64"}}).encoding == "base64"
    refused({"id": 1, "action": "read", "args": {"path": "p", "encoding": "latin-1"}})
    for ok in ("utf-8", "base64", "latin-1", "cp1251", "UTF-16"):
        parse_action({"id": 1, "action": "write", "args": {"path": "p", "content": "", "encoding": ok}})
    for bad in ("rot13", "zlib", "nope", 5):
        refused({"id": 1, "action": "write", "args": {"path": "p", "content": "", "encoding": bad}})


@pytest.mark.parametrize(
    "raw,name",
    [
        ("HIGH", "HIGH"),
        ("low", "LOW"),
        (2, "HIGH"),
        (0, "LOW"),
        (-1, "UNKNOWN"),
        (7, "UNKNOWN"),
        ("<b>x</b>" * 10, "BXBBXBBXBBXBBXBB"),
        ([], "UNKNOWN"),
        (None, None),
    ],
)
def test_security_risk_normalised_never_refused(raw, name):
    assert run({}, security_risk=raw).security_risk == name


def test_new_error_ids_and_metadata():
    assert error_observation(3, ErrorId.BUSY, "m")["extras"] == {"error_id": "BUSY"}
    assert error_observation(3, "NO_COMMAND", "m")["extras"]["error_id"] == "NO_COMMAND"
    md = run_observation(1, "c", "", 0, "/w", username="u", hostname="h", py_interpreter_path="/usr/bin/python")[
        "extras"
    ]["metadata"]
    assert (md["username"], md["hostname"], md["working_dir"], md["py_interpreter_path"]) == (
        "u",
        "h",
        "/w",
        "/usr/bin/python",
    )


def test_with_id_adds_top_level_fields_without_touching_the_original():
    a = run({})
    frame = a.with_id(9, agent=frames.agent_field("a1", "n", "/w", "a1"))
    assert frame["id"] == 9 and frame["agent"]["shell"] == "a1" and "agent" not in a.raw


def test_shell_keys_and_agent_field():
    assert frames.check_shell_key("cli") is None and frames.check_shell_key("my.team-1_x") is None
    for bad in ("", "a1", "a42", "x y", "x" * 65, "é"):
        assert frames.check_shell_key(bad)
    good = {"agent": {"id": "a3", "name": "claude", "workdir": "/w", "shell": "cli"}}
    assert frames.parse_agent_field(good) == good["agent"]
    for bad in (
        {},
        {"agent": "x"},
        {"agent": {"shell": "../x", "workdir": "/w"}},
        {"agent": {"shell": "a1", "workdir": "rel"}},
    ):
        assert frames.parse_agent_field(bad) is None
    assert frames.agent_gone("a3") == {"type": "agent_gone", "shell": "a3"}


def test_registered_carries_allowed_roots_and_relative_folders_are_refused():
    assert frames.registered("e1", "i", "/w")["allowed_roots"] == ["/w"]
    assert frames.registered("e1", "i", "/w", ["/w", "/tmp"])["allowed_roots"] == ["/w", "/tmp"]
    assert (
        "max_shells" not in frames.registered("e1", "i", "/w")
        and frames.registered("e1", "i", "/w", max_shells=5)["max_shells"] == 5
    )
    assert (
        "job_retention" not in frames.registered("e1", "i", "/w")
        and frames.registered("e1", "i", "/w", job_retention=60.0)["job_retention"] == 60.0
    )
    with pytest.raises(frames.RegistrationError):
        frames.parse_registration({"type": "register", "protocol": 1, "workspace_folders": ["."]}, "i")
    assert frames.parse_registration(
        {"type": "register", "protocol": 1, "workspace_folders": ["/"]}, "i"
    ).workspace_folders == ["/"]
