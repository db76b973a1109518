"""``oh diagnostics/open/editors/symbols/definition/references`` (issue 12 #3, docs/protocol.md §3.6)
against real backends: the local runtime's honest answers, and the vscode runtime with a scripted
editor (what is forwarded, TOOL_UNSUPPORTED for a kind the editor did not advertise, no hang)."""

from __future__ import annotations

import json
import os

from oh.protocol.kinds import KNOWLEDGE as KNOWLEDGE_KINDS
from oh.protocol.knowledge import knowledge_observation

from .fake_editor import FakeEditor

ALL_CAPS = ["run", "read", "write", "edit", *KNOWLEDGE_KINDS]


def test_local_runtime_refuses_with_the_way_out(oh):
    oh.start("local")
    for args in (
        ["diagnostics"],
        ["editors"],
        ["open", "a.py:1"],
        ["definition", "a.py:1:1"],
        ["references", "a.py:1:1"],
    ):
        proc = oh(*args)
        assert proc.returncode == 6, (args, proc)
        assert "TOOL_UNSUPPORTED" in proc.stderr and "oh start --runtime vscode" in proc.stderr, (args, proc.stderr)


def test_local_symbols_are_ripgrep_matches_and_say_so(oh):
    (oh.workspace / "lib.py").write_text(
        "import os\n\n\ndef parse_config(path):\n    return path\n\nclass ConfigParser:\n    pass\n"
    )
    oh.start("local")
    proc = oh("symbols", "config")
    assert proc.returncode == 0, proc
    assert "ripgrep" in proc.stdout and "not a symbol index" in proc.stdout
    lib = os.path.realpath(oh.workspace / "lib.py")
    assert f"{lib}:4:1: parse_config" in proc.stdout
    assert f"{lib}:7:1: ConfigParser" in proc.stdout
    obs = oh.json("symbols", "config", "--json")
    assert obs["extras"]["source"] == "ripgrep"
    assert [(s["name"], s["line"]) for s in obs["extras"]["symbols"]] == [("parse_config", 4), ("ConfigParser", 7)]


def test_usage_errors_need_no_backend(oh):
    proc = oh("definition", "a.ts:3")
    assert proc.returncode == 2 and "PATH:LINE:COL" in proc.stderr, proc
    proc = oh("open", "a.ts:0")
    assert proc.returncode == 2 and "count from 1" in proc.stderr, proc
    proc = oh("diagnostics", "--severity", "fatal")
    assert proc.returncode == 2, proc


def test_editor_without_the_capability_answers_tool_unsupported(oh):
    info = oh.start("vscode")
    with FakeEditor(oh.session_file(info["instance_id"]), oh.workspace) as editor:
        proc = oh("symbols", "x", timeout=20)
        assert proc.returncode == 6, proc
        assert "TOOL_UNSUPPORTED" in proc.stderr and "cannot execute 'symbols'" in proc.stderr
        assert editor.actions == [], "an action the editor did not advertise is never sent to it"


def test_vscode_runtime_forwards_absolute_paths_and_prints_the_answer(oh):
    info = oh.start("vscode")
    src = oh.workspace / "src"
    src.mkdir()
    target = os.path.realpath(src / "a.ts")

    def answer(action):
        kind = action["action"]
        if kind == "diagnostics":
            d = {
                "path": target,
                "line": 4,
                "column": 7,
                "end_line": 4,
                "end_column": 12,
                "severity": "error",
                "message": "Type 'string' is not assignable to type 'number'.",
                "source": "ts",
                "code": 2322,
            }
            return knowledge_observation(
                kind,
                action["id"],
                f"{target}:4:7: error: Type 'string'... (ts 2322)\n1 error, 0 warnings in 1 file.",
                {"path": target, "diagnostics": [d], "settled": True, "severity": "warning"},
            )
        return knowledge_observation(
            kind, action["id"], f"{target}:1:17: export function greet() {{", {"path": target, "locations": []}
        )

    with FakeEditor(oh.session_file(info["instance_id"]), oh.workspace, answer=answer, capabilities=ALL_CAPS) as editor:
        proc = oh("definition", "a.ts:3:23", cwd=src, timeout=20)
        assert proc.returncode == 0, proc
        assert proc.stdout == f"{target}:1:17: export function greet() {{\n"
        sent = editor.actions[-1]
        assert sent["action"] == "definition"
        assert sent["args"] == {"path": target, "line": 3, "column": 23}
        assert sent["agent"]["name"] == "oh-cli"

        proc = oh("diagnostics", "src/a.ts", timeout=20)
        assert proc.returncode == 1, "errors in the answer: exit 1, like a compiler"
        assert "TS" not in proc.stderr and "(ts 2322)" in proc.stdout
        assert editor.actions[-1]["args"] == {"path": target, "severity": "warning"}

        obs = oh.json("references", "src/a.ts:1:17", "--no-declaration", "--json", timeout=20)
        assert obs["observation"] == "references"
        assert editor.actions[-1]["args"]["include_declaration"] is False

        oh("open", "src/a.ts:2:3", "--to", "4", timeout=20)
        assert editor.actions[-1]["args"] == {"path": target, "line": 2, "column": 3, "end_line": 4}

        # outside the allowed roots: refused by the backend, never forwarded
        before = len(editor.actions)
        proc = oh("open", "/etc/hostname", timeout=20)
        assert proc.returncode == 6 and "PATH_DENIED" in proc.stderr, proc
        assert len(editor.actions) == before


def test_client_methods_against_a_local_backend(oh):
    (oh.workspace / "m.ts").write_text("export function greetUser() {}\n")
    info = oh.start("local")
    session = oh.session(info["instance_id"])
    from oh.client import SyncClient

    with SyncClient.connect(session["url"], session["token"]) as client:
        obs = client.symbols("greet", limit=5)
        assert obs.kind == "symbols" and obs.extras["symbols"][0]["name"] == "greetUser"
        for call in (
            lambda: client.diagnostics("m.ts"),
            client.editors,
            lambda: client.open_file("m.ts", line=1),
            lambda: client.definition("m.ts", 1, 17),
            lambda: client.references("m.ts", 1, 17),
        ):
            obs = call()
            assert obs.error_id == "TOOL_UNSUPPORTED", obs
        bad = client.send({"action": "definition", "args": {"path": "m.ts", "line": 0, "column": 1}})
        assert bad.error_id == "BAD_REQUEST" and "args.line" in bad.content
    assert json.loads(oh.session_file(info["instance_id"]).read_text())["token"] == session["token"]
