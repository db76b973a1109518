"""``oh config list|get|set|unset|path|edit``."""

from __future__ import annotations

import os
import shlex
import subprocess
import typer

from ._common import USAGE, complete_keys, die, err, print_json

app = typer.Typer(
    help="Show and change settings (config.toml). Precedence: flags > env OH_<KEY> > config.toml > defaults.",
    epilog="Exit codes: 0 ok · 1 failed (e.g. cannot write the file) · 2 unknown key, bad value or bad config file.",
    no_args_is_help=True,
)


def _settings_module():
    from ..config import settings

    return settings


@app.command("list")
def list_(
    show_origin: bool = typer.Option(False, "--show-origin", help="Say where each value comes from (env, file, default)."),
    json_: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Every setting with its effective value."""
    s = _settings_module()
    from ._common import load_settings

    resolved = load_settings()
    if json_:
        print_json({name: ({"value": r.value, "origin": r.origin, "source": r.detail or None} if show_origin else r.value) for name, r in resolved.items()})
        return
    width = max(len(n) for n in s.KEYS)
    for name, r in resolved.items():
        line = f"{name:<{width}}  {s.display(r.value)}"
        if show_origin:
            line += f"    ({r.origin}{': ' + r.detail if r.detail else ''})"
        typer.echo(line)


@app.command()
def get(key: str = typer.Argument(..., help="Setting name.", autocompletion=complete_keys)) -> None:
    """Print one setting's effective value."""
    s = _settings_module()
    from ._common import load_settings

    try:
        name = s.key(key).name
    except s.SettingError as exc:
        die(str(exc), USAGE)
    typer.echo(s.display(load_settings().get(name)))


@app.command("set")
def set_(
    key: str = typer.Argument(..., help="Setting name.", autocompletion=complete_keys),
    value: str = typer.Argument(..., help="New value (validated)."),
) -> None:
    """Validate and store a setting in config.toml."""
    s = _settings_module()
    try:
        k = s.key(key)
        parsed = s.parse_value(k.name, value)
        s.read_file()
    except s.SettingError as exc:
        die(str(exc), USAGE, f"Allowed: {s.KEYS[s.key(key).name].allowed}." if key.replace("-", "_").lower() in s.KEYS else None)
    path = s.set_in_file(k.name, parsed)
    typer.echo(f"{k.name} = {s.display(parsed)}  ({path})")
    if os.environ.get(k.env):
        err(f"note: {k.env} is set in the environment and overrides this value.")


@app.command()
def unset(key: str = typer.Argument(..., help="Setting name.", autocompletion=complete_keys)) -> None:
    """Remove a setting from config.toml (back to the default)."""
    s = _settings_module()
    name = key.strip().lower().replace("-", "_")
    try:
        data = s.read_file()
    except s.SettingError as exc:
        die(str(exc), USAGE)
    if name not in data:
        if name not in s.KEYS:
            die(f"unknown setting {key!r}.{s.suggest(key)}", USAGE)
        typer.echo(f"{name} is not set in the file (effective: default)")
        return
    path = s.unset_in_file(name)
    default = s.display(s.KEYS[name].default) if name in s.KEYS else "-"
    typer.echo(f"{name} unset ({path}); default: {default}")


@app.command()
def path() -> None:
    """Print the config file's path (it may not exist yet)."""
    from ..config import paths

    typer.echo(str(paths.config_file()))


@app.command()
def edit() -> None:
    """Open config.toml in $VISUAL / $EDITOR, then validate it."""
    s = _settings_module()
    from ..config import paths

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        die("neither $VISUAL nor $EDITOR is set.", USAGE, "Set one (e.g. `export EDITOR=nano`) or use `oh config set KEY VALUE`.")
    target = paths.config_file()
    if not target.exists():
        paths.write_private_file(target, "# oh settings: see `oh config list --show-origin`\n")
    rc = subprocess.call([*shlex.split(editor), str(target)])
    if rc != 0:
        die(f"the editor exited with status {rc}; the file was not validated.")
    try:
        problems = s.validate_table(s.read_file(target), str(target))
    except s.SettingError as exc:
        problems = [str(exc)]
    if problems:
        for p in problems:
            err(p)
        raise typer.Exit(USAGE)
    typer.echo(f"{target}: valid")

