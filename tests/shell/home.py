"""A realistic HOME for the shell engine's tests (issue 17): rc files as users write them.

``make_home(dir, variant)`` writes ``.bashrc`` and ``.zshrc`` with an alias, a function, an exported
variable, a PATH addition (a tool script), a banner, and hooks that print (a DEBUG trap and
PROMPT_COMMAND for bash, precmd/preexec for zsh): their output must never land in a command's output.
Variants break the rc files the ways users do: ``slow`` (longer than the startup timeout), ``exit``,
``seteu`` (``set -eu``), ``syntax`` (a syntax error after the good part).
"""

from __future__ import annotations

import os
from pathlib import Path

BASHRC = r"""echo "*** fixture banner: welcome to bash ***"
alias fixture_alias='echo alias works'
fixture_function() { echo "function works $1"; }
export FIXTURE_VAR=fixture-value
export PATH="$HOME/tools:$PATH"
trap 'echo DEBUG-TRAP-OUTPUT' DEBUG
PROMPT_COMMAND='echo PROMPT-COMMAND-OUTPUT'
PS1='fixture$ '
"""

ZSHRC = r"""echo "*** fixture banner: welcome to zsh ***"
alias fixture_alias='echo alias works'
fixture_function() { echo "function works $1"; }
export FIXTURE_VAR=fixture-value
path=("$HOME/tools" $path)
precmd() { echo PRECMD-OUTPUT; }
preexec() { echo PREEXEC-OUTPUT; }
fixture_hook() { echo PRECMD-HOOK-OUTPUT; }
precmd_functions+=(fixture_hook)
PS1='fixture%# '
"""

HOOK_OUTPUTS = (
    "DEBUG-TRAP-OUTPUT",
    "PROMPT-COMMAND-OUTPUT",
    "PRECMD-OUTPUT",
    "PREEXEC-OUTPUT",
    "PRECMD-HOOK-OUTPUT",
    "fixture banner",
)

VARIANTS = {
    "good": "",
    "slow": "sleep 30\n",
    "exit": "exit 3\n",
    "seteu": "set -eu\n",
    "syntax": "if then fi (\n",
}

# What each variant's note must say (None: no note).
NOTES = {
    "good": None,
    "slow": "did not finish within",
    "exit": "exited while reading",
    "seteu": "set -e",
    "syntax": "ended with an error",
}


def make_home(root: Path, variant: str = "good") -> Path:
    home = root / f"home-{variant}"
    (home / "tools").mkdir(parents=True)
    tool = home / "tools" / "fixture-tool"
    tool.write_text("#!/bin/sh\necho fixture tool ran\n")
    tool.chmod(0o755)
    extra = VARIANTS[variant]
    (home / ".bashrc").write_text(BASHRC + extra)
    (home / ".zshrc").write_text(ZSHRC + extra)
    return home


def shell_env(home: Path, shell: str, *, base: dict | None = None) -> dict[str, str]:
    """An environment for the agent's shell: this HOME, this $SHELL, the user's shell on."""
    import shutil

    env = dict(os.environ if base is None else base)
    env["HOME"] = str(home)
    env["SHELL"] = shutil.which(shell) or f"/bin/{shell}"
    env["OH_USER_SHELL"] = "1"
    # Generous: a loaded machine must not turn a good rc into a "too slow" one (the slow variant's
    # tests set their own, short, timeout).
    env["OH_SHELL_STARTUP_TIMEOUT"] = "30"
    env.pop("ZDOTDIR", None)
    return env
