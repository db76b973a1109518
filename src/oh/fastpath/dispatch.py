"""The fast entry for the verbs an agent calls in a loop: ``run read write edit status stat jobs``
(with ``run --background``, ``write --append/--create`` and ``jobs wait|output|cancel|poll``).

``oh.cli.main`` calls ``main(argv)`` first. It returns an exit code when it handled the command,
or None to hand over to the full typer CLI (help, completion, usage errors, no or unusual
sessions, every other command). Measured in benchmarks/cli_startup.py; why it exists:
docs/benchmarks.md, "CLI as an agent's shell". ``OH_NO_FASTPATH=1`` turns it off (tests compare
both paths).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # the fast path does not import typing (startup time); annotations only
if TYPE_CHECKING:
    from typing import Any

VERBS = ("run", "read", "write", "edit", "status", "stat", "jobs")


def main(argv: list[str]) -> int | None:
    if argv in (["--version"], ["-V"]) and not os.environ.get("_OH_COMPLETE"):
        from .. import __version__

        sys.stdout.write(f"oh {__version__}\n")
        return 0
    if os.environ.get("OH_NO_FASTPATH"):
        return None
    if os.environ.get("_OH_COMPLETE"):  # TAB in bash without typer where the answer is fixed, else typer
        from .complete import complete_bash

        return complete_bash()
    if argv in ([], ["--help"], ["-h"]):  # the top-level help, drawn from a cached table (oh.fastpath.help)
        from .help import main as help_main

        return help_main(argv)
    if argv[0] not in VERBS:
        return None
    from .argv import parse, split_verb

    verb, rest = split_verb(argv)
    parsed = parse(verb, rest)
    if parsed is None:
        return None
    opts, pos = parsed
    from .streams import Streams

    io = Streams.system()
    try:
        if verb == "status":
            from .status import status

            return status(io, json_=bool(opts.get("json_")))
        return _verb(io, verb, opts, pos)
    except KeyboardInterrupt:
        io.note("interrupted.")
        return 130
    except BrokenPipeError:
        # The reader went away (`oh read f | head`): end quietly, as cat does.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 1


def _verb(io, verb: str, opts: dict, pos: list[str]) -> int | None:
    from . import discover, verbs
    from .exits import OhError

    try:
        os.getcwd()
    except OSError:  # deleted under us: neither path could resolve anything relative to it
        io.note("the current directory no longer exists: `cd` to an existing one first.")
        return 1
    session = discover.pick(opts.get("workspace"), opts.get("instance"))
    if session is None:
        return None
    common: dict[str, Any] = {"json_": bool(opts.get("json_")), "quiet": bool(opts.get("quiet"))}
    # several agents (§3.18): a write/edit's precondition
    guard: dict[str, Any] = (
        {"if_version": opts.get("if_version"), "force": bool(opts.get("force"))} if verb in ("write", "edit") else {}
    )
    try:
        if verb == "stat" or verb.startswith("jobs") or verb == "run" and opts.get("background"):
            return _job_verb(io, verb, session, opts, pos)
        if verb == "write" and (opts.get("append") or opts.get("create")):
            from . import jobs

            content = verbs.content_or_stdin(io, opts.get("content"))  # read first, as the typer command does
            mode = verbs.pick_mode(
                ("append", bool(opts.get("append"))), ("create", bool(opts.get("create"))), what="--append, --create"
            )
            return jobs.write_mode(io, session, path=pos[0], content=content, mode=mode, **guard, **common)
        if verb == "run":
            return verbs.run(
                io,
                session,
                command=pos,
                mode=run_mode(opts),
                text=opts.get("input"),
                timeout=opts.get("timeout"),
                cwd=opts.get("cwd"),
                max_output=opts.get("max_output"),
                unsandboxed=opts.get("unsandboxed"),
                network=opts.get("network"),
                **common,
            )
        if verb == "read":
            return verbs.read(io, session, path=pos[0], start=opts.get("start", 1), end=opts.get("end", -1), **common)
        if verb == "write":
            return verbs.write(
                io, session, path=pos[0], content=verbs.content_or_stdin(io, opts.get("content")), **guard, **common
            )
        mode = edit_mode(opts)
        return verbs.edit(
            io,
            session,
            path=pos[0],
            mode=mode,
            create=opts.get("create"),
            replace=opts.get("replace"),
            insert=opts.get("insert"),
            **guard,
            **common,
        )
    except OhError as exc:
        io.note(exc.message)
        if exc.hint:
            io.hint(exc.hint)
        return exc.code


# `oh run` options that a background job does not take (refused, never silently dropped)
_NOT_WITH_BACKGROUND = (
    ("timeout", "--timeout"),
    ("input", "--input"),
    ("interrupt", "--interrupt"),
    ("wait", "--wait"),
    ("reset", "--reset"),
    ("max_output", "--max-output"),
)


def _job_verb(io, verb: str, session: dict, opts: dict, pos: list[str]) -> int:
    """The job verbs and `oh stat` (oh.fastpath.jobs); raises OhError like the others."""
    from . import jobs

    json_ = bool(opts.get("json_"))
    if verb == "run":  # with --background: the other run options are refused (as in the typer command)
        also = tuple(
            flag for key, flag in _NOT_WITH_BACKGROUND if opts.get(key) is not None and opts.get(key) is not False
        )
        return jobs.start_background(
            io,
            session,
            command=pos,
            cwd=opts.get("cwd"),
            force=bool(opts.get("force")),
            json_=json_,
            also=also,
            unsandboxed=opts.get("unsandboxed"),
            network=opts.get("network"),
        )
    if verb == "stat":
        return jobs.stat(io, session, path=pos[0], json_=json_)
    if verb == "jobs":
        return jobs.jobs_list(io, session, json_=json_)
    if verb == "jobs wait":
        return jobs.jobs_wait(
            io, session, job_id=pos[0], timeout=opts.get("timeout"), quiet=bool(opts.get("quiet")), json_=json_
        )
    if verb == "jobs output":
        return jobs.jobs_output(
            io, session, job_id=pos[0], offset=opts.get("offset", 0), follow=bool(opts.get("follow")), json_=json_
        )
    if verb == "jobs cancel":
        return jobs.jobs_cancel(io, session, job_id=pos[0], json_=json_)
    return jobs.jobs_poll(io, session, job_id=pos[0], json_=json_)


def run_mode(opts: dict) -> str:
    """Which kind of `oh run`; several at once is a usage error (raised by verbs.pick_mode)."""
    from .verbs import pick_mode

    return pick_mode(
        ("input", "input" in opts),
        ("interrupt", bool(opts.get("interrupt"))),
        ("wait", bool(opts.get("wait"))),
        ("reset", bool(opts.get("reset"))),
        default="command",
        what="--input, --interrupt, --wait, --reset",
    )


def edit_mode(opts: dict) -> str:
    from .verbs import pick_mode

    return pick_mode(
        *((m, m in opts) for m in ("create", "replace", "insert", "undo", "view")),
        what="--create, --replace, --insert, --undo, --view",
    )
