"""`oh run` prints the notes after a command's output too (issue 41: it printed the prefix notes only): the shell
reset after `exit N` and review mode's "changes held as hN". Real backends, real `oh run` processes."""

from __future__ import annotations


def test_the_shell_reset_after_exit_n_is_said(oh):
    oh.start("local")
    out = oh("run", "--", "export A=1; exit 3", check=3)
    assert "The shell exited with code 3" in out.stderr and "were reset" in out.stderr, out.stderr
    assert out.stdout == ""
    again = oh("run", "--", 'echo "A=${A-unset}"', check=0)
    assert again.stdout.strip() == "A=unset" and "exited" not in again.stderr, again


def test_a_command_whose_changes_are_held_says_so_with_the_change_set(oh):
    oh.start("local", None, "--review", "--history")
    out = oh("run", "--", "echo x > made.txt", check=0)
    assert "held for the user's review as change set h" in out.stderr, out.stderr
    assert (oh.workspace / "made.txt").read_text() == "x\n"


def test_json_mode_prints_no_notes(oh):
    oh.start("local")
    out = oh("run", "--json", "--", "exit 4", check=4)
    assert out.stderr == "", out.stderr
