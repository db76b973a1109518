"""The fast entry for the verbs an agent calls in a loop: ``run read write edit status``.

``oh.cli.main`` calls ``main(argv)`` first. It returns an exit code when it handled the command,
or None to hand over to the full typer CLI (help, completion, usage errors, no or unusual
sessions, every other command). Measured in benchmarks/cli_startup.py; why it exists:
docs/benchmarks.md, "CLI as an agent's shell". ``OH_NO_FASTPATH=1`` turns it off (tests compare
both paths).
"""

from __future__ import annotations

import os
import sys

VERBS = ("run", "read", "write", "edit", "status")


def main(argv: list[str]) -> int | None:
    if argv in (["--version"], ["-V"]) and not os.environ.get("_OH_COMPLETE"):
        from .. import __version__

        sys.stdout.write(f"oh {__version__}\n")
        return 0
    if not argv or argv[0] not in VERBS or os.environ.get("_OH_COMPLETE") or os.environ.get("OH_NO_FASTPATH"):
        return None
    from .argv import parse

    parsed = parse(argv[0], argv[1:])
    if parsed is None:
        return None
    opts, pos = parsed
    try:
        if argv[0] == "status":
            from .status import status

            return status(json_=bool(opts.get("json_")))
        return _verb(argv[0], opts, pos)
    except KeyboardInterrupt:
        sys.stderr.write("oh: interrupted.\n")
        return 130
    except BrokenPipeError:
        # The reader went away (`oh read f | head`): end quietly, as cat does.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 1


def _verb(verb: str, opts: dict, pos: list[str]) -> int | None:
    from . import discover, verbs

    try:
        os.getcwd()
    except OSError:  # deleted under us: neither path could resolve anything relative to it
        verbs.err("the current directory no longer exists: `cd` to an existing one first.")
        return 1
    session = discover.pick(opts.get("workspace"), opts.get("instance"))
    if session is None:
        return None
    common = {"json_": bool(opts.get("json_")), "quiet": bool(opts.get("quiet"))}
    try:
        if verb == "run":
            return verbs.run(session, command=pos, mode=run_mode(opts), text=opts.get("input"), timeout=opts.get("timeout"),
                             cwd=opts.get("cwd"), max_output=opts.get("max_output"), **common)
        if verb == "read":
            return verbs.read(session, path=pos[0], start=opts.get("start", 0), end=opts.get("end", -1), **common)
        if verb == "write":
            return verbs.write(session, path=pos[0], content=verbs.content_or_stdin(opts.get("content")), **common)
        mode = edit_mode(opts)
        return verbs.edit(session, path=pos[0], mode=mode, create=opts.get("create"), replace=opts.get("replace"),
                          insert=opts.get("insert"), **common)
    except verbs.Failed as exc:
        verbs.err(str(exc))
        if exc.hint:
            sys.stderr.write(f"    {exc.hint}\n")
        return exc.code


def run_mode(opts: dict) -> str:
    """Which kind of `oh run`; several at once is a usage error (raised by verbs.pick_mode)."""
    from .verbs import pick_mode

    return pick_mode(
        ("input", "input" in opts), ("interrupt", bool(opts.get("interrupt"))), ("wait", bool(opts.get("wait"))), ("reset", bool(opts.get("reset"))),
        default="command", what="--input, --interrupt, --wait, --reset",
    )


def edit_mode(opts: dict) -> str:
    from .verbs import pick_mode

    return pick_mode(*((m, m in opts) for m in ("create", "replace", "insert", "undo", "view")), what="--create, --replace, --insert, --undo, --view")
