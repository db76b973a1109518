"""Fuzzing every role with >= 10,000 malformed, wrong-typed, oversized and unknown frames over real
sockets: each is answered with a typed error (or a clean close), the backend survives, and other
connections are unaffected."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from oh.protocol.errors import ErrorId, ProtocolError
from oh.protocol.events import decode_frame, parse_observation

from .conftest import EDITOR_AUTH, TOKEN

pytestmark = pytest.mark.slow

AUTH = {"Authorization": f"Bearer {TOKEN}"}
TAXONOMY = {e.value for e in ErrorId}

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
)
values = st.recursive(
    scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4), max_leaves=12
)
kinds = st.sampled_from(["run", "read", "write", "edit", "fly", "", "RUN", None, 1, "observation"])
arg_keys = st.sampled_from(
    [
        "command",
        "path",
        "content",
        "is_input",
        "blocking",
        "timeout",
        "view_range",
        "start",
        "end",
        "old_str",
        "new_str",
        "insert_line",
        "file_text",
        "cwd",
    ]
)
mutated_actions = st.builds(
    lambda i, k, args, extra: {**({"id": i} if i != "__missing__" else {}), "action": k, "args": args, **extra},
    st.one_of(
        st.just("__missing__"), st.integers(-5, 2**60), st.text(max_size=5), st.booleans(), st.none(), st.floats()
    ),
    kinds,
    st.one_of(st.dictionaries(arg_keys, values, max_size=5), values),
    st.dictionaries(st.sampled_from(["timeout", "observation", "cause", "type", "extras"]), values, max_size=2),
)
# Pathological texts are built lazily (a literal in the strategy would bloat hypothesis' reprs).
raw_text = st.one_of(
    st.text(max_size=300),
    st.integers(1000, 5000).map(lambda n: "{" * n),
    st.integers(1000, 100_000).map(lambda n: "[" * n + "]" * n),  # deeper than json's recursion limit
    st.integers(1000, 200_000).map(lambda n: '"' + "x" * n + '"'),
)
frames = st.one_of(mutated_actions.map(json.dumps), values.map(json.dumps), raw_text, st.binary(max_size=100))

BATCH = 100
EXAMPLES = int(__import__("os").environ.get("OH_FUZZ_EXAMPLES", "26"))  # x 100 frames x 4 roles > 10,000 frames


def _send(ws, frame):
    ws.send(frame)  # str -> text frame, bytes -> binary frame


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(batch=st.lists(frames, min_size=BATCH, max_size=BATCH))
def _fuzz_agent(port, batch, counter):
    with connect(f"ws://127.0.0.1:{port}/v1/agent", additional_headers=AUTH, max_size=None) as ws:
        for f in batch:
            _send(ws, f)
        for _ in batch:
            obs = json.loads(ws.recv(timeout=10))
            # Every frame gets exactly one observation; garbage gets a typed error.
            assert obs["observation"] == "error", obs
            assert obs["extras"]["error_id"] in TAXONOMY
            assert set(obs["extras"]) == {"error_id"}
            if "cause" in obs:
                assert isinstance(obs["cause"], int) and not isinstance(obs["cause"], bool)
        counter[0] += len(batch)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(batch=st.lists(frames, min_size=BATCH, max_size=BATCH))
def _fuzz_editor(port, folder, batch, counter):
    with connect(f"ws://127.0.0.1:{port}/v1/editor", additional_headers=EDITOR_AUTH, max_size=None) as ws:
        # Garbage as the first frame: refused with a typed error and close 4400.
        _send(ws, batch[0])
        first = json.loads(ws.recv(timeout=10))
        assert first["type"] in ("error", "registered")
    with connect(f"ws://127.0.0.1:{port}/v1/editor", additional_headers=EDITOR_AUTH, max_size=None) as ws:
        ws.send(
            json.dumps({"type": "register", "protocol": 1, "workspace_folders": [folder], "editor": {"name": "fuzz"}})
        )
        assert json.loads(ws.recv(timeout=10))["type"] == "registered"
        for f in batch:
            _send(ws, f)
        ws.send(json.dumps({"type": "ping-probe"}))  # ignored control frame
        # The pure core decides which frames deserve an error frame; the server must send exactly those.
        for _ in range(sum(_editor_expects_error(f) for f in batch)):
            answer = json.loads(ws.recv(timeout=10))
            assert answer["type"] == "error" and answer["error_id"] in TAXONOMY
        assert ws.ping().wait(10)  # nothing more queued, connection alive
    counter[0] += len(batch) + 1


def _editor_expects_error(frame) -> bool:
    try:
        obj = decode_frame(frame)
        if obj.get("type") is not None:
            return False
        parse_observation(obj)
        return False  # a well-formed observation for an unknown cause is dropped silently
    except ProtocolError:
        return True


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(batch=st.lists(frames, min_size=BATCH, max_size=BATCH))
def _fuzz_monitor_and_control(port, batch, counter):
    with connect(f"ws://127.0.0.1:{port}/v1/monitor", additional_headers=AUTH, max_size=None) as mon:
        assert json.loads(mon.recv(timeout=10))["type"] == "snapshot"
        for f in batch:
            _send(mon, f)
        assert mon.ping().wait(10)
    with connect(f"ws://127.0.0.1:{port}/v1/control", additional_headers=AUTH, max_size=None) as ctl:
        answered = 0
        for f in batch:
            try:
                obj = decode_frame(f)
            except ProtocolError:
                obj = None
            if isinstance(obj, dict) and obj.get("type") in ("shutdown", "rotate_token"):
                continue  # valid control requests are not fuzz: they would stop or re-key the backend
            _send(ctl, f)
            answer = json.loads(ctl.recv(timeout=10))
            assert answer["type"] in ("error", "status")
            answered += 1
    counter[0] += 2 * len(batch)


def test_fuzz_every_role(threaded_backend, workspace):
    tb, b = threaded_backend("vscode", editor_timeout=0.0, max_frame=1024 * 1024)
    counter = [0]
    # A bystander agent connected for the whole run must be unaffected.
    with connect(f"ws://127.0.0.1:{b.port}/v1/agent", additional_headers=AUTH) as bystander:
        _fuzz_agent(b.port, counter=counter)
        _fuzz_editor(b.port, str(workspace), counter=counter)
        _fuzz_monitor_and_control(b.port, counter=counter)
        bystander.send(json.dumps({"id": 1, "action": "read", "args": {"path": "f.txt"}}))
        obs = json.loads(bystander.recv(timeout=10))
        assert obs["cause"] == 1 and obs["extras"]["error_id"] == "NO_EDITOR"
    assert counter[0] >= 10_000, counter
    assert not b.stopping


def test_oversized_frame_closes_cleanly_and_backend_survives(threaded_backend):
    tb, b = threaded_backend("vscode", editor_timeout=0.0, max_frame=64 * 1024)
    with connect(f"ws://127.0.0.1:{b.port}/v1/agent", additional_headers=AUTH, max_size=None) as ws:
        ws.send(json.dumps({"id": 1, "action": "write", "args": {"path": "x", "content": "x" * 100_000}}))
        with pytest.raises(ConnectionClosed) as exc:
            ws.recv(timeout=10)
        assert exc.value.rcvd is not None and exc.value.rcvd.code == 1009
    with connect(f"ws://127.0.0.1:{b.port}/v1/agent", additional_headers=AUTH) as ws:
        ws.send(json.dumps({"id": 2, "action": "read", "args": {"path": "x"}}))
        assert json.loads(ws.recv(timeout=10))["cause"] == 2
