"""Background jobs and file checks from the shell: ``oh jobs``, ``oh stat``, and the helpers behind
``oh run --background`` and ``oh write --append/--create`` (docs/protocol.md §3.8-§3.9).

Jobs live in the backend's shared ``cli`` shell (the one every ``oh run`` uses), so a job started by
one ``oh`` process is seen by the next. Exit codes: ``oh jobs wait`` exits with the job's own exit
code; 124 when --timeout passed first; 130 for a cancelled job; 6 for a LOST job (its editor went
away) or an unknown id; the usual codes otherwise (`oh --help`).
"""

from __future__ import annotations

import time
from typing import Optional

import typer

from ._common import ACTION_FAILED, AUTH, TIMEOUT, UNREACHABLE, USAGE, OhError, complete_instances, die, pick_session
from ._io import Streams

CLI_SHELL = "cli"  # SPEC-wave2 A: the shell every `oh run` shares
WAIT_CHUNK = 200.0  # one `job wait` request at most this long (the backend caps a wait at 240 s)
CANCELLED_EXIT = 130

app = typer.Typer(
    help="Background jobs started with `oh run --background`: list them, wait for one, read its output, cancel it.",
    invoke_without_command=True,
    no_args_is_help=False,
)

_WORKSPACE = typer.Option(None, "--workspace", "-C", help="Use the backend serving this directory (default: cwd).")
_INSTANCE = typer.Option(None, "--instance", "-i", help="Use this backend (instance id or unique prefix).", autocompletion=complete_instances)
_JSON = typer.Option(False, "--json", help="Print JSON (the job records / the observation).")
_JOB_ID = typer.Argument(..., help="The job id.")


def _call(workspace: Optional[str], instance: Optional[str], fn):
    """Connect to the backend's `cli` shell, run ``fn(client, session)``, map failures to exit codes."""
    from ..client import AuthError, ConnectionLost, OhClientError, SyncClient

    session = pick_session(workspace, instance)
    try:
        with SyncClient.connect(session.url, session.token, name="oh-cli", shell=CLI_SHELL) as client:
            return fn(client, session)
    except AuthError as exc:
        die(str(exc), AUTH, "The token in the session file is stale: retry, or see `oh doctor`.")
    except ConnectionLost as exc:
        die(str(exc), UNREACHABLE, "Check the backend with `oh status`; see its log with `oh logs`.")
    except OhClientError as exc:
        die(str(exc), UNREACHABLE, "Check the backend with `oh status`.")


def _refused(obs) -> None:
    """An error observation ends the command: its message on stderr, exit 6 (or 2 for BAD_REQUEST)."""
    if obs.kind == "error":
        raise OhError(f"{obs.error_id}: {obs.content}", USAGE if obs.error_id == "BAD_REQUEST" else ACTION_FAILED)


def _answer(workspace: Optional[str], instance: Optional[str], fn):
    """``_call``, then ``_refused``: the observation of a request that must not be an error."""
    obs = _call(workspace, instance, fn)
    _refused(obs)
    return obs


def _age(seconds) -> str:
    from ..text.fmt import fmt_duration

    return fmt_duration(seconds) if isinstance(seconds, (int, float)) else "-"


def _tail(io: Streams, content: str) -> None:
    """A job's output text, ending with a newline."""
    io.out.write(content if content.endswith("\n") else content + "\n")
    io.out.flush()


@app.callback()
def jobs(
    ctx: typer.Context,
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """List the jobs of the `oh run` shell (running, and finished within job_retention)."""
    if ctx.invoked_subcommand is not None:
        return
    raise typer.Exit(run_jobs(Streams.system(), workspace=workspace, instance=instance, json_=json_))


def run_jobs(io: Streams, *, workspace: Optional[str] = None, instance: Optional[str] = None, json_: bool = False) -> int:
    """``oh jobs``'s behaviour: the table of jobs (or their records as JSON)."""
    obs = _answer(workspace, instance, lambda c, s: c.jobs())
    records = obs.extras.get("jobs") or []
    if json_:
        io.json(records)
        return 0
    if not records:
        io.print("no jobs (start one with `oh run --background -- CMD`)")
        return 0
    rows = [("ID", "STATE", "EXIT", "TIME", "COMMAND")]
    for r in records:
        code = r.get("exit_code")
        kind = "" if r.get("background", True) else " (fg)"
        rows.append((str(r.get("job_id")), str(r.get("state")) + kind, "-" if code is None else str(code), _age(r.get("duration_s")), " ".join(str(r.get("command", "")).split())[:80]))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        io.print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4])
    return 0


def _exit_for(record: dict) -> int:
    state = record.get("state")
    if state in ("SUCCEEDED", "FAILED"):
        code = record.get("exit_code")
        return code if isinstance(code, int) and 0 <= code <= 255 else 1
    if state == "CANCELLED":
        return CANCELLED_EXIT
    if state == "RUNNING":
        return TIMEOUT
    return ACTION_FAILED  # LOST


@app.command()
def wait(
    job_id: str = typer.Argument(..., help="The job id (from `oh run --background` or `oh jobs`)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", "-t", min=0.0, help="Give up after S seconds (exit 124); the job keeps running."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the output tail."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Wait until a job ends; print its output tail; exit with its exit code."""
    raise typer.Exit(run_wait(Streams.system(), job_id=job_id, timeout=timeout, quiet=quiet, workspace=workspace, instance=instance, json_=json_))


def run_wait(io: Streams, *, job_id: str, timeout: Optional[float] = None, quiet: bool = False, workspace: Optional[str] = None,
             instance: Optional[str] = None, json_: bool = False) -> int:
    """``oh jobs wait``'s behaviour: the job's exit code (124 still running, 130 cancelled, 6 lost)."""

    def call(client, session):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            chunk = WAIT_CHUNK if deadline is None else max(min(WAIT_CHUNK, deadline - time.monotonic()), 0.001)
            obs = client.job_wait(job_id, timeout=chunk)
            if obs.kind != "job" or obs.job.get("state") != "RUNNING":
                return obs
            if deadline is not None and time.monotonic() >= deadline:
                return obs

    obs = _answer(workspace, instance, call)
    record = obs.job
    if json_:
        io.json(dict(obs))
    elif not quiet and obs.content:
        _tail(io, obs.content)
    state = record.get("state")
    if not json_:
        if state == "RUNNING":
            io.note(f"job {job_id} is still running after {timeout:g} s (it keeps running; `oh jobs cancel {job_id}` stops it).")
        elif state == "LOST":
            io.note(f"job {job_id} is LOST: the editor that ran it went away.")
        elif state == "CANCELLED":
            io.note(f"job {job_id} was cancelled.")
    return _exit_for(record)


@app.command()
def output(
    job_id: str = typer.Argument(..., help="The job id."),
    offset: int = typer.Option(0, "--offset", min=0, help="Start at this byte of the job's output (see next_offset in --json)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new output until the job ends."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Print a job's output (all of it that is kept, or from --offset); -f follows it."""
    raise typer.Exit(run_output(Streams.system(), job_id=job_id, offset=offset, follow=follow, workspace=workspace, instance=instance, json_=json_))


def run_output(io: Streams, *, job_id: str, offset: int = 0, follow: bool = False, workspace: Optional[str] = None,
               instance: Optional[str] = None, json_: bool = False) -> int:
    """``oh jobs output``'s behaviour."""

    def call(client, session):
        pos = offset
        while True:
            obs = client.job_output(job_id, offset=pos, wait=5.0 if follow else None)
            _refused(obs)
            ex = obs.extras
            if json_:
                io.json(dict(obs))
            else:
                dropped = ex.get("offset", pos) - pos
                if dropped > 0:
                    io.note(f"{dropped} bytes before offset {ex.get('offset')} are no longer kept (the job's output spool is bounded).")
                if obs.content:
                    io.out.write(obs.content)
                    io.out.flush()
            pos = ex.get("next_offset", pos)
            if not follow or ex.get("eof") or obs.job.get("state") != "RUNNING" and pos >= ex.get("size", pos):
                return obs

    _call(workspace, instance, call)
    return 0


def run_cancel(io: Streams, *, job_id: str, workspace: Optional[str] = None, instance: Optional[str] = None, json_: bool = False) -> int:
    """``oh jobs cancel``'s behaviour."""
    obs = _answer(workspace, instance, lambda c, s: c.job_cancel(job_id))
    if json_:
        io.json(dict(obs))
    else:
        io.print(obs.content)
    return 0


def run_poll(io: Streams, *, job_id: str, workspace: Optional[str] = None, instance: Optional[str] = None, json_: bool = False) -> int:
    """``oh jobs poll``'s behaviour: the state line on stderr, the output tail on stdout."""
    obs = _answer(workspace, instance, lambda c, s: c.job_poll(job_id))
    if json_:
        io.json(dict(obs))
        return 0
    r = obs.job
    code = r.get("exit_code")
    io.err.write(f"{r.get('job_id')}  {r.get('state')}{'' if code is None else f' (exit {code})'}  {_age(r.get('duration_s'))}  {r.get('command')}\n")
    io.err.flush()
    if obs.content:
        _tail(io, obs.content)
    return 0


def _job_command(run, doc: str):
    """A typer command ``oh jobs <verb> JOB_ID`` calling ``run`` (cancel and poll take the same options)."""

    def command(job_id: str = _JOB_ID, workspace: Optional[str] = _WORKSPACE, instance: Optional[str] = _INSTANCE, json_: bool = _JSON) -> None:
        raise typer.Exit(run(Streams.system(), job_id=job_id, workspace=workspace, instance=instance, json_=json_))

    command.__doc__ = doc
    return command


app.command("cancel")(_job_command(run_cancel, "Stop a job: C-c first, then its whole process group after 2 s."))
app.command("poll")(_job_command(run_poll, "Show a job's state and the tail of its output, without waiting."))


# ---------------------------------------------------------------- used by `oh run` / `oh write` / `oh stat`
def _where(session, path: Optional[str]) -> str:
    """An absolute path as `oh run` sends it (relative ones from your cwd inside the workspace)."""
    from dataclasses import asdict

    from ..fastpath import verbs

    s = asdict(session)
    return verbs.resolve(path, s) if path else verbs.base_dir(s)


def start_background(io: Streams, command: list, cwd: Optional[str], workspace: Optional[str], instance: Optional[str], *, force: bool = False, json_: bool = False) -> int:
    """``oh run --background -- CMD``: start the job in the `cli` shell; print its id; exit 0."""
    from ..fastpath.verbs import shell_quote

    line = command[0] if len(command) == 1 else " ".join(shell_quote(w) for w in command)
    if not line.strip():
        die("give the command to start (e.g. `oh run --background -- npm run dev`).", USAGE)
    obs = _answer(workspace, instance, lambda c, s: c.run_background(line, cwd=_where(s, cwd), force=force))
    if json_:
        io.json(dict(obs))
        return 0
    jid = obs.job_id
    if jid is None:
        die("the backend did not start a background job (its editor may not support jobs).", ACTION_FAILED)
    io.print(jid)
    suffix = ((obs.extras.get("metadata") or {}).get("suffix") or "").strip()
    if "already running" in suffix:
        io.note(f"{jid} was already running with the same command, directory and environment (use --force for another).")
    return 0


def write_mode(io: Streams, path: str, content: str, mode: str, workspace: Optional[str], instance: Optional[str], *, json_: bool = False, quiet: bool = False) -> int:
    """``oh write --append/--create``: write through the backend in that mode; say what happened."""
    obs = _answer(workspace, instance, lambda c, s: c.write_file(_where(s, path), content, mode=mode))
    if json_:
        io.json(dict(obs))
    elif quiet:
        pass
    elif obs.content:  # create found the file there: nothing was changed
        io.print(obs.content)
    else:
        verb = "appended" if mode == "append" else "created"
        io.print(f"{verb} {len(content.encode('utf-8'))} bytes {'to' if mode == 'append' else 'as'} {obs.extras.get('path') or path}")
    return 0


def stat(
    path: str = typer.Argument(..., help="File or directory to check (relative to your cwd inside the workspace)."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Whether a path exists, and its type, size, mtime, mode and text encoding. Exit 1 if it does not exist."""
    raise typer.Exit(run_stat(Streams.system(), path=path, workspace=workspace, instance=instance, json_=json_))


def run_stat(io: Streams, *, path: str, workspace: Optional[str] = None, instance: Optional[str] = None, json_: bool = False) -> int:
    """``oh stat``'s behaviour: 0 when the path exists, 1 when it does not."""
    obs = _answer(workspace, instance, lambda c, s: c.stat(_where(s, path)))
    ex = obs.extras
    if json_:
        io.json({k: v for k, v in ex.items()})
    else:
        io.print(obs.content)
    return 0 if ex.get("exists") else 1
