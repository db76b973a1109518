"""Writes tests/contract/protocol-frames.json: action frames (raw text) and the verdict the backend's
validator gives each: accepted (with the parsed id/kind/timeout) or refused (with error_id and cause).

Both test suites check the same file: tests/contract/test_protocol_contract.py runs
``oh.protocol.events.parse_action_frame``, extension/test/contract.test.ts runs the extension's
``decodeFrame`` + ``parseAction``. Hand-written frames name the rules; seeded mutations of valid frames
(a key dropped, a value's JSON type changed: ``2`` written ``2.0``, a string, null, a huge number...)
find the cases nobody thought of. Rerun after a deliberate rule change:
``.venv/bin/python tests/contract/gen_protocol_fixtures.py``. It also writes tests/contract/action-kinds.json,
the action-kind table the extension's own kind lists are checked against.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "src"))

from oh.protocol import kinds  # noqa: E402
from oh.protocol.errors import ProtocolError  # noqa: E402
from oh.protocol.events import parse_action, parse_action_frame, summarize  # noqa: E402
from oh.protocol.frames import KNOWN_CAPABILITIES  # noqa: E402

SEED = 7
FIXTURES = HERE / "protocol-frames.json"
# The action-kind table (protocol/kinds.py) as the extension's tests read it: which kinds an editor executes
# (capability) and which the backend answers itself (capability null), with valid example args.
KINDS = HERE / "action-kinds.json"

VALID = [
    '{"id": 1, "action": "run", "args": {"command": "ls -la"}}',
    (
        '{"id": 5, "timestamp": "2025-06-24T10:00:00", "source": "agent", "message": "Running command: ls", "action": '
        '"run", "args": {"command": "ls", "is_input": false, "thought": "", "blocking": false, "is_static": false, '
        '"cwd": null, "hidden": false, "confirmation_state": "confirmed", "security_risk": -1}, "timeout": 30.0}'
    ),
    '{"id": 2, "action": "run", "args": {"command": "C-c", "is_input": true}, "timeout": 1}',
    '{"id": 3, "action": "read", "args": {"path": "/w/a.py", "start": 0, "end": -1, "view_range": [1, 10]}}',
    '{"id": 4, "action": "read", "args": {"path": "rel/a.py", "view_range": null, "start": null}}',
    '{"id": 6, "action": "write", "args": {"path": "/w/a.py", "content": "x\\n", "start": 0, "end": -1}}',
    '{"id": 7, "action": "edit", "args": {"path": "/w/a.py", "command": "view"}}',
    '{"id": 8, "action": "edit", "args": {"path": "/w/a.py", "command": "create", "file_text": ""}}',
    '{"id": 9, "action": "edit", "args": {"path": "/w/a.py", "command": "str_replace", "old_str": "a", "new_str": "b",'
    ' "file_text": null, "insert_line": null, "content": "", "start": 1, "end": -1, "impl_source": "oh_aci"}}',
    '{"id": 10, "action": "edit", "args": {"path": "/w/a.py", "command": "insert", "insert_line": 0, "new_str": "x"}}',
    '{"id": 11, "action": "edit", "args": {"path": "/w/a.py", "command": "undo_edit"}}',
    '{"id": 0, "action": "run", "args": {"command": ""}}',
    '{"id": 9007199254740991, "action": "run", "args": {"command": "x"}}',
    '{"id": 12, "action": "run", "args": {"command": "x", "unknown_arg": [1, {"deep": null}]}, "extra_top": true}',
    '{"id": 13, "action": "run", "args": {"command": "\\u00e9\\ud83d\\ude00"}, "timeout": 0.001}',
    '{"id": 14, "action": "run", "args": {"command": "x"}, "timeout": null}',
    '{"id": 1e0, "id": 15, "action": "run", "args": {"command": "x"}}',
    '{"id": -0, "action": "run", "args": {"command": "x"}}',
    '{"\\u0069d": 16, "action": "run", "args": {"command": "x"}}',
    '{"id": 17, "action": "read", "args": {"path": "/w/a", "start": 2.0, "start": 2}}',
    ' \n\t{"id": 18, "action": "run", "args": {"command": "x"}} \n',
    '{"id": 19, "action": "read", "args": {"path": "/w/a", "start": 18446744073709551615}}',
    '{"id": 20, "action": "run", "args": {"command": "\\ud83d\\ude00", "deep": ' + "[" * 1000 + "]" * 1000 + "}}",
    '{"id": 21, "action": "run", "args": {"command": "\\\\ud800 \\" \\\\\\" x"}}',
]

INVALID = [
    "not json",
    "",
    "[1, 2]",
    '"a string"',
    "null",
    "42",
    '{"id": 1, "action": "run", "args": {"command": "x"}',
    '{"action": "run", "args": {"command": "x"}}',
    '{"id": "1", "action": "run", "args": {"command": "x"}}',
    '{"id": 2.0, "action": "run", "args": {"command": "x"}}',
    '{"id": 2.5, "action": "run", "args": {"command": "x"}}',
    '{"id": 2e0, "action": "run", "args": {"command": "x"}}',
    '{"id": 20E-1, "action": "run", "args": {"command": "x"}}',
    '{"\\u0069d": 2.0, "action": "run", "args": {"command": "x"}}',
    '{"id": 15, "id": 1.0, "action": "run", "args": {"command": "x"}}',
    '{"id": -1, "action": "run", "args": {"command": "x"}}',
    '{"id": 9007199254740992, "action": "run", "args": {"command": "x"}}',
    '{"id": true, "action": "run", "args": {"command": "x"}}',
    '{"id": null, "action": "run", "args": {"command": "x"}}',
    '{"id": 3, "observation": "run", "content": ""}',
    '{"id": 3, "args": {"command": "x"}}',
    '{"id": 3, "action": 5}',
    '{"id": 3, "action": "browse", "args": {}}',
    '{"id": 3, "action": "run", "args": []}',
    '{"id": 3, "action": "run", "args": null}',
    '{"id": 3, "action": "run"}',
    '{"id": 3, "action": "run", "args": {"command": 5}}',
    '{"id": 3, "action": "run", "args": {"command": "x", "is_input": "yes"}}',
    '{"id": 3, "action": "run", "args": {"command": "x", "blocking": 1}}',
    '{"id": 3, "action": "run", "args": {"command": "x", "cwd": 7}}',
    '{"id": 3, "action": "run", "args": {"command": "x"}, "timeout": -1}',
    '{"id": 3, "action": "run", "args": {"command": "x"}, "timeout": "30"}',
    '{"id": 3, "action": "run", "args": {"command": "x"}, "timeout": true}',
    '{"id": 3, "action": "read", "args": {}}',
    '{"id": 3, "action": "read", "args": {"path": ""}}',
    '{"id": 3, "action": "read", "args": {"path": "/w/a\\u0000b"}}',
    '{"id": 3, "action": "read", "args": {"path": "/w/a", "start": "1"}}',
    '{"id": 3, "action": "read", "args": {"path": "/w/a", "start": 1.0}}',
    '{"id": 3, "action": "read", "args": {"path": "/w/a", "end": 1e1}}',
    '{"id": 3, "action": "read", "args": {"path": "/w/a", "start": true}}',
    '{"id": 3, "action": "read", "args": {"path": "/w/a", "view_range": [1]}}',
    '{"id": 3, "action": "read", "args": {"path": "/w/a", "view_range": [1, 2.0]}}',
    '{"id": 3, "action": "read", "args": {"path": "/w/a", "view_range": [1, "2"]}}',
    '{"id": 3, "action": "write", "args": {"path": "/w/a"}}',
    '{"id": 3, "action": "edit", "args": {"path": "/w/a"}}',
    '{"id": 3, "action": "edit", "args": {"path": "/w/a", "command": "delete"}}',
    '{"id": 3, "action": "edit", "args": {"path": "/w/a", "command": "create"}}',
    '{"id": 3, "action": "edit", "args": {"path": "/w/a", "command": "str_replace", "old_str": ""}}',
    '{"id": 3, "action": "edit", "args": {"path": "/w/a", "command": "insert", "new_str": "x"}}',
    '{"id": 3, "action": "edit", "args": {"path": "/w/a", "command": "insert", "insert_line": 1.0, "new_str": "x"}}',
    '{"id": 3, "action": "edit", "args": {"path": "/w/a", "command": "insert", "insert_line": 1}}',
    '{"id": 3, "action": "edit", "args": {"path": "/w/a", "command": "view", "old_str": 5}}',
    '{"id": 3, "action": "read", "args": {"path": "/w/a", "start": 18446744073709551616}}',
    '{"id": 3, "action": "run", "args": {"command": "\\ud800"}}',
    '{"id": 3, "action": "run", "args": {"command": "\\\\\\udc00"}}',
    '{"id": 3, "action": "run", "args": {"command": "\\ud800\\ud800"}}',
    '{"id": 3, "action": "run", "args": {"command": "x", "deep": ' + "[" * 1100 + "]" * 1100 + "}}",
]

# Replacement values for mutations, as raw JSON text: what a sloppy client might send instead.
ODD_VALUES = [
    "2.0",
    "1e2",
    "-3",
    "0",
    "2.5",
    "1e400",
    '"x"',
    '""',
    "null",
    "true",
    "false",
    "[]",
    "[1, 2]",
    "{}",
    "9007199254740992",
    "-0",
    "0.0",
    '"\\u0000"',
    "[1.0, 2]",
    "[1, -1]",
]


def verdict(frame: str) -> dict:
    try:
        action = parse_action_frame(frame)
    except ProtocolError as exc:
        return {"frame": frame, "ok": False, "error_id": str(exc.error_id), "cause": exc.cause}
    return {"frame": frame, "ok": True, "id": action.id, "kind": action.kind, "timeout": action.timeout}


def mutations(rng: random.Random, count: int) -> list[str]:
    """Valid frames with one value (top level or in args) replaced by an odd one, or one key dropped."""
    out = []
    for _ in range(count):
        obj = json.loads(rng.choice([f for f in VALID if len(f) < 1000]))
        target = obj if rng.random() < 0.4 or not isinstance(obj.get("args"), dict) else obj["args"]
        key = rng.choice(sorted(target))
        if rng.random() < 0.15:
            del target[key]
            out.append(json.dumps(obj))
            continue
        marker = "@@ODD@@"
        target[key] = marker
        out.append(json.dumps(obj).replace(json.dumps(marker), rng.choice(ODD_VALUES)))
    return out


def fixtures() -> list[dict]:
    frames = VALID + INVALID + mutations(random.Random(SEED), 600)
    seen: set[str] = set()
    unique = [f for f in frames if not (f in seen or seen.add(f))]
    return [verdict(f) for f in unique]


def render(items: list[dict]) -> str:
    return "[\n" + ",\n".join(json.dumps(i, ensure_ascii=True) for i in items) + "\n]\n"


# The live view's one line per action (events.summarize), for the extension's `summarize` to agree with:
# (kind, args) pairs that are valid actions, with the corner cases of each kind's summary.
_LONG = "/w/" + "d/" * 100 + "a.py"  # 206 characters: a path summary is cut only past 300, from the left
SUMMARY_CASES: list[tuple[str, dict]] = [
    ("run", {"command": "ls -la"}),
    ("run", {"command": "  ls\n\t -la  "}),
    ("run", {"command": ""}),
    ("run", {"command": "", "reset": True}),
    ("run", {"command": "C-c", "is_input": True}),
    ("run", {"command": "npm test", "background": True}),
    ("run", {"command": "echo " + "x" * 200}),
    ("read", {"path": "/w/a.py"}),
    ("read", {"path": _LONG}),
    ("read", {"path": _LONG + "/" + _LONG}),
    ("write", {"path": "/w/a.py", "content": "secret\n"}),
    ("edit", {"path": "/w/a.py", "command": "view"}),
    ("edit", {"path": "/w/a.py", "command": "str_replace", "old_str": "a", "new_str": "b"}),
    ("job", {"op": "list"}),
    ("job", {"op": "poll", "job_id": "j3"}),
    ("stat", {"path": "/w/a.py"}),
    ("ensure", {}),
    ("ensure", {"targets": ["python", "node"], "path": "/w/sub"}),
    ("claim", {"paths": ["/w/a.py", "/w/src/**"], "ttl": 60}),
    ("release", {}),
    ("release", {"claim_id": "k2"}),
    ("diagnostics", {}),
    ("diagnostics", {"path": "/w/a.py"}),
    ("open", {"path": "/w/a.py"}),
    ("open", {"path": "/w/a.py", "line": 10}),
    ("editors", {}),
    ("symbols", {"query": ""}),
    ("symbols", {"query": "Foo bar"}),
    ("definition", {"path": "/w/a.py", "line": 1, "column": 1}),
    ("references", {"path": "/w/a.py", "line": 3, "column": 7}),
]


def summaries() -> list[dict]:
    out = []
    for kind, args in SUMMARY_CASES:
        action = parse_action({"id": 1, "action": kind, "args": args})  # raises if a case is not a valid action
        out.append({"kind": kind, "args": args, "summary": summarize(action)})
    return out


def kind_table() -> dict:
    return {"kinds": kinds.describe(), "capabilities": list(KNOWN_CAPABILITIES), "summaries": summaries()}


if __name__ == "__main__":
    FIXTURES.write_text(render(fixtures()), encoding="ascii")
    KINDS.write_text(json.dumps(kind_table(), indent=1, ensure_ascii=True) + "\n", encoding="ascii")
    print(f"wrote {FIXTURES} and {KINDS}")
