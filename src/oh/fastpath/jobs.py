"""The job and file-check verbs' one implementation (docs/protocol.md §3.8-§3.9): ``oh run
--background``, ``oh write --append/--create``, ``oh stat`` and ``oh jobs`` (list, poll, wait, output,
cancel).

Like ``verbs``, both entries call it: the fast dispatcher (no typer) and the typer commands in
``oh.commands.jobs`` / ``oh.commands.agent`` (help, completion, what the fast parser declines). Jobs
live in the backend's shared ``cli`` shell, so a job started by one ``oh`` process is seen by the next.
Exit codes: ``oh jobs wait`` exits with the job's own code; 124 when --timeout passed first; 130 for a
cancelled job; 6 for a LOST job or an unknown id; an error observation otherwise exits as the README's table says
(124 TIMEOUT, 7 NO_EDITOR, 2 BAD_REQUEST, else 6), with `--json` printing it.
"""

from __future__ import annotations

import time

from ..protocol import actions, runtimenames
from .exits import ACTION_FAILED, INTERRUPTED, TIMEOUT, USAGE, OhError
from .streams import Streams
from .verbs import (
    CLI_SHELL,
    NOT_SENT,
    AgentLink,
    Watch,
    _wait_for_editor_note,
    base_dir,
    branch_note,
    check_escalation,
    cli_advice,
    error_exit,
    plural,
    resolve,
    shell_quote,
)

WAIT_CHUNK = 200.0  # one `job wait` request at most this long (the backend caps a wait at 240 s)
CANCELLED_EXIT = 130
_INTERRUPTED = "interrupted (the job keeps running; `oh jobs` lists it)."


def _link(session: dict) -> AgentLink:
    return AgentLink(session, shell=CLI_SHELL, on_interrupt=_INTERRUPTED)


def _ask(io: Streams, session: dict, action: dict, json_: bool = False, new: bool = False) -> dict:
    """``new``: the action starts something (a job, a write): with runtime vscode and no editor connected, say
    at once that it waits for one, and on Ctrl-C that nothing started (it said "the job keeps running")."""
    watch = Watch(io)
    try:
        if new and runtimenames.uses_editor(session.get("runtime")) and _wait_for_editor_note(io, session):
            watch.editor_wait = session
        link = _link(session)
    except KeyboardInterrupt:
        raise OhError(NOT_SENT, INTERRUPTED) from None
    try:
        # A wait for consent or review is said at once (`oh run -b` under --consent: issue 30 #2).
        return _checked(io, link.ask(action, watch=watch), json_)
    finally:
        link.close()


def _checked(io: Streams, obs: dict, json_: bool = False) -> dict:
    """An error observation ends the command: its message on stderr (with ``--json`` the observation on
    stdout too, as every agent verb prints it), and the README's exit code for it: 2 BAD_REQUEST,
    124 TIMEOUT (e.g. a review nobody decided), 7 NO_EDITOR / EDITOR_DISCONNECTED, else 6."""
    if obs.get("observation") == "error":
        eid = (obs.get("extras") or {}).get("error_id") or ""
        if json_:
            io.json(obs)
        hint = (
            "`oh jobs` lists the jobs of the `oh run` shell (jobs of other agents are not shown)."
            if eid == "NO_JOB"
            else None
        )
        raise OhError(f"{eid}: {cli_advice(obs.get('content') or '')}", error_exit(eid), hint)
    return obs


def _age(seconds) -> str:
    from ..text.fmt import fmt_duration

    return fmt_duration(seconds) if isinstance(seconds, (int, float)) else "-"


def _where(session: dict, path: str | None) -> str:
    """An absolute path as `oh run` sends it (relative ones from your cwd inside the workspace)."""
    return resolve(path, session) if path else base_dir(session)


# ---------------------------------------------------------------- `oh run --background`, `oh write`, `oh stat`
def start_background(
    io: Streams,
    session: dict,
    *,
    command: list[str],
    cwd: str | None = None,
    force: bool = False,
    json_: bool = False,
    also: tuple[str, ...] = (),
    unsandboxed: str | None = None,
    network: str | None = None,
) -> int:
    """Start the job in the `cli` shell; print its id; exit 0. ``also``: other `oh run` options given,
    which a job does not take (a --timeout silently dropped would leave a job running that the user
    believed bounded): a usage error naming them. ``unsandboxed`` / ``network``: the reason the job asks to
    run outside the sandbox / with the network (README "Sandbox"): asked first, like a foreground escalation;
    the job starts in a one-shot shell of its own only once allowed (rejected: nothing starts, exit 6)."""
    check_escalation(unsandboxed, network, "command")
    if also:
        raise OhError(
            f"--background does not go with {', '.join(also)}: a job runs until it ends or `oh jobs cancel`. "
            "Bound it inside the command (`timeout 60 CMD`), or run it without --background.",
            USAGE,
        )
    line = command[0] if len(command) == 1 else " ".join(shell_quote(w) for w in command)
    if not line.strip():
        raise OhError("give the command to start (e.g. `oh run --background -- npm run dev`).", USAGE)
    action = actions.run(
        line, background=True, force=force, cwd=_where(session, cwd), unsandboxed=unsandboxed, network=network
    )
    obs = _ask(io, session, action, json_, new=True)
    if json_:
        io.json(obs)
        return 0
    md = (obs.get("extras") or {}).get("metadata") or {}
    jid = md.get("job_id")
    if not isinstance(jid, str):
        raise OhError("the backend did not start a background job (its editor may not support jobs).", ACTION_FAILED)
    io.print(jid)
    said = " ".join(str(md.get("prefix") or "").split())
    if (unsandboxed is not None or network is not None) and said:  # allowed (a refusal raised above): where it runs
        io.note(f"{jid}: {said}")
    if "already running" in (md.get("suffix") or ""):
        io.note(
            f"{jid} was already running with the same command, directory and environment (use --force for another)."
        )
    return 0


def write_mode(
    io: Streams,
    session: dict,
    *,
    path: str,
    content: str,
    mode: str,
    json_: bool = False,
    quiet: bool = False,
    if_version: str | None = None,
    force: bool = False,
) -> int:
    """``oh write --append/--create``: write through the backend in that mode; say what happened."""
    frame = actions.write(_where(session, path), content, mode=mode, if_version=if_version, force=force)
    obs = _ask(io, session, frame, json_, new=True)
    said = obs.get("content") or ""
    note = None if json_ else branch_note(obs)
    if note:  # branch mode's first change: said on stderr, not taken for create's "the file is there"
        io.note(note)
        said = said.split("\n", 1)[1] if "\n" in said else ""
    if json_:
        io.json(obs)
    elif quiet:
        pass
    elif said.strip():  # create found the file there: nothing was changed
        io.print(said)
    else:
        verb = "appended" if mode == "append" else "created"
        size = len(content.encode("utf-8", "surrogatepass"))
        io.print(
            f"{verb} {plural(size, 'byte')} {'to' if mode == 'append' else 'as'} "
            f"{(obs.get('extras') or {}).get('path') or path}"
        )
    return 0


def stat(io: Streams, session: dict, *, path: str, json_: bool = False) -> int:
    """Exit 0 when the path exists, 1 when it does not (a normal answer, not an error)."""
    obs = _ask(io, session, actions.stat(_where(session, path)), json_)
    extras = obs.get("extras") or {}
    if json_:
        io.json(extras)
    else:
        io.print(obs.get("content") or "")
    return 0 if extras.get("exists") else 1


# ---------------------------------------------------------------- `oh jobs ...`
ENSURE_SHELL = "oh-ensure"  # runtimes/ensure.SHELL_KEY: where `oh ensure`'s installs run (protocol §3.14)


def _ensure_jobs(session: dict) -> list:
    """The installs of `oh ensure` (their own shell, so a `job list` in the `oh run` shell misses them);
    they are the user's too (issue 30 #8). Best effort: the list of the `oh run` shell is the answer."""
    try:
        link = AgentLink(session, shell=ENSURE_SHELL)
    except OhError:
        return []
    try:
        obs = link.ask(actions.job("list"))
    except OhError:
        return []
    finally:
        link.close()
    jobs = (obs.get("extras") or {}).get("jobs") if obs.get("observation") == "job" else None
    return [dict(r, shell=ENSURE_SHELL) for r in jobs or [] if isinstance(r, dict)]


def jobs_list(io: Streams, session: dict, *, json_: bool = False) -> int:
    records = _ask(io, session, actions.job("list"), json_).get("extras", {}).get("jobs") or []
    records = records + _ensure_jobs(session)
    if json_:
        io.json(records)
        return 0
    if not records:
        io.print("no jobs (start one with `oh run --background -- CMD`)")
        return 0
    rows = [("ID", "STATE", "EXIT", "TIME", "COMMAND")]
    for r in records:
        code = r.get("exit_code")
        # one parenthesis of labels: "SUCCEEDED (ensure, with the network)" (was "(ensure) (with the network)")
        labels = ["ensure"] if r.get("shell") == ENSURE_SHELL else [] if r.get("background", True) else ["fg"]
        where = {"off": "outside the sandbox", "network": "with the network"}.get(str(r.get("sandbox")))
        labels += [where] if where else []
        kind = f" ({', '.join(labels)})" if labels else ""
        rows.append(
            (
                str(r.get("job_id")),
                str(r.get("state")) + kind,
                "-" if code is None else str(code),
                _age(r.get("duration_s")),
                " ".join(str(r.get("command", "")).split())[:80],
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        io.print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4])
    return 0


def exit_for(record: dict) -> int:
    state = record.get("state")
    if state in ("SUCCEEDED", "FAILED"):
        code = record.get("exit_code")
        return code if isinstance(code, int) and 0 <= code <= 255 else 1
    if state == "CANCELLED":
        return CANCELLED_EXIT
    if state == "RUNNING":
        return TIMEOUT
    return ACTION_FAILED  # LOST


def jobs_wait(
    io: Streams, session: dict, *, job_id: str, timeout: float | None = None, quiet: bool = False, json_: bool = False
) -> int:
    """Wait until the job ends (in requests of at most WAIT_CHUNK s); print its output tail; its exit code."""
    link = _link(session)
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            chunk = WAIT_CHUNK if deadline is None else max(min(WAIT_CHUNK, deadline - time.monotonic()), 0.001)
            obs = link.ask(actions.job("wait", job_id, timeout=chunk))
            record = (obs.get("extras") or {}).get("job") or {}
            if obs.get("observation") != "job" or record.get("state") != "RUNNING":
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
    finally:
        link.close()
    _checked(io, obs, json_)
    content = obs.get("content") or ""
    if json_:
        io.json(obs)
    elif not quiet and content:
        io.write(content if content.endswith("\n") else content + "\n")
    state = record.get("state")
    if not json_:
        if state == "RUNNING":
            io.note(
                f"job {job_id} is still running after {timeout:g} s (it keeps running; `oh jobs cancel "
                f"{job_id}` stops it)."
            )
        elif state == "LOST":
            io.note(f"job {job_id} is LOST: the editor that ran it went away.")
        elif state == "CANCELLED":
            io.note(f"job {job_id} was cancelled.")
        elif state == "FAILED" and not content.strip() and not quiet:
            # issue 41: a failed job with no output ended `oh jobs wait` with an exit status and not a word
            io.note(f"job {job_id} failed (exit {record.get('exit_code', '?')}) and printed nothing.")
    return exit_for(record)


def jobs_output(
    io: Streams, session: dict, *, job_id: str, offset: int = 0, follow: bool = False, json_: bool = False
) -> int:
    """The job's output from ``offset``; with ``follow`` until the job ends."""
    link = _link(session)
    try:
        pos = offset
        while True:
            obs = _checked(io, link.ask(actions.job("output", job_id, offset=pos, wait=5.0 if follow else None)), json_)
            extras = obs.get("extras") or {}
            if json_:
                io.json(obs)
            else:
                # The backend starts later than asked when the spool dropped those bytes (`dropped` = how
                # many of the oldest are gone) or, by a byte or three, at the next UTF-8 character: only
                # the first is a loss worth a note.
                lost = min(extras.get("offset", pos), extras.get("dropped") or 0) - pos
                if lost > 0:
                    io.note(
                        f"{lost} bytes before offset {extras.get('offset')} are no longer kept (the job's "
                        "output spool is bounded)."
                    )
                if obs.get("content"):
                    io.write(obs["content"])
            pos = extras.get("next_offset", pos)
            state = (extras.get("job") or {}).get("state")
            if not follow or extras.get("eof") or state != "RUNNING" and pos >= extras.get("size", pos):
                return 0
    finally:
        link.close()


def jobs_cancel(io: Streams, session: dict, *, job_id: str, json_: bool = False) -> int:
    obs = _ask(io, session, actions.job("cancel", job_id), json_)
    if json_:
        io.json(obs)
    else:
        io.print(obs.get("content") or "")
    return 0


def jobs_poll(io: Streams, session: dict, *, job_id: str, json_: bool = False) -> int:
    obs = _ask(io, session, actions.job("poll", job_id), json_)
    if json_:
        io.json(obs)
        return 0
    r = (obs.get("extras") or {}).get("job") or {}
    code = r.get("exit_code")
    err_line = (
        f"{r.get('job_id')}  {r.get('state')}{'' if code is None else f' (exit {code})'}  "
        f"{_age(r.get('duration_s'))}  {r.get('command')}"
    )
    io.err.write(err_line + "\n")
    io.err.flush()
    content = obs.get("content") or ""
    if content:
        io.write(content if content.endswith("\n") else content + "\n")
    return 0
