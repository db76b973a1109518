"""Background jobs and file checks from the shell: ``oh jobs``, ``oh stat``, and the entries behind
``oh run --background`` and ``oh write --append/--create`` (docs/protocol.md §3.8-§3.9).

The work is done by ``oh.fastpath.jobs`` (the one implementation), which the fast entry (no typer)
also calls: these typer commands serve ``--help``, completion and the command lines the fast entry
declines. Each command is parse -> ``run_<verb>(streams, ...)`` -> exit code, testable in-process.
Exit codes: ``oh jobs wait`` exits with the job's own exit code; 124 when --timeout passed first;
130 for a cancelled job; 6 for a LOST job (its editor went away) or an unknown id; the usual codes
otherwise (`oh --help`).
"""

from __future__ import annotations

from typing import Callable, Optional

import typer

from ..fastpath import jobs as fastjobs  # the job verbs' one implementation (stdlib only)
from ._common import pick_session, target_options
from ._io import Streams

app = typer.Typer(
    help="Background jobs started with `oh run --background`: list them, wait for one, read its output, cancel it.",
    invoke_without_command=True,
    no_args_is_help=False,
)

_WORKSPACE, _INSTANCE = target_options()
_JSON = typer.Option(False, "--json", help="Print JSON (the job records / the observation).")
_JOB_ID = typer.Argument(..., help="The job id.")


_GROUP_OPTIONS: dict = {}  # the options given to `oh jobs` itself, before a subcommand


def _group(workspace: Optional[str], instance: Optional[str], json_: bool) -> dict:
    """A subcommand's --workspace/--instance/--json, falling back to those given to `oh jobs` itself."""
    group = _GROUP_OPTIONS
    return {
        "workspace": workspace or group.get("workspace"),
        "instance": instance or group.get("instance"),
        "json_": json_ or bool(group.get("json_")),
    }


def _run(io: Streams, verb: Callable[..., int], workspace: Optional[str], instance: Optional[str], **kw) -> int:
    """Run ``verb`` (a function of oh.fastpath.jobs) on the session the full CLI picked, with ``io`` as its streams."""

    session = pick_session(workspace, instance).to_dict()
    return verb(io, session, **kw)


@app.callback()
def jobs(
    ctx: typer.Context,
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """List the jobs of the `oh run` shell (running, and finished within job_retention)."""
    if ctx.invoked_subcommand is not None:
        # `oh jobs -C DIR wait ID`: the group's options are the subcommand's defaults (kept here, not in
        # ctx.obj: the typer shim calls commands outside click's current context).
        _GROUP_OPTIONS.update(workspace=workspace, instance=instance, json_=json_)
        return
    raise typer.Exit(run_jobs(Streams.system(), workspace=workspace, instance=instance, json_=json_))


def run_jobs(
    io: Streams, *, workspace: Optional[str] = None, instance: Optional[str] = None, json_: bool = False
) -> int:
    """``oh jobs``'s behaviour: the table of jobs (or their records as JSON)."""
    return _run(io, fastjobs.jobs_list, workspace, instance, json_=json_)


@app.command()
def wait(
    job_id: str = typer.Argument(..., help="The job id (from `oh run --background` or `oh jobs`)."),
    timeout: Optional[float] = typer.Option(
        None, "--timeout", "-t", min=0.0, help="Give up after S seconds (exit 124); the job keeps running."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the output tail."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Wait until a job ends; print its output tail; exit with its exit code."""
    raise typer.Exit(
        run_wait(Streams.system(), job_id=job_id, timeout=timeout, quiet=quiet, **_group(workspace, instance, json_))
    )


def run_wait(
    io: Streams,
    *,
    job_id: str,
    timeout: Optional[float] = None,
    quiet: bool = False,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
) -> int:
    """``oh jobs wait``'s behaviour: the job's exit code (124 still running, 130 cancelled, 6 lost)."""
    return _run(io, fastjobs.jobs_wait, workspace, instance, job_id=job_id, timeout=timeout, quiet=quiet, json_=json_)


@app.command()
def output(
    job_id: str = _JOB_ID,
    offset: int = typer.Option(
        0, "--offset", min=0, help="Start at this byte of the job's output (see next_offset in --json)."
    ),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new output until the job ends."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Print a job's output (all of it that is kept, or from --offset); -f follows it."""
    raise typer.Exit(
        run_output(Streams.system(), job_id=job_id, offset=offset, follow=follow, **_group(workspace, instance, json_))
    )


def run_output(
    io: Streams,
    *,
    job_id: str,
    offset: int = 0,
    follow: bool = False,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
) -> int:
    """``oh jobs output``'s behaviour."""
    return _run(io, fastjobs.jobs_output, workspace, instance, job_id=job_id, offset=offset, follow=follow, json_=json_)


def run_cancel(
    io: Streams, *, job_id: str, workspace: Optional[str] = None, instance: Optional[str] = None, json_: bool = False
) -> int:
    """``oh jobs cancel``'s behaviour."""
    return _run(io, fastjobs.jobs_cancel, workspace, instance, job_id=job_id, json_=json_)


def run_poll(
    io: Streams, *, job_id: str, workspace: Optional[str] = None, instance: Optional[str] = None, json_: bool = False
) -> int:
    """``oh jobs poll``'s behaviour: the state line on stderr, the output tail on stdout."""
    return _run(io, fastjobs.jobs_poll, workspace, instance, job_id=job_id, json_=json_)


def _job_command(run, doc: str):
    """A typer command ``oh jobs <verb> JOB_ID`` calling ``run`` (cancel and poll take the same options)."""

    def command(
        job_id: str = _JOB_ID,
        workspace: Optional[str] = _WORKSPACE,
        instance: Optional[str] = _INSTANCE,
        json_: bool = _JSON,
    ) -> None:
        raise typer.Exit(run(Streams.system(), job_id=job_id, **_group(workspace, instance, json_)))

    command.__doc__ = doc
    return command


app.command("cancel")(_job_command(run_cancel, "Stop a job: C-c first, then its whole process group after 2 s."))
app.command("poll")(_job_command(run_poll, "Show a job's state and the tail of its output, without waiting."))


# ---------------------------------------------------------------- used by `oh run` / `oh write`, and `oh stat`
def start_background(
    io: Streams,
    command: list,
    cwd: Optional[str],
    workspace: Optional[str],
    instance: Optional[str],
    *,
    force: bool = False,
    json_: bool = False,
    also: tuple = (),
    unsandboxed: Optional[str] = None,
    network: Optional[str] = None,
) -> int:
    """``oh run --background -- CMD``: start the job in the `cli` shell; print its id; exit 0 (2 with other run
    options). With ``unsandboxed`` / ``network`` it is asked first and starts only once allowed."""
    return _run(
        io,
        fastjobs.start_background,
        workspace,
        instance,
        command=list(command),
        cwd=cwd,
        force=force,
        json_=json_,
        also=tuple(also),
        unsandboxed=unsandboxed,
        network=network,
    )


def write_mode(
    io: Streams,
    path: str,
    content: str,
    mode: str,
    workspace: Optional[str],
    instance: Optional[str],
    *,
    json_: bool = False,
    quiet: bool = False,
    if_version: Optional[str] = None,
    force: bool = False,
) -> int:
    """``oh write --append/--create``: write through the backend in that mode; say what happened."""
    return _run(
        io,
        fastjobs.write_mode,
        workspace,
        instance,
        path=path,
        content=content,
        mode=mode,
        json_=json_,
        quiet=quiet,
        if_version=if_version,
        force=force,
    )


def stat(
    path: str = typer.Argument(..., help="File or directory to check (relative to your cwd inside the workspace)."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = typer.Option(
        False,
        "--json",
        help="Print the facts as one JSON object (path, exists, type, size, mtime, mode, encoding, mime_type, link).",
    ),
) -> None:
    """Whether a path exists, and its type, size, mtime, mode and text encoding. Exit 1 if it does not exist."""
    raise typer.Exit(run_stat(Streams.system(), path=path, workspace=workspace, instance=instance, json_=json_))


def run_stat(
    io: Streams, *, path: str, workspace: Optional[str] = None, instance: Optional[str] = None, json_: bool = False
) -> int:
    """``oh stat``'s behaviour: 0 when the path exists, 1 when it does not."""
    return _run(io, fastjobs.stat, workspace, instance, path=path, json_=json_)
