"""``oh completions show SHELL`` / ``oh completions install [SHELL]``.

The scripts are typer's: they call ``oh`` back with ``_OH_COMPLETE=complete_<shell>``, so
completion of runtimes, config keys and instance ids is dynamic. The committed copies in
``completions/`` are regenerated with ``python -m oh.commands.completions --write`` (or
``scripts/gen-completions``); a test fails when they are stale.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Optional

import typer

from ._common import USAGE, complete_shells, die
from ._io import Streams

PROG = "oh"
COMPLETE_VAR = "_OH_COMPLETE"
SHELLS = ("bash", "zsh", "fish", "powershell")
FILES = {"bash": "oh.bash", "zsh": "_oh", "fish": "oh.fish", "powershell": "oh.ps1"}
MARK = "# oh shell completion (added by `oh completions install`)"

app = typer.Typer(
    help="Shell completion for bash, zsh, fish and PowerShell.",
    no_args_is_help=True,
    epilog="Exit codes: 0 ok · 2 unknown or undetectable shell · 1 cannot write a file.",
)


def script(shell: str) -> str:
    from typer._completion_shared import get_completion_script

    text = get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell)
    if shell == "zsh":
        text = _zsh_first_call(text)
    return text + "\n"


_ZSH_REGISTER = "compdef _oh_completion oh"
# zsh autoloads `_oh` from fpath: the file's body runs as the function `_oh` on the first TAB. Typer's
# script only defines and registers `_oh_completion` there, so that first TAB completed nothing (issue 18
# item 13). Run it when called as the completion function; register it when the file is sourced.
_ZSH_DISPATCH = """if [[ "${funcstack[1]}" == _oh ]]; then
  _oh_completion "$@"
else
  compdef _oh_completion oh
fi"""


def _zsh_first_call(text: str) -> str:
    if _ZSH_REGISTER not in text:
        return text  # a typer whose script already differs: keep it as it is
    return text.replace(_ZSH_REGISTER, _ZSH_DISPATCH, 1)


def _norm(shell: str) -> str:
    s = shell.strip().lower()
    s = {"pwsh": "powershell", "ps": "powershell"}.get(s, s)
    if s not in SHELLS:
        die(f"unsupported shell {shell!r}: one of {', '.join(SHELLS)}.", USAGE)
    return s


def detect_shell() -> str | None:
    name = os.path.basename(os.environ.get("SHELL", "")).lower()
    name = {"pwsh": "powershell", "pwsh.exe": "powershell", "powershell.exe": "powershell"}.get(name, name)
    if name in SHELLS:
        return name
    if name:
        return None  # $SHELL names a shell we do not support: do not guess another one
    try:  # $SHELL unset (e.g. some Windows shells): look at the parent processes
        import shellingham

        found = shellingham.detect_shell()[0].lower()
        found = {"pwsh": "powershell"}.get(found, found)
        return found if found in SHELLS else None
    except Exception:  # noqa: BLE001
        return None


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _xdg(var: str, default: str) -> Path:
    return Path(os.environ.get(var) or (_home() / default))


def _append_once(rc: Path, block: str, changes: list[str]) -> None:
    text = rc.read_text(encoding="utf-8") if rc.exists() else ""
    if MARK in text:
        return
    rc.parent.mkdir(parents=True, exist_ok=True)
    with open(rc, "a", encoding="utf-8") as f:
        f.write(("\n" if text and not text.endswith("\n") else "") + f"\n{MARK}\n{block}\n")
    changes.append(
        f"appended to {rc}: {block.strip().splitlines()[0]}" + (" …" if len(block.strip().splitlines()) > 1 else "")
    )


# Where bash-completion (v2) lives: Debian/Ubuntu/Fedora, a /usr/local build, Homebrew on Apple silicon and Intel.
BASH_COMPLETION = (
    "/usr/share/bash-completion/bash_completion",
    "/etc/bash_completion",
    "/usr/local/share/bash-completion/bash_completion",
    "/opt/homebrew/etc/profile.d/bash_completion.sh",
    "/usr/local/etc/profile.d/bash_completion.sh",
)


def bash_completion_found() -> bool:
    """bash-completion is what loads ~/.local/share/bash-completion/completions/oh in a new shell."""
    return any(os.path.isfile(p) for p in BASH_COMPLETION)


def install_for(shell: str) -> dict:
    """Write the script to the shell's standard per-user location; returns what changed."""
    changes: list[str] = []
    notes: list[str] = []
    if shell == "bash":
        target = _xdg("XDG_DATA_HOME", ".local/share") / "bash-completion" / "completions" / "oh"
        if bash_completion_found():
            notes.append("bash-completion loads it automatically in new shells.")
        else:  # nothing would load it (issue 41): ~/.bashrc sources it, and says how to get the rest
            _append_once(
                _home() / ".bashrc", f"[ -f {shlex.quote(str(target))} ] && . {shlex.quote(str(target))}", changes
            )
            notes.append(
                "bash-completion is not installed, so ~/.bashrc loads oh's completion itself; for other programs' "
                "completions install it (`sudo apt install bash-completion`, `brew install bash-completion@2`)."
            )
    elif shell == "zsh":
        zdot = Path(os.environ.get("ZDOTDIR") or _home())
        target = zdot / ".zfunc" / "_oh"
        _append_once(zdot / ".zshrc", f"fpath=({zdot / '.zfunc'} $fpath)\nautoload -Uz compinit && compinit", changes)
    elif shell == "fish":
        target = _xdg("XDG_CONFIG_HOME", ".config") / "fish" / "completions" / "oh.fish"
        notes.append("fish loads it automatically in new shells.")
    else:
        base = (
            (_home() / "Documents" / "PowerShell")
            if os.name == "nt"
            else (_xdg("XDG_CONFIG_HOME", ".config") / "powershell")
        )
        target = base / "oh-completion.ps1"
        _append_once(base / "Microsoft.PowerShell_profile.ps1", f". '{target}'", changes)
    target.parent.mkdir(parents=True, exist_ok=True)
    new = script(shell)
    old = target.read_text(encoding="utf-8") if target.exists() else None
    if old != new:
        target.write_text(new, encoding="utf-8")
        changes.insert(0, f"{'updated' if old is not None else 'wrote'} {target}")
    return {"shell": shell, "path": str(target), "changes": changes, "notes": notes}


@app.command()
def show(
    shell: str = typer.Argument(..., help="bash, zsh, fish or powershell.", autocompletion=complete_shells),
) -> None:
    """Print the completion script for SHELL (e.g. `oh completions show bash > ~/.oh.bash`)."""
    raise typer.Exit(run_show(Streams.system(), shell=shell))


def run_show(io: Streams, *, shell: str) -> int:
    """``oh completions show``'s behaviour."""
    io.out.write(script(_norm(shell)))
    io.out.flush()
    return 0


@app.command()
def install(
    shell: Optional[str] = typer.Argument(
        None, help="bash, zsh, fish or powershell (default: detected from $SHELL).", autocompletion=complete_shells
    ),
    json_: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Install completion for SHELL in its standard per-user location and say what changed."""
    raise typer.Exit(run_install(Streams.system(), shell=shell, json_=json_))


def run_install(io: Streams, *, shell: Optional[str] = None, json_: bool = False) -> int:
    """``oh completions install``'s behaviour (the shell from $SHELL when not given)."""
    if shell is None:
        shell = detect_shell()
        if shell is None:
            die(
                f"cannot detect your shell from $SHELL ({os.environ.get('SHELL') or 'unset'}).",
                USAGE,
                "Name it: `oh completions install bash|zsh|fish|powershell`.",
            )
    try:
        result = install_for(_norm(shell))
    except OSError as exc:
        die(f"cannot install completion: {exc}")
    if json_:
        io.json(result)
        return 0
    if result["changes"]:
        for c in result["changes"]:
            io.print(c)
    else:
        io.print(f"{result['path']} is already up to date; nothing changed")
    for n in result["notes"]:
        io.print(n)
    io.print("Open a new shell to use it.")
    return 0


def write_committed(directory: Path | None = None) -> list[Path]:
    """Regenerate completions/ (the committed scripts)."""
    directory = directory or Path(__file__).resolve().parents[3] / "completions"
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for shell, name in FILES.items():
        (directory / name).write_text(script(shell), encoding="utf-8")
        written.append(directory / name)
    return written


if __name__ == "__main__":
    if "--write" in sys.argv:
        for p in write_committed():
            print(p)
    else:
        print("usage: python -m oh.commands.completions --write", file=sys.stderr)
        sys.exit(2)
