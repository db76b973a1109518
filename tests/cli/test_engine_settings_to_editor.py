"""Issue 17: the backend's agent-shell settings reach the editor, so VS Code's shell engine follows
`oh start --clean-shell` and `shell_startup_timeout` too (docs/protocol.md §4, the `registered` answer).
A real backend (runtime vscode) and a scripted editor."""

from __future__ import annotations

from .fake_editor import FakeEditor


def test_clean_shell_and_startup_timeout_are_in_the_registered_answer(oh) -> None:
    info = oh.start("vscode", None, "--clean-shell")
    with FakeEditor(oh.session_file(info["instance_id"]), oh.workspace) as editor:
        assert editor.welcome["user_shell"] is False, editor.welcome
