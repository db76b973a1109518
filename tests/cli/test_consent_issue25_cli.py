"""Consent through real `oh` processes (issue 25): what the user approves is what they see (`oh approvals`
shows the whole command, --json holds it, a command too long to show is refused with a reason), and the
agent's shell cannot learn where oh keeps its state from its parent's /proc entries."""

from __future__ import annotations

import json

AGENT_WAIT = 60


def test_approvals_show_the_whole_command(oh):
    oh.start("local", None, "--consent", "commands")
    command = "echo start\n" + "\n".join(f"echo line{i} {'x' * 90}" for i in range(40)) + "\ntouch hidden-at-the-end"
    agent = oh.agent("run", command)
    try:
        rows = oh.pending()
        assert rows[0]["command"] == command  # --json: the whole command, newlines included
        plain = oh("approvals", check=0).stdout
        assert "touch hidden-at-the-end" in plain and "line39" in plain and "command (whole):" in plain
        oh("reject", rows[0]["id"], "--reason", "no", check=0)
    finally:
        agent.communicate(timeout=AGENT_WAIT)
    assert not (oh.workspace / "hidden-at-the-end").exists()


def test_a_command_too_long_to_show_is_refused_with_a_reason(oh):
    oh.start("local", None, "--consent", "commands")
    proc = oh("run", "touch long.txt; : " + "a" * (70 * 1024), check=None, timeout=AGENT_WAIT)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "command too long to show for consent" in out and "script file" in out
    assert oh.json("approvals", "--json")["approvals"] == []  # refused up front, never asked
    assert not (oh.workspace / "long.txt").exists()


def test_a_command_near_the_limit_is_shown_whole_and_100_kib_is_refused(oh):
    """Item 4 of issue 25 at full size: a 60 KiB command (one line, its effect at the very end) is in
    `oh approvals --json` byte for byte and in the text of `oh approvals`; a 100 KiB one is refused up front
    with the reason, never asked."""
    oh.start("local", None, "--consent", "commands")
    command = "echo " + "x" * (60 * 1024) + "; touch hidden-after-60k"
    agent = oh.agent("run", command)
    try:
        rows = oh.pending()
        assert rows[0]["command"] == command
        plain = oh("approvals", check=0).stdout
        assert "touch hidden-after-60k" in plain and plain.count("x") >= 60 * 1024
        oh("reject", rows[0]["id"], "--reason", "no", check=0)
    finally:
        agent.communicate(timeout=AGENT_WAIT)
    assert not (oh.workspace / "hidden-after-60k").exists()
    proc = oh("run", "echo " + "y" * (100 * 1024) + "; touch hidden-after-100k", check=None, timeout=AGENT_WAIT)
    assert proc.returncode != 0 and "command too long to show for consent" in proc.stdout + proc.stderr
    assert oh.json("approvals", "--json")["approvals"] == []
    assert not (oh.workspace / "hidden-after-100k").exists()


def test_the_agent_shell_parent_does_not_name_oh_state(oh):
    # Unsandboxed, the shell's parent is the backend itself: its argv and environ must not name oh's state.
    # (Sandboxed, the parent is bubblewrap and oh's state is an empty tmpfs: tests/sandbox covers that.)
    oh.start("local", None, "--sandbox", "off")
    proc = oh(
        "run",
        "tr '\\0' '\\n' < /proc/$PPID/cmdline; echo ---; tr '\\0' '\\n' < /proc/$PPID/environ",
        "--json",
        check=None,
        timeout=AGENT_WAIT,
    )
    seen = json.loads(proc.stdout)["content"]
    assert "oh.backend" in seen and "---" in seen  # it did read its parent's details
    for secret in (str(oh.home), "OH_HOME", "--log-file", "--instance-id"):
        assert secret not in seen, secret


def test_the_live_view_shows_every_line_of_the_asked_command(oh):
    from .terminal import Term

    term = Term(oh, "--runtime", "local", "--consent", "commands", cols=120, rows=40)
    try:
        term.session()
        agent = oh.agent("run", "echo first\necho second\ntouch hidden-on-line-three")
        term.see("touch hidden-on-line-three")  # the third line of the command, not only its summary
        term.wait(lambda t: "y allow" in t, what="the question")
        term.child.send("n")
        agent.communicate(timeout=AGENT_WAIT)
        assert not (oh.workspace / "hidden-on-line-three").exists()
    finally:
        term.kill()


def test_the_live_view_names_what_does_not_fit_and_where_to_read_it(oh):
    from .terminal import Term

    term = Term(oh, "--runtime", "local", "--consent", "commands", cols=120, rows=40)
    try:
        term.session()
        agent = oh.agent("run", "echo " + "z" * (20 * 1024) + "; touch hidden-in-a-long-line")
        term.see("shows the whole command")  # the lines that do not fit are counted, with where to read them
        term.wait(lambda t: "more lines: `oh approvals`" in t and "y allow" in t, what="the note and the question")
        term.child.send("n")
        agent.communicate(timeout=AGENT_WAIT)
        assert not (oh.workspace / "hidden-in-a-long-line").exists()
    finally:
        term.kill()
