"""The approved one-shot's fixed environment (runtimes/local/oneshot.py, docs/security.md §11.1): oh's own start
environment without the variables that make bash run code, a PATH of absolute directories, the action's env on top;
and its script runs the approved text, as written, in a clean bash (a real bash runs it here)."""

from __future__ import annotations

import subprocess

from oh.runtimes.local import oneshot


def test_base_env_drops_hooks_and_relative_path_entries():
    env = {
        "HOME": "/h",
        "PATH": ".:bin:/usr/bin::/bin:/usr/bin",
        "BASH_ENV": "/x",
        "ENV": "/x",
        "PROMPT_COMMAND": "x",
        "BASH_FUNC_git%%": "() { x; }",
        "SHELLOPTS": "xtrace",
        "PS4": "$(x)",
        "LANG": "C.UTF-8",
    }
    base = oneshot.base_env(env)
    assert base["PATH"] == "/usr/bin:/bin" and base["HOME"] == "/h" and base["LANG"] == "C.UTF-8"
    assert not {"BASH_ENV", "ENV", "PROMPT_COMMAND", "BASH_FUNC_git%%", "SHELLOPTS", "PS4"} & set(base)
    assert oneshot.base_env({"PATH": "relative"})["PATH"] == oneshot.FALLBACK_PATH
    assert oneshot.command_env(env, {"PROMPT_COMMAND": "seen"})["PROMPT_COMMAND"] == "seen"  # the user saw it


def test_the_script_runs_the_text_in_a_clean_bash_with_the_action_env(tmp_path):
    env = oneshot.base_env({"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SHLVL": "3"})
    bash = oneshot.bash_path(env)
    text = 'echo "$FOO|$SHLVL|${OLDPWD-none}"; alias; trap -p; echo $0'
    script = oneshot.script(text, env, {"FOO": "a 'b'"}, bash, str(tmp_path))
    # the clean shell oh starts has its own aliases and traps; none reach the approved text
    harness = "alias ll=ls; trap 'echo TRAP' EXIT; export SHLVL=9; cd /; " + script
    out = subprocess.run([bash, "--norc", "--noprofile", "-c", harness], env=env, capture_output=True, text=True)
    assert out.stdout.splitlines()[0] == "a 'b'|4|none", out
    assert out.stdout.splitlines()[1:] == [bash, "TRAP"], out  # $0 is bash; the harness's own trap ran in it only
