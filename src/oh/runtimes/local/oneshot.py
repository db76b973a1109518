"""The approved one-shot: what runs when the user let a command leave the sandbox (issue 36, docs/security.md §11.1).

What the user approved is exactly what runs. The one-shot's shell is started by oh, never by the agent:

- its files (the init and run files the pty shell reads, ``initfiles.py``) live in a private 0700 directory of their
  own, made for this one shell and bound into no sandbox, so nothing the agent runs can rewrite them;
- its environment is fixed: oh's own environment from when it started (the user's), without the variables that make
  a bash run code of their own (``BASH_ENV``, ``PROMPT_COMMAND``, exported functions, ...), with a PATH of absolute
  directories only. Nothing of the agent's shell rides along: not its exports, functions, aliases or traps;
- the approved text runs in ``bash --norc --noprofile -c``, a child of that clean shell, with the action's ``env``
  (which the user saw in the question) exported for it alone: the same as that text run by the user in a clean bash.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import tempfile

from .render import COLS, ROWS

# Variables a bash (or a program it starts) reads as code or as a place to find code: never taken from oh's own
# environment into the one-shot. The action's ``env`` may still set them (the user saw them in the question).
HOOKS = re.compile(
    r"\A(BASH_ENV|ENV|PROMPT_COMMAND|PS[0-4]|SHELLOPTS|BASHOPTS|CDPATH|GLOBIGNORE|EXECIGNORE|BASH_FUNC_.*|"
    r"BASH_XTRACEFD|INPUTRC|HISTFILE|__oh_.*)\Z",
    re.DOTALL,
)
FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"


def clean_path(path: str) -> str:
    """``path`` with its absolute directories only (a relative entry is wherever the command runs), each once."""
    dirs = [d for d in path.split(os.pathsep) if d.startswith("/")]
    return os.pathsep.join(dict.fromkeys(dirs)) or FALLBACK_PATH


def base_env(env: dict[str, str]) -> dict[str, str]:
    """The one-shot shell's environment: ``env`` (oh's own, as it started) without the hook variables, with a clean
    PATH and the terminal's size (the one-shot runs on a pty)."""
    out = {k: v for k, v in env.items() if not HOOKS.match(k)}
    out["PATH"] = clean_path(env.get("PATH", ""))
    out["TERM"] = "xterm-256color"
    out["COLUMNS"], out["LINES"] = str(COLS), str(ROWS)
    return out


def command_env(env: dict[str, str], action_env: dict[str, str] | None) -> dict[str, str]:
    """The environment the approved text itself runs with: ``base_env`` plus the action's ``env``."""
    return {**base_env(env), **(action_env or {})}


def bash_path(env: dict[str, str]) -> str:
    """The bash that runs approved text: found on the clean PATH (absolute) once per process and PATH."""
    return _which_bash(clean_path(env.get("PATH", "")))


@functools.lru_cache(maxsize=8)
def _which_bash(path: str) -> str:
    return shutil.which("bash", path=path) or "/bin/bash"


def script(command: str, env: dict[str, str], action_env: dict[str, str] | None, bash: str, cwd: str | None) -> str:
    """What the clean shell runs (sent through its private command pipe, never argv, as every command is): a
    subshell that puts back the variables bash changed for itself (``SHLVL``, ``OLDPWD``), exports the action's
    ``env`` and execs ``bash --norc --noprofile -c <command>``."""
    lines = []
    if cwd is not None:
        lines.append(f"builtin cd -- {shlex.quote(cwd)} || builtin return $?")
    sub = ["builtin unset OLDPWD"]
    level = env.get("SHLVL")
    sub.append(f"builtin export SHLVL={shlex.quote(level)}" if level is not None else "builtin unset SHLVL")
    sub += [f"builtin export {k}={shlex.quote(v)}" for k, v in (action_env or {}).items()]
    sub.append(f"builtin exec {shlex.quote(bash)} --norc --noprofile -c {shlex.quote(command)}")
    lines.append("(\n" + "\n".join(sub) + "\n)")
    return "\n".join(lines)


def private_dir(root: str | None = None) -> str:
    """A fresh 0700 directory for one one-shot shell's files, bound into no sandbox: under ``root`` (oh's own state
    directory, which every sandbox hides) when given, else under /tmp (visible read-only inside a sandbox since
    issue 41.1, so never writable by an agent)."""
    if root is None:
        root = "/tmp" if os.path.isdir("/tmp") else None
    return tempfile.mkdtemp(prefix="oh-oneshot-", dir=root)


def remove_dir(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
