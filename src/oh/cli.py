"""The ``oh`` command line: registers the command groups, nothing else.

Each command lives in ``oh.commands.<group>`` and imports its heavy dependencies (rich's live
view, websockets, keyring, psutil) inside the function, so ``oh --help`` / ``oh status`` stay fast.

``main`` first offers the command line to ``oh.fastpath`` (the agent verbs and ``status`` without
typer: an agent calls them in a loop); the typer app below is built only when that declines.
Importing this module therefore loads nothing heavy; ``oh.cli.app`` builds the app on first use.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: `oh --help` and `oh config get` start without importing typing
if TYPE_CHECKING:
    from typing import NoReturn


def __getattr__(name: str):
    if name == "app":
        return _app()
    raise AttributeError(name)


_built: list = []


def _app():
    if not _built:
        _built.append(_build())
    return _built[0]


_HELP = (
    "oh: run a coding agent's actions (run, read, write, edit) inside VS Code or on this machine, and watch them live."
)


def _build():
    # Lazy on purpose (startup time): typer, rich and the command modules load only when the fast
    # path declined the command line; `oh run`/`oh status` on the fast path never pay for them.
    import typer

    from . import __version__
    from .commands import agent, attach, completions, config, doctor, logs, mcp, start, status, stop, token, watch
    from .commands._common import EXIT_CODES_HELP
    from .commands._typer_fixes import install

    install()

    def _version(value: bool) -> None:
        if value:
            typer.echo(f"oh {__version__}")
            raise typer.Exit()

    app = typer.Typer(
        name="oh",
        help=_HELP,
        epilog=EXIT_CODES_HELP + " Settings: `oh config list --show-origin`. Files: $OH_HOME when set.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True
        ),
    ) -> None:
        """oh: run a coding agent's actions inside VS Code or on this machine, and watch them live."""

    app.command(epilog=start.EPILOG)(start.start)
    app.command(epilog=watch.EPILOG)(watch.watch)
    app.command()(stop.stop)
    app.command(epilog=status.EPILOG)(status.status)
    app.command(epilog=agent.EPILOG)(agent.run)
    app.command(epilog=agent.FILE_EPILOG)(agent.read)
    app.command(epilog=agent.FILE_EPILOG)(agent.write)
    app.command(epilog=agent.FILE_EPILOG)(agent.edit)
    from .commands import editorinfo

    editorinfo.register(app)  # diagnostics, open, editors, symbols, definition, references
    app.command()(attach.attach)
    app.command()(logs.logs)
    app.command()(doctor.doctor)
    app.add_typer(token.app, name="token")
    app.add_typer(config.app, name="config")
    app.add_typer(completions.app, name="completions")
    app.add_typer(mcp.app, name="mcp")
    from .commands import jobs as jobs_cmd  # oh jobs, oh stat: background jobs and file checks

    app.add_typer(jobs_cmd.app, name="jobs")
    app.command()(jobs_cmd.stat)
    _register_more(app)
    return app


def _register_more(app) -> None:
    """The commands added by later issues (review, consent, history, vscode, share, ensure, claims, worktrees)."""
    from .commands import review as review_cmd  # proposal (review) mode

    app.add_typer(review_cmd.app, name="review")
    from .commands import approvals as approvals_cmd  # issue 19: consent

    app.command()(approvals_cmd.approvals)
    app.command()(approvals_cmd.approve)
    app.command()(approvals_cmd.reject)
    from .commands import history as history_cmd  # issue 29: history and undo

    app.command()(history_cmd.history)
    app.command()(history_cmd.diff)
    app.command()(history_cmd.undo)
    from .commands import vscode as vscode_cmd  # issue 20: the bundled extension in every VS Code

    app.add_typer(vscode_cmd.app, name="vscode")
    from .commands import share as share_cmd  # issue 28: agents elsewhere

    app.add_typer(share_cmd.app, name="share")
    from .commands import ensure as ensure_cmd  # issue 22: workspace bootstrap

    app.command(epilog=ensure_cmd.EPILOG)(ensure_cmd.ensure)
    from .commands import claims as claims_cmd  # issue 37: several agents

    app.add_typer(claims_cmd.app, name="claims")
    from .commands import worktrees as worktrees_cmd  # issue 37: a worktree per agent

    app.command()(worktrees_cmd.worktrees)
    app.command()(worktrees_cmd.merge)


def main() -> None:
    try:
        _main()
    except KeyboardInterrupt:
        # Ctrl-C before a command took charge of it (while oh loads or parses): nothing was started, so a quiet
        # exit with the status shells give an interrupted program. A command that starts something stops it on
        # Ctrl-C itself (`oh start`, issue 41), never leaving it behind.
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(_pipe_closed())


def _pipe_closed() -> int:
    """The reader of our output went away (`oh approvals | head`): end quietly, as a program killed by SIGPIPE
    would (status 141), with no traceback; stdout goes to /dev/null so the interpreter's last flush is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 128 + 13  # SIGPIPE


def _main() -> None:
    from .fastpath.dispatch import main as fast  # lazy: `oh.cli` is imported by completions and tests too

    code = fast(sys.argv[1:])
    if code is None:  # commands people type that need no typer either (`oh config get KEY`)
        from .commands.quick import main as quick

        code = quick(sys.argv[1:])
    if code is not None:
        sys.stdout.flush()
        sys.exit(code)
    if os.environ.get("_OH_COMPLETE"):
        # add_completion=False (we ship `oh completions`) skips typer's registration of its
        # shell classes; the scripts still call back with _OH_COMPLETE=complete_<shell>.
        from typer._completion_classes import completion_init

        completion_init()
    if not sys.argv[1:] and not os.environ.get("_OH_COMPLETE"):
        _usage()
    from .commands._io import failure

    # The one place where a failure becomes output and an exit code (commands and services raise;
    # `commands._io.failure` says which exceptions are failures and how they read).
    try:
        _app()(prog_name="oh")
    except Exception as exc:  # noqa: BLE001 - anything that is not a failure is re-raised: a bug shows its traceback
        found = failure(exc)
        if found is None:
            raise
        _fail(*found)


def _usage() -> NoReturn:
    """Bare `oh`: the help on stderr and exit status 2 (a usage error), whatever click's version does
    with ``no_args_is_help`` (click < 8.2 printed the help on stdout and exited 0)."""
    import contextlib

    with contextlib.redirect_stdout(sys.stderr):
        try:
            _app()(["--help"], prog_name="oh")
        except SystemExit:
            pass
    sys.stderr.flush()
    sys.exit(2)


def _fail(message: str, code: int, hint: str | None = None) -> NoReturn:
    sys.stdout.flush()
    from .fastpath.streams import Streams  # wraps at word boundaries on a terminal

    io = Streams.system()
    io.note(message)
    if hint:
        io.hint(hint)
    sys.exit(code)
