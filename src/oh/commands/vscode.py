"""``oh vscode install|uninstall|status``: the extension that ships with this oh, in every VS Code.

Thin: finding the editors' CLIs, their argv and the bundled ``.vsix`` are ``oh.launcher.editorcli``.
"""

from __future__ import annotations

from typing import Callable, Optional

import typer

from ._common import ERROR, NO_EDITOR, USAGE, die
from ._io import Streams

EXIT_HELP = (
    "Exit codes: 0 done (every chosen editor has the result) · 1 an editor's CLI failed (its error is shown) · "
    "2 bad flag · 7 no editor CLI found (code, code-insiders, cursor, windsurf, codium, code-server; or give --editor)."
)

app = typer.Typer(
    help=(
        "The oh extension in VS Code and its forks (Cursor, Windsurf, VSCodium, Insiders, code-server): install, "
        "remove, show."
    ),
    epilog=EXIT_HELP,
    no_args_is_help=True,
)

_EDITOR_HELP = (
    "An editor's command-line tool (path or name), instead of every one found on PATH; repeatable. "
    "E.g. --editor cursor, --editor ~/bin/code-server."
)
_EXTDIR_HELP = (
    "Passed to the editor CLI as --extensions-dir (a scratch or portable install; code-server's own directory). "
    "oh remembers it, so `oh start` and `oh doctor` find the extension there too."
)
_UDD_HELP = "Passed to the editor CLI as --user-data-dir."


def _complete_editors(incomplete: str):
    from ..launcher.editorcli import KINDS

    return [k.cli for k in KINDS if k.cli.startswith(incomplete)]


@app.command()
def install(
    editor: Optional[list[str]] = typer.Option(
        None, "--editor", "-e", help=_EDITOR_HELP, autocompletion=_complete_editors
    ),
    extensions_dir: Optional[str] = typer.Option(None, "--extensions-dir", help=_EXTDIR_HELP),
    user_data_dir: Optional[str] = typer.Option(None, "--user-data-dir", help=_UDD_HELP),
    dry_run: bool = typer.Option(False, "--dry-run", "-n", help="Show what would run, change nothing."),
    force: bool = typer.Option(False, "--force", help="Install even where the same version is already installed."),
    vsix: Optional[str] = typer.Option(
        None, "--vsix", help="Install this .vsix instead of the one that ships with oh."
    ),
) -> None:
    """Install the extension that ships with this oh into every VS Code-family editor found (or --editor).

    Idempotent: an editor that already has this version is left alone. Then reload the editor's window
    (Command Palette: Developer: Reload Window) if it was open, and `oh start --runtime vscode`.
    """
    raise typer.Exit(
        run_vscode_install(
            Streams.system(),
            editors=editor or [],
            extensions_dir=extensions_dir,
            user_data_dir=user_data_dir,
            dry_run=dry_run,
            force=force,
            vsix=vsix,
        )
    )


@app.command()
def uninstall(
    editor: Optional[list[str]] = typer.Option(
        None, "--editor", "-e", help=_EDITOR_HELP, autocompletion=_complete_editors
    ),
    extensions_dir: Optional[str] = typer.Option(None, "--extensions-dir", help=_EXTDIR_HELP),
    user_data_dir: Optional[str] = typer.Option(None, "--user-data-dir", help=_UDD_HELP),
    dry_run: bool = typer.Option(False, "--dry-run", "-n", help="Show what would run, change nothing."),
) -> None:
    """Remove the oh extension from every editor found (or --editor). Idempotent."""
    raise typer.Exit(
        run_vscode_uninstall(
            Streams.system(),
            editors=editor or [],
            extensions_dir=extensions_dir,
            user_data_dir=user_data_dir,
            dry_run=dry_run,
        )
    )


@app.command()
def status(
    editor: Optional[list[str]] = typer.Option(
        None, "--editor", "-e", help=_EDITOR_HELP, autocompletion=_complete_editors
    ),
    extensions_dir: Optional[str] = typer.Option(None, "--extensions-dir", help=_EXTDIR_HELP),
    user_data_dir: Optional[str] = typer.Option(None, "--user-data-dir", help=_UDD_HELP),
    json_: bool = typer.Option(False, "--json", help='Machine-readable: {"bundled": {...}, "editors": [...]}.'),
) -> None:
    """Which editor has which version of the oh extension, next to the one this oh ships."""
    raise typer.Exit(
        run_vscode_status(
            Streams.system(),
            editors=editor or [],
            extensions_dir=extensions_dir,
            user_data_dir=user_data_dir,
            json_=json_,
        )
    )


# ---------------------------------------------------------------------------- run_*
def _editors(names: list[str], find: Callable[[], list]) -> list:
    from ..launcher import editorcli

    if not names:
        found = find()
        if not found:
            die(
                "no VS Code-family editor CLI found: none of "
                + ", ".join(k.cli for k in editorcli.KINDS)
                + " is on PATH "
                "or in its usual install location.",
                NO_EDITOR,
                (
                    "Give its path: `oh vscode install --editor /path/to/code`. In VS Code: Command Palette → "
                    "'Shell Command: Install 'code' command in PATH'. Over Remote-SSH/WSL/containers, run oh in "
                    "that window's terminal."
                ),
            )
        return found
    out = []
    for name in names:
        try:
            out.append(editorcli.editor_at(name))
        except FileNotFoundError:
            die(
                f"--editor {name}: no such executable.",
                USAGE,
                "Give the path of the editor's CLI, e.g. --editor /usr/bin/code.",
            )
    return out


def _bundled(vsix: str | None, build: Streams | None = None) -> tuple[str, str]:
    """The .vsix to install and its version. ``build``: in a checkout that never packaged the extension,
    package it now with npm (saying so on that stream's stderr) instead of failing (issue 30 item 7)."""
    from pathlib import Path

    from ..launcher import editorcli

    try:
        try:
            path = Path(vsix).resolve() if vsix else editorcli.bundled_vsix()
        except editorcli.NoVsix as exc:
            if build is None or exc.checkout is None:
                raise
            path = editorcli.build_checkout_vsix(exc.checkout, build.note)
        return str(path), editorcli.vsix_version(path)
    except editorcli.NoVsix as exc:
        die(str(exc), ERROR)
    except ValueError as exc:
        die(str(exc), USAGE if vsix else ERROR)
    raise AssertionError  # unreachable: die raises


def _shell(argv: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)


def run_vscode_install(
    io: Streams,
    *,
    editors: list[str] = [],  # noqa: B006 - never mutated
    extensions_dir: str | None = None,
    user_data_dir: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    vsix: str | None = None,
    find: Callable[[], list] | None = None,
) -> int:
    from ..launcher import editorcli

    chosen = _editors(editors, find or editorcli.find_editors)  # first: no editor, no minute of npm for nothing
    path, version = _bundled(vsix, build=None if dry_run else io)
    states = editorcli.query_all(chosen, extensions_dir, user_data_dir)
    failed = installed = 0
    for st in states:
        ed = st.editor
        argv = editorcli.install_argv(ed, path, extensions_dir, user_data_dir)
        if st.version == version and not force:
            if not dry_run:  # installed before oh kept this record: `oh start` should know it too
                editorcli.remember_install(ed, extensions_dir, user_data_dir, keep=True)
            io.print(f"✓ {ed.label}: already has {editorcli.EXTENSION_ID} {version}")
            continue
        before = f"{st.version}" if st.version else ("unknown: " + st.error if st.error else "not installed")
        if dry_run:
            io.print(f"· {ed.label}: would install {version} (now: {before}): {_shell(argv)}")
            continue
        r = editorcli.run_cli(argv, editorcli.INSTALL_TIMEOUT)
        after = editorcli.query(ed, extensions_dir, user_data_dir) if r.ok else None
        if r.ok and after is not None and after.version == version:
            editorcli.remember_install(
                ed, extensions_dir, user_data_dir, keep=True
            )  # `oh start`/`oh doctor` look there
            io.print(f"✓ {ed.label}: installed {editorcli.EXTENSION_ID} {version} (was: {before})")
            installed += 1
            continue
        failed += 1
        why = (
            r.why()
            if not r.ok
            else f"the CLI reported success but lists {after.version if after and after.version else 'no oh extension'}"
        )
        io.print(f"✗ {ed.label}: install failed ({why})")
        io.print(f"    run it yourself to see the whole error: {_shell(argv)}")
    if failed:
        return ERROR
    if installed:
        io.print(
            "Reload any open window (Command Palette → Developer: Reload Window); then `oh start --runtime "
            "vscode` in your project."
        )
    return 0


def run_vscode_uninstall(
    io: Streams,
    *,
    editors: list[str] = [],  # noqa: B006 - never mutated
    extensions_dir: str | None = None,
    user_data_dir: str | None = None,
    dry_run: bool = False,
    find: Callable[[], list] | None = None,
) -> int:
    from ..launcher import editorcli

    chosen = _editors(editors, find or editorcli.find_editors)
    failed = 0
    for st in editorcli.query_all(chosen, extensions_dir, user_data_dir):
        ed = st.editor
        argv = editorcli.uninstall_argv(ed, extensions_dir, user_data_dir)
        if st.version is None and st.error is None:
            io.print(f"✓ {ed.label}: {editorcli.EXTENSION_ID} is not installed")
            continue
        if dry_run:
            io.print(f"· {ed.label}: would remove {st.version or 'it'}: {_shell(argv)}")
            continue
        r = editorcli.run_cli(argv, editorcli.INSTALL_TIMEOUT)
        if r.ok:
            editorcli.remember_install(ed, extensions_dir, user_data_dir, keep=False)
            io.print(f"✓ {ed.label}: removed {editorcli.EXTENSION_ID} {st.version or ''}".rstrip())
        else:
            failed += 1
            io.print(f"✗ {ed.label}: uninstall failed ({r.why()})")
            io.print(f"    run it yourself to see the whole error: {_shell(argv)}")
    return ERROR if failed else 0


def run_vscode_status(
    io: Streams,
    *,
    editors: list[str] = [],  # noqa: B006 - never mutated
    extensions_dir: str | None = None,
    user_data_dir: str | None = None,
    json_: bool = False,
    find: Callable[[], list] | None = None,
) -> int:
    from ..fastpath.exits import OhError
    from ..launcher import editorcli

    try:
        path, version = _bundled(None)
        bundled: dict[str, str | None] = {"path": path, "version": version}
    except OhError as exc:  # no bundled .vsix: status still shows the editors
        bundled = {"path": None, "version": None, "error": exc.message}
    chosen = _editors(editors, find or editorcli.find_editors)
    # without directories, also where `oh vscode install --extensions-dir/--user-data-dir` put it, as `oh start`
    # and `oh doctor` look (issue 42: status said "not installed" right after install said "already has 0.1.0")
    ask_remembered = extensions_dir is None and user_data_dir is None
    states = editorcli.query_all(chosen, extensions_dir, user_data_dir, remembered=ask_remembered)
    rows = []
    for st in states:
        d = st.describe()
        if st.error:
            d["state"] = "unknown"
        elif st.version is None:
            d["state"] = "not installed"
        elif bundled["version"] and st.version != bundled["version"]:
            d["state"] = "other version"
        else:
            d["state"] = "current"
        rows.append(d)
    if json_:
        io.json({"extension": editorcli.EXTENSION_ID, "bundled": bundled, "editors": rows})
        return 0
    io.print(f"oh ships {editorcli.EXTENSION_ID} {bundled['version'] or '(none: ' + str(bundled.get('error')) + ')'}")
    marks = {"current": "✓", "other version": "!", "not installed": "✗", "unknown": "?"}
    for d in rows:
        what = {
            "current": f"{d['installed_version']}",
            "other version": f"{d['installed_version']} (differs from oh's: `oh vscode install`)",
            "not installed": "not installed (`oh vscode install`)",
            "unknown": f"unknown ({d['error']})",
        }[d["state"]]
        io.print(f"{marks[d['state']]} {d['editor']} ({d['cli']}): {what}")
    return 0
