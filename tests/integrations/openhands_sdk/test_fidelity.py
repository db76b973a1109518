"""Side by side: the SDK's own file editor and terminal vs the same actions through oh. Texts (errors,
snippet windows, listings), is_error, prev_exist and the whole-file old/new contents must match."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from openhands.tools.file_editor.definition import FileEditorAction  # noqa: E402
from openhands.tools.file_editor.impl import FileEditorExecutor  # noqa: E402
from openhands.tools.terminal.definition import TerminalAction  # noqa: E402
from openhands.tools.terminal.impl import TerminalExecutor  # noqa: E402

from oh.integrations.openhands import link as links  # noqa: E402
from oh.integrations.openhands.file_editor import OhFileEditorExecutor  # noqa: E402
from oh.integrations.openhands.terminal import OhTerminalExecutor  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def script(root: Path) -> list[dict]:
    r = str(root)
    return [
        {"command": "view", "path": f"{r}/missing.txt"},
        {"command": "create", "path": f"{r}/a.py", "file_text": "line1\nline2\nline3\n"},
        {"command": "create", "path": f"{r}/a.py", "file_text": "again\n"},
        {"command": "view", "path": f"{r}/a.py"},
        {"command": "view", "path": f"{r}/a.py", "view_range": [2, 3]},
        {"command": "view", "path": f"{r}/a.py", "view_range": [2, -1]},
        {"command": "view", "path": f"{r}/a.py", "view_range": [5, 6]},
        {"command": "view", "path": f"{r}/a.py", "view_range": [3, 1]},
        {"command": "str_replace", "path": f"{r}/a.py", "old_str": "line2", "new_str": "LINE2"},
        {"command": "str_replace", "path": f"{r}/a.py", "old_str": "nope", "new_str": "x"},
        {"command": "create", "path": f"{r}/dup.txt", "file_text": "x\ny\nx\n"},
        {"command": "str_replace", "path": f"{r}/dup.txt", "old_str": "x", "new_str": "z"},
        {"command": "str_replace", "path": f"{r}/a.py", "old_str": "line1", "new_str": "line1"},
        {"command": "insert", "path": f"{r}/a.py", "insert_line": 1, "new_str": "inserted"},
        {"command": "insert", "path": f"{r}/a.py", "insert_line": 99, "new_str": "nope"},
        {"command": "undo_edit", "path": f"{r}/a.py"},
        {"command": "undo_edit", "path": f"{r}/never-edited.txt"},
        {"command": "str_replace", "path": f"{r}/a.py", "old_str": "line3"},
        {"command": "view", "path": r},
        {"command": "view", "path": f"{r}/nodir"},
        {"command": "str_replace", "path": f"{r}/missing.txt", "old_str": "a", "new_str": "b"},
        {"command": "insert", "path": f"{r}/a.py", "insert_line": 0},
        {"command": "create", "path": f"{r}/nofile"},
    ]


def fields(obs, root: Path) -> dict:
    def norm(v):
        return v.replace(str(root), "<ROOT>") if isinstance(v, str) else v

    return {
        "is_error": obs.is_error,
        "text": norm(obs.text),
        "prev_exist": obs.prev_exist if not obs.is_error else None,
        "old_content": obs.old_content,
        "new_content": obs.new_content,
        "path": norm(obs.path),
    }


def test_file_editor_matches_the_sdk(oh_backend, tmp_path):
    native_root = tmp_path / "native"
    native_root.mkdir()
    oh_root = oh_backend.workspace
    native = FileEditorExecutor(workspace_root=str(native_root))
    link = links.link_for("fidelity", str(oh_root), None, "fidelity")
    assert link is not None
    ours = OhFileEditorExecutor(link, "fidelity")
    diffs = []
    try:
        for a, b in zip(script(native_root), script(oh_root)):
            want = fields(native(FileEditorAction(**a)), native_root)
            got = fields(ours(FileEditorAction(**b)), oh_root)
            if want != got:
                diffs.append(
                    {
                        "action": {k: v for k, v in a.items() if k != "path"}
                        | {"path": a["path"].replace(str(native_root), "<ROOT>")},
                        "sdk": {k: v for k, v in want.items() if got.get(k) != v},
                        "oh": {k: v for k, v in got.items() if want.get(k) != v},
                    }
                )
    finally:
        ours.close()
    assert (oh_root / "a.py").read_text() == (native_root / "a.py").read_text()
    assert not diffs, "\n\n".join(repr(d) for d in diffs)


def test_create_makes_parent_directories(oh_backend):
    """Where oh is deliberately better: the SDK's create fails in a missing directory ("Ran into [Errno 2]
    ... .tmp"); oh creates the parents, as `write` does."""
    link = links.link_for("fidelity-mkdir", str(oh_backend.workspace), None, "fidelity")
    ours = OhFileEditorExecutor(link, "fidelity-mkdir")
    try:
        target = oh_backend.workspace / "sub" / "deeper" / "new.txt"
        obs = ours(FileEditorAction(command="create", path=str(target), file_text="deep\n"))
    finally:
        ours.close()
    assert not obs.is_error and obs.text == f"File created successfully at: {target}" and obs.prev_exist is False
    assert target.read_text() == "deep\n"


def test_terminal_matches_the_sdk(make_oh_backend, tmp_path):
    # Unsandboxed: this pins the first observation against the SDK's own terminal, and a sandboxed shell's
    # first observation says the sandbox's level (tests/sandbox covers that line).
    oh_backend = make_oh_backend("--sandbox", "off")
    native_root = tmp_path / "native-term"
    native_root.mkdir()
    oh_root = oh_backend.workspace
    native = TerminalExecutor(working_dir=str(native_root), terminal_type="subprocess")
    link = links.link_for("fidelity-term", str(oh_root), None, "fidelity")
    ours = OhTerminalExecutor(link, "fidelity-term")
    steps = [
        TerminalAction(command=""),  # nothing runs: an error, not a finished command
        TerminalAction(command="C-c", is_input=True),
        TerminalAction(command="echo one; (exit 4)"),
        TerminalAction(command="pwd"),
        TerminalAction(command="", reset=True),
    ]
    rows = []
    try:
        for act in steps:
            w, g = native(act), ours(act)
            rows.append((act.command, act.is_input, act.reset, w, g))
    finally:
        native.close()
        ours.close()
    for cmd, is_input, reset, w, g in rows:
        where = f"{cmd!r} is_input={is_input} reset={reset}"
        assert g.is_error == w.is_error, (where, w.text, g.text)
        assert g.exit_code == w.exit_code or (w.exit_code is None and g.exit_code in (None, -1)), (
            where,
            w.exit_code,
            g.exit_code,
        )
        assert g.command == w.command, where
        if w.is_error:
            assert g.text == w.text, (where, w.text, g.text)
    _, _, _, w, g = rows[2]
    assert "one" in g.text and g.metadata.exit_code == 4 == w.metadata.exit_code
    _, _, _, w, g = rows[3]
    # (the SDK's subprocess terminal leaves bracketed-paste escapes around its output)
    assert g.text.strip() == str(oh_root.resolve()) and str(native_root.resolve()) in w.text


def test_token_rotation_reconnects_with_the_new_token(oh_backend):
    """`oh token rotate` closes every connection (4001); the next tool call reads the session file again
    and reconnects instead of failing for the rest of the conversation."""
    link = links.link_for("rotate", str(oh_backend.workspace), None, "fidelity")
    ours = OhTerminalExecutor(link, "rotate")
    try:
        assert "before" in ours(TerminalAction(command="echo before")).text
        old = link.session.token
        proc = oh_backend.oh("token", "rotate")
        assert proc.returncode == 0, proc.stderr
        import time

        end = time.monotonic() + 10
        first = link._client  # noqa: SLF001
        while not first.closed and time.monotonic() < end:  # the 4001 close arrives asynchronously
            time.sleep(0.05)
        assert first.closed
        obs = ours(TerminalAction(command="echo after"))
        assert not obs.is_error and "after" in obs.text, obs.text
        assert link.session.token != old and link._client is not first  # noqa: SLF001
    finally:
        ours.close()


def test_session_env_of_the_tool_survives_a_reset(oh_backend):
    """TerminalTool.create(env=...) (client-controlled session variables) reach oh's shell, also after reset."""
    link = links.link_for("env", str(oh_backend.workspace), None, "fidelity")
    ours = OhTerminalExecutor(link, "env", env={"OH_SESSION_VAR": "kept"})
    try:
        assert "v=kept" in ours(TerminalAction(command="echo v=$OH_SESSION_VAR")).text
        assert not ours(TerminalAction(command="", reset=True)).is_error
        assert "v=kept" in ours(TerminalAction(command="echo v=$OH_SESSION_VAR")).text
    finally:
        ours.close()
