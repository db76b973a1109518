"""``oh config list|get|set|unset|path|edit``."""

from __future__ import annotations

import os
import shlex
import subprocess
from typing import Callable

import typer

from ._common import ERROR, USAGE, complete_keys, die
from ._io import Streams

app = typer.Typer(
    help="Show and change settings (config.toml). Precedence: flags > env OH_<KEY> > config.toml > defaults.",
    epilog="Exit codes: 0 ok · 1 failed (e.g. cannot write the file) · 2 unknown key, bad value or bad config file.",
    no_args_is_help=True,
)


def _allowed_hint(s, key: str, message: str) -> str | None:
    """ "Allowed: …" for a bad value, unless the message already says what is allowed ("must be …")."""
    name = key.replace("-", "_").lower()
    if name not in s.KEYS or " must be " in message or "KIND: PATTERN" in message:
        return None
    return f"Allowed: {s.KEYS[name].allowed}."


def _settings_module():
    from ..config import settings

    return settings


@app.command("list")
def list_(
    show_origin: bool = typer.Option(
        False, "--show-origin", help="Say where each value comes from (env, file, default)."
    ),
    json_: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Every setting with its effective value."""
    raise typer.Exit(run_list(Streams.system(), show_origin=show_origin, json_=json_))


def run_list(io: Streams, *, show_origin: bool = False, json_: bool = False) -> int:
    """``oh config list``'s behaviour."""
    s = _settings_module()
    from ._common import load_settings

    resolved = load_settings()
    if json_:
        io.json(
            {
                name: ({"value": r.value, "origin": r.origin, "source": r.detail or None} if show_origin else r.value)
                for name, r in resolved.items()
            }
        )
        return 0
    width = max(len(n) for n in s.KEYS)
    for name, r in resolved.items():
        line = f"{name:<{width}}  {s.display(r.value)}"
        if show_origin:
            line += f"    ({r.origin}{': ' + r.detail if r.detail else ''})"
        io.print(line)
    return 0


@app.command()
def get(key: str = typer.Argument(..., help="Setting name.", autocompletion=complete_keys)) -> None:
    """Print one setting's effective value."""
    raise typer.Exit(run_get(Streams.system(), key=key))


def run_get(io: Streams, *, key: str) -> int:
    """``oh config get``'s behaviour (``oh.commands.quick`` runs it without typer)."""
    from .quick import config_get

    return config_get(io, key=key)


# ignore_unknown_options: a negative VALUE (`oh config set port -1`) is a value to validate, not an option.
@app.command("set", context_settings={"ignore_unknown_options": True})
def set_(
    key: str = typer.Argument(..., help="Setting name.", autocompletion=complete_keys),
    value: str = typer.Argument(..., help="New value (validated)."),
) -> None:
    """Validate and store a setting in config.toml."""
    raise typer.Exit(run_set(Streams.system(), key=key, value=value))


def run_set(io: Streams, *, key: str, value: str) -> int:
    """``oh config set``'s behaviour."""
    s = _settings_module()
    try:
        k = s.key(key)
        parsed = s.parse_value(k.name, value)
    except s.SettingError as exc:
        die(str(exc), USAGE, _allowed_hint(s, key, str(exc)))
    s.read_file()  # a config.toml that cannot be read or parsed: its own error, not the key's allowed values
    path = s.set_in_file(k.name, parsed)
    io.print(f"{k.name} = {s.display(parsed)}  ({path})")
    if os.environ.get(k.env):
        io.note(f"note: {k.env} is set in the environment and overrides this value.")
    _tell_running(io, k.name)
    return 0


def _tell_running(io: Streams, name: str) -> None:
    """A changed setting and the backends already running (issue 41: it silently waited for a restart). Consent
    applies live; every other setting at the next start, which is said with how to restart."""
    from .. import sessions
    from ..launcher import consent

    running = sessions.list_sessions()
    if not running:
        return
    if name in consent.LIVE_KEYS:
        for session, problem in consent.apply_live(running, name):
            where = f"{session.instance_id} ({session.workspace})"
            if problem is None:
                io.note(f"applied now to the running backend {where}.")
            else:
                io.note(f"not applied to the running backend {where}: {problem}")
        return
    for session in running:
        io.note(
            f"the running backend {session.instance_id} ({session.workspace}) keeps its current {name} until it "
            f"restarts: `oh stop {session.instance_id}`, then `oh start`."
        )


@app.command()
def unset(key: str = typer.Argument(..., help="Setting name.", autocompletion=complete_keys)) -> None:
    """Remove a setting from config.toml (back to the default)."""
    raise typer.Exit(run_unset(Streams.system(), key=key))


def run_unset(io: Streams, *, key: str) -> int:
    """``oh config unset``'s behaviour."""
    s = _settings_module()
    name = key.strip().lower().replace("-", "_")
    try:
        data = s.read_file()
    except s.SettingError as exc:
        die(str(exc), USAGE)
    if name not in data:
        if name not in s.KEYS:
            die(f"unknown setting {key!r}.{s.suggest(key)}", USAGE)
        io.print(f"{name} is not set in the file (effective: default)")
        return 0
    path = s.unset_in_file(name)
    default = s.display(s.KEYS[name].default) if name in s.KEYS else "-"
    io.print(f"{name} unset ({path}); default: {default}")
    if name in s.KEYS:
        _tell_running(io, name)
    return 0


@app.command("add")
def add(
    key: str = typer.Argument(
        ...,
        help="A list setting (consent_allow, consent_ask, consent_deny, allowed_roots).",
        autocompletion=complete_keys,
    ),
    value: str = typer.Argument(..., help="The item to add, e.g. 'run: npm test *'."),
) -> None:
    """Add one item to a list setting in config.toml (e.g. a consent rule)."""
    raise typer.Exit(run_edit_list(Streams.system(), key=key, value=value, remove=False))


@app.command("remove")
def remove(
    key: str = typer.Argument(
        ...,
        help="A list setting (consent_allow, consent_ask, consent_deny, allowed_roots).",
        autocompletion=complete_keys,
    ),
    value: str = typer.Argument(..., help="The item to remove, as `oh config get KEY` shows it."),
) -> None:
    """Remove one item from a list setting in config.toml (e.g. an "always allow" rule)."""
    raise typer.Exit(run_edit_list(Streams.system(), key=key, value=value, remove=True))


def run_edit_list(io: Streams, *, key: str, value: str, remove: bool) -> int:
    """``oh config add|remove``'s behaviour: one item of a list setting, the rest of the file untouched."""
    s = _settings_module()
    try:
        k = s.key(key)
        if not isinstance(k.default, list):
            die(f"{k.name} is not a list setting; use `oh config set {k.name} VALUE`.", USAGE)
        (item,) = s.parse_value(k.name, [value]) or [""]
        current = list(s.parse_value(k.name, s.read_file().get(k.name, [])))
    except s.ConfigFileError:
        raise  # the file's own error (unreadable, bad TOML): the key's allowed values would not help
    except s.SettingError as exc:
        die(str(exc), USAGE, _allowed_hint(s, key, str(exc)))
    except ValueError:
        die(f"give one item to {'remove' if remove else 'add'}.", USAGE)
    if remove:
        if item not in current:
            die(f"{item!r} is not in {k.name} in the file.", ERROR, f"`oh config get {k.name}` lists it.")
        current.remove(item)
    elif item not in current:
        current.append(item)
    path = s.set_in_file(k.name, current)
    io.print(f"{k.name} = {s.display(current)}  ({path})")
    if os.environ.get(k.env):
        io.note(f"note: {k.env} is set in the environment and overrides this value.")
    return 0


@app.command()
def path() -> None:
    """Print the config file's path (it may not exist yet)."""
    raise typer.Exit(run_path(Streams.system()))


def run_path(io: Streams) -> int:
    """``oh config path``'s behaviour."""
    from ..config import paths

    io.print(str(paths.config_file()))
    return 0


@app.command()
def edit() -> None:
    """Open config.toml in $VISUAL / $EDITOR, then validate it."""
    raise typer.Exit(run_edit(Streams.system()))


def _editor_argv() -> tuple[str, list[str]]:
    """Which variable names the user's editor ($VISUAL, else $EDITOR) and its argv; dies saying what to set."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        die(
            "neither $VISUAL nor $EDITOR is set.",
            USAGE,
            "Set one (e.g. `export EDITOR=nano`) or use `oh config set KEY VALUE`.",
        )
    which = "$VISUAL" if os.environ.get("VISUAL") else "$EDITOR"
    try:
        argv = shlex.split(editor)
    except ValueError as exc:
        argv = []
        die(
            f"{which} ({editor!r}) cannot be split into a command: {exc}.",
            USAGE,
            "Fix its quoting, e.g. `export EDITOR='code --wait'`.",
        )
    if not argv:
        die(
            f"{which} is empty.",
            USAGE,
            "Set it to an editor (e.g. `export EDITOR=nano`) or use `oh config set KEY VALUE`.",
        )
    return which, argv


def run_edit(
    io: Streams, *, call_editor: Callable[[list[str]], int] = subprocess.call, ask: Callable[[str], bool] | None = None
) -> int:
    """``oh config edit``'s behaviour; ``call_editor`` runs the editor's argv and returns its status;
    ``ask`` answers "edit again?" (default: a prompt when stdin is a terminal, else no).

    The editor works on a copy (``config.edit.toml``, 0600, next to config.toml); config.toml is
    replaced only by a copy that validates, so a broken edit never takes effect (as ``visudo``). A
    rejected edit is kept in ``config.rejected.toml`` and named."""
    s = _settings_module()
    from ..config import paths

    which, argv = _editor_argv()
    target = paths.config_file()
    original = (
        target.read_text(encoding="utf-8") if target.exists() else "# oh settings: see `oh config list --show-origin`\n"
    )
    work = target.with_name("config.edit.toml")
    rejected = target.with_name("config.rejected.toml")
    start = original
    if rejected.is_file():  # the last edit was not valid: go on from the user's text, not from scratch
        start = rejected.read_text(encoding="utf-8", errors="replace")
        io.note(f"going on with your last edit, which was not valid ({rejected}).")
    paths.write_private_file(work, start)
    if ask is None:
        ask = _ask_tty(io)
    try:
        while True:
            try:
                rc = call_editor([*argv, str(work)])
            except OSError as exc:  # not installed (`code --wait` without `code`), not executable
                die(
                    f"cannot run the editor {argv[0]!r} ({which}): {exc.strerror or exc}; {target} is unchanged.",
                    ERROR,
                    (
                        f"Set {which} to an installed editor (e.g. `export EDITOR=nano`), or use `oh config set "
                        "KEY VALUE`."
                    ),
                )
            if rc != 0:
                die(f"the editor exited with status {rc}; {target} is unchanged.")
            edited = work.read_text(encoding="utf-8", errors="replace")
            # The problems are in the user's edit, not in config.toml (unchanged until the edit is valid).
            source = f"your edit of {target.name}"
            try:
                problems = [
                    p.split(" Fix it with `oh config set ")[0] for p in s.validate_table(s.read_file(work), source)
                ]
            except s.SettingError as exc:
                problems = [str(exc).replace(str(work), source).replace(" Fix it with `oh config edit`.", "")]
            if not problems:
                break
            for p in problems:
                io.note(p)
            if not ask("Edit again? [Y/n] "):
                paths.write_private_file(rejected, edited)
                io.note(f"{target} is unchanged; your edit is kept in {rejected}.")
                io.hint(
                    f"Fix it there and copy it over (`cp {rejected} {target}`), or run `oh config edit` "
                    "again: it goes on from your edit."
                )
                return USAGE
    finally:
        work.unlink(missing_ok=True)
    if edited != original or target.exists():
        paths.write_private_file(target, edited)
    rejected.unlink(missing_ok=True)  # now in the valid config.toml
    io.print(f"{target}: valid")
    return 0


def _ask_tty(io: Streams) -> Callable[[str], bool]:
    def ask(question: str) -> bool:
        if not (hasattr(io.inp, "isatty") and io.inp.isatty()):
            return False
        io.err.write(question)
        io.err.flush()
        answer = io.inp.readline()
        return answer.strip().lower() in ("", "y", "yes")

    return ask
