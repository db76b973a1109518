"""The editor-knowledge commands called in-process (run_diagnostics, run_open, run_at_position, ...):
usage errors, a local backend's refusals, and a vscode backend with a scripted editor (FakeEditor on
the real editor leg) to see exactly what each command sends."""

from __future__ import annotations

import json
import os

from oh.commands import editorinfo
from oh.protocol.kinds import KNOWLEDGE as KNOWLEDGE_KINDS
from oh.protocol.knowledge import knowledge_observation

from .fake_editor import FakeEditor
from .inprocess import here, invoke  # noqa: F401 - `here` is a fixture


def test_usage_errors_exit_2_before_any_backend_is_needed(here):
    r = invoke(editorinfo.run_at_position, kind="definition", location="a.ts:3")
    assert r.code == 2 and "needs a position: PATH:LINE:COL" in r.err
    r = invoke(editorinfo.run_open, location="a.ts:0")
    assert r.code == 2 and "count from 1" in r.err
    r = invoke(editorinfo.run_open, location="a.ts", end="4")
    assert r.code == 2 and "--to needs a line" in r.err
    r = invoke(editorinfo.run_diagnostics, severity="fatal")
    assert r.code == 2 and "--severity must be error, warning, info or hint (got 'fatal')" in r.err


def test_local_runtime_refuses_editor_knowledge_with_the_way_out(here):
    here.start("local")
    for run, options in (
        (editorinfo.run_editors, {}),
        (editorinfo.run_diagnostics, {}),
        (editorinfo.run_open, {"location": "a.py:1"}),
    ):
        r = invoke(run, **options)
        assert r.code == 6 and "TOOL_UNSUPPORTED" in r.err and "oh start --runtime vscode" in r.err, (run, r)


def test_what_each_command_sends_to_the_editor(here):
    info = here.start("vscode")
    target = os.path.realpath(here.workspace / "a.ts")

    def answer(action):
        extras = {"path": target, "locations": []}
        if action["action"] == "diagnostics":
            extras = {
                "path": target,
                "settled": True,
                "severity": "hint",
                "diagnostics": [{"path": target, "line": 1, "column": 1, "severity": "error", "message": "bad"}],
            }
        return knowledge_observation(action["action"], action["id"], f"{target}:1:1: answer", extras)

    caps = ["run", "read", "write", "edit", *KNOWLEDGE_KINDS]
    with FakeEditor(here.session_file(info["instance_id"]), here.workspace, answer=answer, capabilities=caps) as editor:
        r = invoke(editorinfo.run_at_position, kind="references", location="a.ts:2:5", include_declaration=False)
        assert (r.code, r.out) == (0, f"{target}:1:1: answer\n")
        assert editor.actions[-1]["args"] == {"path": target, "line": 2, "column": 5, "include_declaration": False}
        r = invoke(editorinfo.run_diagnostics, path="a.ts", severity="hint", wait=2)
        assert r.code == 1, "an error in the answer: exit 1, like a compiler"
        assert editor.actions[-1]["args"] == {"path": target, "severity": "hint", "wait": 2}
        r = invoke(editorinfo.run_symbols, query="greet", limit=5, json_=True)
        assert r.code == 0 and json.loads(r.out)["observation"] == "symbols"
        assert editor.actions[-1]["args"] == {"query": "greet", "limit": 5}
        invoke(editorinfo.run_open, location="a.ts:2:3", end="4:1")
        assert editor.actions[-1]["args"] == {"path": target, "line": 2, "column": 3, "end_line": 4, "end_column": 1}
