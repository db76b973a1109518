"""Issue 9, the CLI's parts of items 18, 20, 21 and 22: real backends, real `oh` processes.

Where the point is what the CLI sends to an editor or how it words an editor's answer, a scripted
editor (fake_editor.py) registers on the real vscode-runtime backend in place of VS Code.
"""

from __future__ import annotations

import pytest

from .fake_editor import FakeEditor, refused, run_observation


def _editor(oh, answer=None):
    info = oh.start("vscode", None, "--editor-timeout", "20")
    kw = {"answer": answer} if answer else {}
    return FakeEditor(oh.session_file(info["instance_id"]), oh.workspace, **kw)


# ---------------------------------------------------------------------------- 18
def test_run_always_sends_an_explicit_cwd(oh, tmp_path):
    """From inside the workspace: your cwd; from outside: the workspace root; --cwd relative to either.
    Without an explicit cwd the vscode runtime used the shared terminal's last cwd."""
    ws = oh.workspace.resolve()
    sub = ws / "sub"
    sub.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    with _editor(oh) as editor:
        assert oh("run", "--", "pwd", cwd=sub, check=0).stdout == f"{sub}\n"
        assert oh("run", "-C", str(ws), "--", "pwd", cwd=outside, check=0).stdout == f"{ws}\n"
        oh("run", "-C", str(ws), "--cwd", "sub", "--", "pwd", cwd=outside, check=0)
        oh("run", "--cwd", "..", "--", "pwd", cwd=sub, check=0)
        oh("run", "--reset", "--", "pwd", cwd=sub, check=0)
    cwds = [a["args"]["cwd"] for a in editor.actions]
    assert cwds == [str(sub), str(ws), str(sub), str(ws), str(sub)]
    assert editor.actions[-1]["args"].get("reset") is True


def test_read_write_edit_send_absolute_paths(oh, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = oh.workspace.resolve()

    def answer(action):
        obs = run_observation(action["id"], "", "", 0)
        obs.update(observation="read", content="text\n", extras={"path": action["args"]["path"]})
        return obs

    with _editor(oh, answer) as editor:
        oh("read", "-C", str(ws), "a.txt", cwd=outside, check=0)
        oh("read", "b.txt", cwd=ws, check=0)
    assert [a["args"]["path"] for a in editor.actions] == [str(ws / "a.txt"), str(ws / "b.txt")]


# ---------------------------------------------------------------------------- 20
@pytest.mark.parametrize("verb", [("run", "--", "true"), ("read", "f.txt")], ids=["run", "read"])
def test_without_an_editor_the_verbs_say_at_once_that_they_wait(oh, verb):
    oh.start("vscode", None, "--editor-timeout", "25")
    proc = oh.agent(*verb)
    try:
        first = proc.stderr.readline()
        still_waiting = proc.poll() is None  # said before the wait ended, not after
    finally:
        proc.kill()
        proc.communicate()
    assert still_waiting, first
    assert "no editor is connected" in first and "waiting up to 25 s" in first and "VS Code" in first


def test_quiet_run_without_editor_says_only_the_error(oh):
    oh.start("vscode", None, "--editor-timeout", "0.5")
    p = oh("run", "--quiet", "--", "true")
    assert p.returncode == 7 and "waiting" not in p.stderr and "NO_EDITOR" in p.stderr


# ---------------------------------------------------------------------------- 21
BUSY_TEXT = (
    "A command is already running; send input with is_input, interrupt it with C-c, wait with an empty command, "
    "or reset."
)
LEGACY_NOT_EXECUTED = (
    '[Your command "ls" is NOT executed. The previous command is still running - You CANNOT send new commands until '
    "the previous command is completed. By setting `is_input` to `true`, you can interact with the current process: "
    "You may wait longer to see additional output of the previous command by sending empty command '', send other "
    'commands to interact with the current process, send keys ("C-c", "C-z", "C-d") to interrupt/kill the previous '
    "command before sending your new command, or use the timeout parameter in execute_bash for future commands.]"
)


def _legacy_busy(action):
    return run_observation(action["id"], action["args"]["command"], LEGACY_NOT_EXECUTED, -1, action["args"].get("cwd"))


@pytest.mark.parametrize("answer", [refused("BUSY", BUSY_TEXT), _legacy_busy], ids=["BUSY", "legacy-NOT-executed"])
def test_a_refused_run_is_an_error_with_steps_for_a_person(oh, answer):
    with _editor(oh, answer):
        p = oh("run", "--", "ls")
    assert p.returncode == 6, p.stderr
    assert "still running" in p.stderr
    for step in ("oh run --wait", "oh run --input TEXT", "oh run --interrupt", "oh run --reset"):
        assert step in p.stderr
    for agent_text in ("execute_bash", "is_input", "empty command", "C-c"):
        assert agent_text not in p.stderr + p.stdout
    assert p.stdout == ""


def test_input_interrupt_and_wait_send_what_the_protocol_expects(oh):
    with _editor(oh) as editor:
        oh("run", "--input", "yes", check=0)
        oh("run", "--interrupt", check=0)
        oh("run", "--wait", "--timeout", "5", check=0)
        p = oh("run", "--wait", "--", "ls")
        assert p.returncode == 2 and "give no command" in p.stderr
        p = oh("run", "--wait", "--interrupt")
        assert p.returncode == 2 and "at most one of" in p.stderr
    sent = [(a["args"]["command"], a["args"]["is_input"]) for a in editor.actions]
    assert sent == [("yes", True), ("C-c", True), ("", False)]
    assert editor.actions[2]["args"]["blocking"] is False  # --wait --timeout is a soft wait, never a kill


def test_waiting_when_nothing_runs_is_an_error(oh):
    oh.start("local")
    for args in (("--wait",), ("--interrupt",), ("--input", "x")):
        p = oh("run", *args)
        assert p.returncode == 6, (args, p.stderr)
        assert "nothing is running" in p.stderr and "ERROR" not in p.stdout


# ---------------------------------------------------------------------------- 22
def test_truncated_output_is_announced_on_stderr(oh):
    oh.start("local")
    p = oh("run", "--", "seq 1 20000")
    assert p.returncode == 0 and "characters truncated" in p.stdout
    assert "output was truncated" in p.stderr and "--max-output 0" in p.stderr
    p = oh("run", "--quiet", "--", "seq 1 20000")
    assert p.stderr == ""
    p = oh("run", "--", "seq 1 10")
    assert "truncated" not in p.stderr


def test_counts_and_ranges(oh):
    oh.start("local")
    assert oh("write", "one.txt", "--content", "x", check=0).stdout.startswith("wrote 1 byte to ")
    assert oh("write", "two.txt", "--content", "xy", check=0).stdout.startswith("wrote 2 bytes to ")
    assert oh("write", "-q", "three.txt", "--content", "xyz", check=0).stdout == ""
    oh("write", "lines.txt", "--content", "a\nb\nc\nd\n", check=0)
    p = oh("read", "--start", "5", "--end", "2", "lines.txt")
    assert p.returncode == 2 and "--end must be --start (5) or more" in p.stderr and p.stdout == ""
    for bad in ("-1", "0"):
        p = oh("read", "--start", bad, "lines.txt")
        assert p.returncode == 2 and "--start must be 1 or more" in p.stderr
    # Issue 30 item 10: lines count as in an editor (and `oh open FILE:42`): 1-based, --end included.
    assert oh("read", "--start", "1", "--end", "1", "lines.txt", check=0).stdout == "a\n"
    assert oh("read", "--start", "2", "--end", "3", "lines.txt", check=0).stdout == "b\nc\n"
    assert oh("read", "--start", "4", "lines.txt", check=0).stdout == "d\n"
    assert oh("read", "--end", "2", "lines.txt", check=0).stdout == "a\nb\n"
    p = oh("edit", "lines.txt", "--insert", "-2", "x")
    assert p.returncode == 2 and "0 (the top) or more" in p.stderr
    p = oh("edit", "-q", "lines.txt", "--replace", "b", "B", check=0)
    assert p.stdout == "" and (oh.workspace / "lines.txt").read_text() == "a\nB\nc\nd\n"


def test_help_speaks_plainly(oh):
    for verb in ("run", "read", "write", "edit", "status"):
        text = oh(verb, "--help", check=0).stdout
        for jargon in ("<bool>", "<list[str]>", "<str>", "<int>", "<float", "<tuple"):
            assert jargon not in text, (verb, jargon)
    text = oh("run", "--help", check=0).stdout
    assert "--interrupt" in text and "--wait" in text and "--input" in text and "--quiet" in text and "SECONDS" in text
    p = oh("run", "--timeout", "soon", "--", "true")
    assert p.returncode == 2 and "'soon' is not a number" in p.stderr and "Input should" not in p.stderr
    p = oh("run", "--timeout", "0", "--", "true")
    assert p.returncode == 2 and "at least 0.001" in p.stderr


def test_a_command_left_running_is_explained_for_a_person(oh):
    """Soft timeout (no new output for 30 s): the backend's hint names agent tools; the CLI says what to type."""
    hint = (
        "You may wait longer to see additional output by sending empty command '', send other commands to interact "
        "with the current process, send keys to interrupt/kill the command, or use the timeout parameter in "
        "execute_bash for future commands."
    )

    def still_running(action):
        return run_observation(
            action["id"],
            action["args"]["command"],
            "partial output\n",
            -1,
            action["args"].get("cwd"),
            suffix=f"\n[The command has no new output after 30 seconds. {hint}]",
        )

    with _editor(oh, still_running):
        p = oh("run", "--", "./server")
    assert p.returncode == 124 and p.stdout == "partial output\n"
    assert (
        "no new output after 30 seconds" in p.stderr
        and "oh run --wait" in p.stderr
        and "oh run --interrupt" in p.stderr
    )
    assert "execute_bash" not in p.stderr and "empty command" not in p.stderr
