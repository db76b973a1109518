"""The agent shell's init files: static scripts shipped as package data (``shellinit/``, as VS Code ships
its shell integration), each prefixed with a short generated header of per-shell values.

The header holds only shell variables (the marker nonce, the command pipe's fd, oh's private file paths):
never environment variables, so no process the user's rc files start can see the nonce.
"""

from __future__ import annotations

import functools
import os
from importlib import resources


@functools.cache
def script(name: str) -> str:
    """The text of ``shellinit/<name>`` (read once per process)."""
    return resources.files(__package__).joinpath("shellinit", name).read_text(encoding="utf-8")


def quote(text: str) -> str:
    """``text`` as one single-quoted word for bash and zsh."""
    return "'" + text.replace("'", "'\\''") + "'"


# The boot of a bash that an `exec` in the agent's shell started (shellinit/oh.bash): its one-time
# PROMPT_COMMAND, or the line oh types at its prompt when the user's rc files replaced PROMPT_COMMAND. The
# DEBUG trap those rc files set is saved and cleared first (it would print into the boot's every line).
BOOT_LINE = '__oh_t=$(builtin trap -p DEBUG); builtin trap - DEBUG; builtin source "${__oh_boot#* * * * }"'


def _header(**values: str) -> str:
    return "".join(f"__oh_{k}={quote(v)}\n" for k, v in values.items())


def trigger(kind: str, run_file: str) -> bytes:
    """The line typed into the pty to run the next command (its echo is removed from every stream)."""
    if kind == "bash":
        # bash's `source` puts back a DEBUG trap it found when it returns, so the user's trap is saved
        # and cleared on the trigger line itself: it cannot fire between the command and our D marker.
        trap = quote(run_file + ".trap")
        return f" builtin trap -p DEBUG >| {trap}; builtin trap - DEBUG; builtin source {quote(run_file)}\n".encode()
    return f" builtin source {quote(run_file)}\n".encode()


def write_files(
    kind: str, directory: str, tag: str, *, nonce: str, cmd_fd: int, snapshot: str, user_rc: bool
) -> tuple[list[str], list[str], dict[str, str]]:
    """Write one shell's init and run files into ``directory`` (private, 0700).

    Returns (argv tail after the shell's path, files to remove when the shell ends, environment
    additions). ``run-<tag>`` is the file the trigger line sources."""
    run_file = os.path.join(directory, f"run-{tag}")
    files = [run_file, run_file + ".trap"]
    env: dict[str, str] = {}
    if kind == "zsh":
        zdot = os.path.join(directory, f"zdot-{tag}")
        os.mkdir(zdot, 0o700)
        head = _header(n=nonce, fd=str(cmd_fd), run=run_file, snap=snapshot, zdot=zdot)
        rcs = {".zshenv": script("zshenv.zsh"), ".zprofile": script("zprofile.zsh"), ".zshrc": head + script("oh.zsh")}
        for name, text in rcs.items():
            _write(os.path.join(zdot, name), text)
            files.append(os.path.join(zdot, name))
        files.append(zdot)
        env["ZDOTDIR"] = zdot
        args = ["-i"]
        run_text = script("run.zsh")
    else:
        init = os.path.join(directory, f"init-{tag}")
        head = _header(
            n=nonce,
            **{"in": str(cmd_fd)},
            run=run_file,
            snap=snapshot,
            dbgf=run_file + ".trap",
            init=init,
            bootpc=BOOT_LINE,
            user_rc="1" if user_rc else "",
        )
        _write(init, head + script("oh.bash"))
        files.append(init)
        args = ["--noprofile", "--rcfile", init, "-i"]
        run_text = script("run.bash")
    _write(run_file, run_text)
    return args, files, env


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as f:
        f.write(text)
