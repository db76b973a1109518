"""Shell completion: committed scripts are current, install writes the standard places, dynamic values."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from oh.commands import completions

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("shell", completions.SHELLS)
def test_committed_scripts_are_current(shell):
    committed = REPO / "completions" / completions.FILES[shell]
    assert committed.exists(), f"missing {committed}: run scripts/gen-completions"
    assert committed.read_text() == completions.script(shell), f"{committed} is stale: run scripts/gen-completions"


def test_show_prints_the_committed_script(oh):
    assert oh("completions", "show", "fish", check=0).stdout == (REPO / "completions" / "oh.fish").read_text()
    assert oh("completions", "show", "pwsh", check=0).stdout == (REPO / "completions" / "oh.ps1").read_text()
    p = oh("completions", "show", "tcsh")
    assert p.returncode == 2 and "bash, zsh, fish, powershell" in p.stderr


def test_install_detects_shell_from_env_and_writes_standard_locations(oh, tmp_path):
    p = oh("completions", "install", "--json", env={"SHELL": "/usr/bin/fish"}, check=0)
    target = tmp_path / "xdg-config" / "fish" / "completions" / "oh.fish"
    assert target.read_text() == completions.script("fish")
    assert str(target) in p.stdout

    p = oh("completions", "install", "bash", check=0)
    bash_target = tmp_path / "xdg-data" / "bash-completion" / "completions" / "oh"
    assert bash_target.read_text() == completions.script("bash")
    assert f"wrote {bash_target}" in p.stdout
    if completions.bash_completion_found():
        assert not (oh.user_home / ".bashrc").exists()  # bash-completion loads it; no rc edits
    else:  # issue 41: nothing would have loaded it
        assert f". {bash_target}" in (oh.user_home / ".bashrc").read_text() and "bash-completion" in p.stdout
    p = oh("completions", "install", "bash", check=0)
    assert "already up to date" in p.stdout

    oh("completions", "install", "zsh", check=0)
    zshrc = (oh.user_home / ".zshrc").read_text()
    assert (oh.user_home / ".zfunc" / "_oh").read_text() == completions.script("zsh")
    assert "fpath=(" in zshrc and completions.MARK in zshrc
    oh("completions", "install", "zsh", check=0)
    assert (oh.user_home / ".zshrc").read_text().count(completions.MARK) == 1  # idempotent

    oh("completions", "install", "powershell", check=0)
    profile = tmp_path / "xdg-config" / "powershell" / "Microsoft.PowerShell_profile.ps1"
    assert "oh-completion.ps1" in profile.read_text()

    p = oh("completions", "install", env={"SHELL": "/bin/tcsh"})
    assert p.returncode == 2 and "cannot detect" in p.stderr


def _complete_bash(oh, words: str, cword: int) -> list[str]:
    env = {"_OH_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    return oh(env=env, check=0).stdout.split()


def test_dynamic_completion_of_runtimes_keys_commands(oh):
    assert _complete_bash(oh, "oh start --runtime ", 3) == ["local", "vscode"]
    assert _complete_bash(oh, "oh config set edi", 3) == ["editor_timeout"]
    assert set(_complete_bash(oh, "oh to", 1)) == {"token"}
    assert {"show", "rotate"} <= set(_complete_bash(oh, "oh token ", 2))


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_sourced_bash_script_completes_through_oh(oh):
    """The committed script, sourced in a real bash, calls `oh` back and fills COMPREPLY."""
    env = dict(oh.env, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    script = (
        f"source {REPO / 'completions' / 'oh.bash'}; COMP_WORDS=(oh config get run); COMP_CWORD=3; _oh_completion "
        "oh; printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    if not (Path(sys.executable).parent / "oh").exists():
        pytest.skip("the `oh` console script is not installed next to this interpreter")
    out = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=env, timeout=30
    )
    assert out.stdout.split() == ["runtime"], out.stderr


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh not installed")
def test_installed_zsh_completion_completes_on_the_first_tab(oh):
    """Issue 18 item 13: after `oh completions install zsh`, the very first TAB of a new interactive zsh
    (which autoloads `_oh` from fpath) completes; before, it only registered the function."""
    import pexpect

    if not (Path(sys.executable).parent / "oh").exists():
        pytest.skip("the `oh` console script is not installed next to this interpreter")
    oh("completions", "install", "zsh", check=0)
    zshrc = oh.user_home / ".zshrc"
    zshrc.write_text("PS1='zsh> '\nunsetopt beep\n" + zshrc.read_text())
    env = dict(
        oh.env,
        ZDOTDIR=str(oh.user_home),
        TERM="dumb",
        PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
    )
    child = pexpect.spawn(
        "zsh", ["-i"], cwd=str(oh.workspace), env=env, encoding="utf-8", timeout=20, dimensions=(24, 200)
    )
    try:
        child.expect_exact("zsh> ")
        child.send("oh confi\t")  # the first TAB in this shell
        child.expect_exact("oh config ")
        child.send("\x15")  # Ctrl-U: clear the line
        child.send("oh config get edi\t")
        child.expect_exact("editor_timeout")
    finally:
        child.close(force=True)
