"""The ``oh`` command line: registers the command groups, nothing else.

Each command lives in ``oh.commands.<group>`` and imports its heavy dependencies (rich's live
view, websockets, keyring, psutil) inside the function, so ``oh --help`` / ``oh status`` stay fast.
"""

from __future__ import annotations

import os

import typer

from . import __version__
from .commands import agent, attach, completions, config, doctor, logs, mcp, start, status, stop, token
from .commands._common import EXIT_CODES_HELP


def _skip_pydantic_for_absent_flags() -> None:
    """Speed shim (measured: ~60 ms of every run; benchmarks/cli_startup.py).

    typer (0.2x) coerces every parameter value through pydantic, except bool flags whose value is
    already a bool. Its own ``--help`` flag arrives as ``None`` when absent, so each invocation
    imports pydantic just to coerce ``None`` to ``None``. We skip exactly that case (bool
    annotation, value None) and keep typer's required-check and callback. If typer's internals
    change shape, this does nothing and everything still works, only slower.
    """
    core = getattr(typer, "core", None)
    cls = getattr(core, "_TyperParameter", None)
    if cls is None or getattr(cls, "_oh_fast_flags", False) or not hasattr(cls, "process_value"):
        return
    original = cls.process_value

    def process_value(self, ctx, value):
        desc = getattr(self, "type_descriptor", None)
        if value is None and desc is not None and getattr(desc, "annotation", None) is bool and not self.required:
            return self.callback(ctx, self, value) if self.callback is not None else value
        return original(self, ctx, value)

    cls.process_value = process_value
    cls._oh_fast_flags = True


_skip_pydantic_for_absent_flags()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"oh {__version__}")
        raise typer.Exit()


app = typer.Typer(
    name="oh",
    help="oh: run a coding agent's actions (run, read, write, edit) inside VS Code or on this machine, and watch them live.",
    epilog=EXIT_CODES_HELP + " Settings: `oh config list --show-origin`. Files: $OH_HOME when set.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True),
) -> None:
    """oh: run a coding agent's actions inside VS Code or on this machine, and watch them live."""


app.command(epilog=start.EPILOG)(start.start)
app.command()(stop.stop)
app.command(epilog=status.EPILOG)(status.status)
app.command(epilog=agent.EPILOG)(agent.run)
app.command(epilog=agent.EPILOG)(agent.read)
app.command(epilog=agent.EPILOG)(agent.write)
app.command(epilog=agent.EPILOG)(agent.edit)
app.command()(attach.attach)
app.command()(logs.logs)
app.command()(doctor.doctor)
app.add_typer(token.app, name="token")
app.add_typer(config.app, name="config")
app.add_typer(completions.app, name="completions")
app.add_typer(mcp.app, name="mcp")


def main() -> None:
    if os.environ.get("_OH_COMPLETE"):
        # add_completion=False (we ship `oh completions`) skips typer's registration of its
        # shell classes; the scripts still call back with _OH_COMPLETE=complete_<shell>.
        from typer._completion_classes import completion_init

        completion_init()
    from .config.paths import UnsafePath

    try:
        app(prog_name="oh")
    except UnsafePath as exc:  # another user could control an oh directory or file: refuse, say how to fix
        import sys

        print(f"oh: refusing to use {exc.path}: {exc.problem}.\n    fix: {exc.fix}", file=sys.stderr)
        sys.exit(1)
