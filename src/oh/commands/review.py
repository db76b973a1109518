"""``oh review``: the local runtime's proposals (review mode, docs/protocol.md §3.11).

``oh review`` lists them, ``show ID`` prints the diff (coloured on a terminal), ``accept ID|--all``
writes them, ``reject ID --reason TEXT`` tells the agent why not. Each request is one frame on the
backend's control leg (token from the session file). Paths, agent names and diff lines are agent-
controlled: printed through ``text.sanitize.visible``. Each command is parse -> ``run_review`` /
``run_show`` / ``run_accept`` / ``run_reject`` (streams, options; ``control`` = the request sender a test
may replace) -> exit code.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import typer

from ..errors import OhBaseError
from ._common import ERROR, UNREACHABLE, USAGE, die, pick_session, target_options
from ._io import Streams

app = typer.Typer(
    help="Review the agent's proposed changes (backend started with `oh start --review`, runtime local), and with "
    "`--history` too, the file changes its commands made (keep or revert each command's change set).",
    no_args_is_help=False,
    invoke_without_command=True,
)

_WORKSPACE, _INSTANCE = target_options()
_JSON = typer.Option(False, "--json", help="Machine-readable output (the backend's answer).")
_HUNKS = typer.Option(
    None, "--hunks", metavar="N,M-K", help="Only these hunks (numbers from `oh review show ID`, e.g. 1,3-4)."
)
_FILES = typer.Option(
    None, "--files", metavar="PATH,...", help="Only these files (paths as `oh review show` names them)."
)


def _selection(hunks: Optional[str], files: Optional[str]) -> dict[str, Any]:
    """The request's ``hunks`` / ``files`` from the command line (a malformed list: exit 2, nothing sent)."""
    from ..protocol.hunks import parse_selection

    out: dict[str, Any] = {}
    if hunks is not None:
        try:
            out["hunks"] = parse_selection(hunks)
        except ValueError as exc:
            die(f"--hunks: {exc}.", USAGE, "`oh review show ID` numbers the hunks.")
    if files is not None:
        names = [f.strip() for f in files.split(",") if f.strip()]
        if not names:
            die("--files: name at least one file.", USAGE)
        out["files"] = names
    return out


# Control-leg refusals and what to do about them (exit 1 unless the request itself was malformed).
_HINTS = {
    "NO_PROPOSAL": "List the pending proposals with `oh review`.",
    "REVIEW_OFF": "Restart with `oh start --review` (or `oh config set review true`).",
    "NOT_HERE": "Use the diff editor's Accept / Reject in VS Code (or the notification).",
}


class _Shown(OhBaseError):
    """A refusal already printed as JSON (``--json``): the command ends with ``code`` and no message."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _send_control(session, frame: dict[str, Any]) -> dict[str, Any]:
    from ..launcher.control import control

    # The decider credential (issue 19): the agent token may list, never decide.
    return control(session, frame, token=session.decider_token or None, timeout=10.0)


def _request(
    io: Streams,
    workspace: Optional[str],
    instance: Optional[str],
    frame: dict[str, Any],
    json_: bool,
    control: Callable[[Any, dict[str, Any]], dict[str, Any]],
) -> dict[str, Any]:
    from ..launcher.control import BackendUnreachable

    session = pick_session(workspace, instance)
    try:
        answer = control(session, {"type": "review", **frame})
    except BackendUnreachable as exc:
        die(str(exc), UNREACHABLE, "Is the backend still running? `oh status` shows it.")
    if answer.get("type") == "error":
        code = str(answer.get("error_id", ""))
        if json_:
            io.json(answer)
            raise _Shown(USAGE if code == "BAD_REQUEST" else ERROR)
        from ..text.sanitize import visible

        die(
            visible(answer.get("message", "the backend refused the request")),
            USAGE if code == "BAD_REQUEST" else ERROR,
            _HINTS.get(code),
        )
    return answer


def _age(seconds: Any) -> str:
    from ..text.fmt import fmt_duration

    return fmt_duration(float(seconds)) if isinstance(seconds, (int, float)) else "?"


def _shown(run: Callable[..., int]) -> Callable[..., int]:
    """``run_*`` returning the exit code of a refusal already shown as JSON."""

    def wrapped(io: Streams, **options: Any) -> int:
        try:
            return run(io, **options)
        except _Shown as shown:
            return shown.code

    wrapped.__name__, wrapped.__doc__ = run.__name__, run.__doc__
    return wrapped


@app.callback()
def review(
    ctx: typer.Context,
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
    patch_: Optional[str] = typer.Option(
        None, "-p", "--patch", metavar="ID", help="Walk ID's hunks one by one (as `oh review patch ID`)."
    ),
) -> None:
    """List the pending proposals (id, agent, kind, path, age) and the commands' change sets (id h12, files)."""
    if ctx.invoked_subcommand is not None:
        return
    if patch_ is not None:
        raise typer.Exit(run_patch(Streams.system(), proposal_id=patch_, workspace=workspace, instance=instance))
    raise typer.Exit(run_review(Streams.system(), workspace=workspace, instance=instance, json_=json_))


@_shown
def run_review(
    io: Streams,
    *,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    control: Callable[[Any, dict[str, Any]], dict[str, Any]] = _send_control,
) -> int:
    """``oh review``'s behaviour: the table of pending proposals (or the backend's answer as JSON)."""
    from ..text.sanitize import visible

    answer = _request(io, workspace, instance, {"op": "list"}, json_, control)
    if json_:
        io.json(answer)
        return 0
    rows = answer.get("proposals") or []
    sets = answer.get("changesets") or []
    if not rows and not sets:
        io.print("No pending proposals or change sets." if "changesets" in answer else "No pending proposals.")
        return 0
    if rows:
        io.print(f"{'ID':<6} {'AGENT':<16} {'KIND':<18} {'AGE':>7}  PATH")
    for r in rows:
        kind = f"{r.get('kind')} {r.get('command')}"
        io.print(
            f"{visible(r.get('id')):<6} {visible(r.get('agent'))[:16]:<16} {visible(kind)[:18]:<18} "
            f"{_age(r.get('age_s')):>7}  {visible(r.get('path'))}"
        )
    if rows:
        timeout = answer.get("review_timeout")
        io.print(
            "Show one with `oh review show ID`; decide with `oh review accept ID|--all` or `oh review reject "
            "ID --reason TEXT` "
            f"(undecided ones time out after {timeout:g} s)."
            if isinstance(timeout, (int, float))
            else "Show one with `oh review show ID`; decide with `oh review accept ID|--all` or `oh review reject ID`."
        )
    if sets:
        _changeset_table(io, sets, bool(rows))
    return 0


def _changeset_table(io: Streams, sets: list[dict[str, Any]], after: bool) -> None:
    """The commands whose file changes already landed and await keep (accept) or revert (reject)."""
    from ..text.sanitize import visible

    if after:
        io.print("")
    io.print(f"{'ID':<6} {'AGENT':<16} {'FILES':>5} {'+':>4} {'-':>4} {'AGE':>7}  COMMAND (already ran)")
    for r in sets:
        io.print(
            f"{visible(r.get('id')):<6} {visible(r.get('agent'))[:16]:<16} {r.get('files', 0):>5} "
            f"{r.get('created', 0):>4} "
            f"{r.get('deleted', 0):>4} {_age(r.get('age_s')):>7}  {visible(r.get('command'))[:200]}"
        )
    io.print(
        "These commands' changes are on disk: `oh review show ID` shows them; `oh review accept ID` keeps them, "
        "`oh review reject ID` reverts them (your later edits are merged, never lost). They wait until you decide "
        "(no timeout; history's retention keeps them), and the agent was told they are not final."
    )


def _colour(line: str, tty: bool) -> str:
    from ..text.sanitize import visible

    # Tabs are harmless and common in code: kept; every other control character is escaped.
    safe = "\t".join(visible(part) for part in line.split("\t"))
    if not tty:
        return safe
    if line.startswith(("+++", "---")):
        return f"\x1b[1m{safe}\x1b[0m"
    if line.startswith("@@"):
        return f"\x1b[36m{safe}\x1b[0m"
    if line.startswith("+"):
        return f"\x1b[32m{safe}\x1b[0m"
    if line.startswith("-"):
        return f"\x1b[31m{safe}\x1b[0m"
    return safe


@app.command()
def show(
    proposal_id: str = typer.Argument(
        ..., metavar="ID", help="A proposal (e.g. p3) or a command's change set (e.g. h12) from `oh review`."
    ),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Print a proposal or a change set as a unified diff (coloured on a terminal)."""
    raise typer.Exit(
        run_show(Streams.system(), proposal_id=proposal_id, workspace=workspace, instance=instance, json_=json_)
    )


@_shown
def run_show(
    io: Streams,
    *,
    proposal_id: str,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    control: Callable[[Any, dict[str, Any]], dict[str, Any]] = _send_control,
) -> int:
    """``oh review show``'s behaviour: the proposal as a unified diff, coloured when ``io.tty``."""
    from ..text.sanitize import visible

    answer = _request(io, workspace, instance, {"op": "show", "id": proposal_id}, json_, control)
    if json_:
        io.json(answer)
        return 0
    if "changeset" in answer:
        p = answer.get("changeset") or {}
        head = (
            f"{visible(p.get('id'))}: {visible(p.get('agent'))}'s command `{visible(p.get('command'))}` changed "
            f"{p.get('files', 0)} file(s) ({_age(p.get('age_s'))} ago); accept keeps them, reject reverts them"
        )
    else:
        p = answer.get("proposal") or {}
        head = (
            f"{visible(p.get('id'))}: {visible(p.get('agent'))} proposes {visible(p.get('kind'))} "
            f"{visible(p.get('command'))} of {visible(p.get('path'))} ({_age(p.get('age_s'))} ago)"
        )
    io.print(f"\x1b[1m{head}\x1b[0m" if io.tty else head)
    hunks = [h for h in p.get("hunks") or [] if isinstance(h, dict)]
    if any(h.get("kind") == "text" for h in hunks):
        _print_hunks(io, hunks)
        return 0
    for h in hunks:  # whole-file hunks only (a new file, binary content): their summary, then the diff as it is
        _print_hunk(io, h, len(hunks))
    for line in str(p.get("diff", "")).splitlines():
        io.print(_colour(line, io.tty))
    return 0


def _print_hunk(io: Streams, h: dict[str, Any], total: int) -> None:
    """One numbered hunk: its header with ``[n/total]`` (whole-file ones: their one-line summary)."""
    from ..text.sanitize import visible

    label = f"[hunk {h.get('n')}/{total}]" + (f" ({visible(h.get('decided'))})" if h.get("decided") else "")
    body = str(h.get("diff", "")).splitlines()
    if h.get("kind") != "text":
        line = f"{label} {visible(h.get('kind'))}: {visible(' '.join(body))}"
        io.print(f"\x1b[1;33m{line}\x1b[0m" if io.tty else line)
        return
    io.print(_colour(f"{body[0] if body else h.get('header', '@@')}  {label}", io.tty))
    for line in body[1:]:
        io.print(_colour(line, io.tty))


def _print_hunks(io: Streams, hunks: list[dict[str, Any]]) -> None:
    """The change hunk by hunk, numbered as `accept/reject --hunks` name them, a file header before each file."""
    last = None
    for h in hunks:
        path = str(h.get("path", ""))
        if path != last and h.get("kind") == "text":
            label = path if path.startswith("/") else "/" + path
            io.print(_colour(f"--- a{label}", io.tty))
            io.print(_colour(f"+++ b{label}", io.tty))
        last = path
        _print_hunk(io, h, len(hunks))


def _report(io: Streams, answer: dict[str, Any], json_: bool) -> int:
    from ..text.sanitize import visible

    results = answer.get("results") or []
    if json_:
        io.json(answer)
    else:
        if not results:
            io.print("No pending proposals.")
        for r in results:
            io.print(f"{visible(r.get('id'))}: {visible(r.get('outcome'))}: {visible(r.get('message'))}")
    if any(r.get("outcome") not in ("accepted", "rejected") for r in results):
        return ERROR  # stale, failed or unknown: nothing was written for those
    return 0


@app.command()
def accept(
    proposal_id: Optional[str] = typer.Argument(
        None, metavar="ID", help="The proposal to write, or the change set to keep (see `oh review`)."
    ),
    all_: bool = typer.Option(False, "--all", help="Accept every pending proposal and keep every change set."),
    hunks: Optional[str] = _HUNKS,
    files: Optional[str] = _FILES,
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Write a proposal (or all of them), or keep a command's change set; with --hunks/--files only those
    hunks (the rest of a proposal is rejected). A file changed since the proposal is not written (exit 1)."""
    raise typer.Exit(
        run_accept(
            Streams.system(),
            proposal_id=proposal_id,
            all_=all_,
            select=_selection(hunks, files),
            workspace=workspace,
            instance=instance,
            json_=json_,
        )
    )


@_shown
def run_accept(
    io: Streams,
    *,
    proposal_id: Optional[str] = None,
    all_: bool = False,
    select: Optional[dict[str, Any]] = None,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    control: Callable[[Any, dict[str, Any]], dict[str, Any]] = _send_control,
) -> int:
    """``oh review accept``'s behaviour: 0 when every proposal was written, 1 otherwise."""
    if bool(proposal_id) == all_:
        die("give one proposal ID or --all.", USAGE, "`oh review` lists the pending proposals.")
    if all_ and select:
        die("--hunks and --files name parts of one change: give its ID, not --all.", USAGE)
    frame: dict[str, Any] = {"op": "accept", "all": True} if all_ else {"op": "accept", "id": proposal_id}
    frame.update(select or {})
    return _report(io, _request(io, workspace, instance, frame, json_, control), json_)


@app.command()
def reject(
    proposal_id: str = typer.Argument(
        ..., metavar="ID", help="The proposal to reject, or the change set to revert (see `oh review`)."
    ),
    reason: str = typer.Option("", "--reason", "-m", help="Why: the agent gets this text with the REJECTED error."),
    hunks: Optional[str] = _HUNKS,
    files: Optional[str] = _FILES,
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Reject a proposal (the agent gets REJECTED with your reason; nothing is written), or revert a command's
    change set (three-way: your later edits are merged; on an overlap nothing changes, exit 1)."""
    raise typer.Exit(
        run_reject(
            Streams.system(),
            proposal_id=proposal_id,
            reason=reason,
            select=_selection(hunks, files),
            workspace=workspace,
            instance=instance,
            json_=json_,
        )
    )


@_shown
def run_reject(
    io: Streams,
    *,
    proposal_id: str,
    reason: str = "",
    select: Optional[dict[str, Any]] = None,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    control: Callable[[Any, dict[str, Any]], dict[str, Any]] = _send_control,
) -> int:
    """``oh review reject``'s behaviour."""
    frame = {"op": "reject", "id": proposal_id, "reason": reason, **(select or {})}
    return _report(io, _request(io, workspace, instance, frame, json_, control), json_)


_PATCH_HELP = """y - {yes} this hunk
n - {no} this hunk
a - {yes} this hunk and every later one
d - {no} this hunk and every later one
q - quit: {quit}
? - this help"""


def _ask(io: Streams, prompt: str) -> str:
    """One answer from the terminal ("q" at the end of input)."""
    io.write(prompt)
    if hasattr(io.out, "flush"):
        io.out.flush()
    line = io.inp.readline()
    return line.strip().lower()[:1] if line else "q"


def _walk(io: Streams, hunks: list[dict[str, Any]], words: dict[str, str]) -> tuple[dict[int, bool], bool]:
    """Ask about each hunk: ({n: yes?}, quit early?)."""
    answers: dict[int, bool] = {}
    last = None
    for i, h in enumerate(hunks):
        n = int(h.get("n", 0))
        path = str(h.get("path", ""))
        if path != last and h.get("kind") == "text":
            label = path if path.startswith("/") else "/" + path
            io.print(_colour(f"--- a{label}", io.tty))
            io.print(_colour(f"+++ b{label}", io.tty))
        last = path
        _print_hunk(io, h, int(hunks[-1].get("n", 0)))
        while True:
            prompt = f"{words['ask']} [{i + 1}/{len(hunks)}] [y,n,a,d,q,?]? "
            got = _ask(io, f"\x1b[1;34m{prompt}\x1b[0m" if io.tty else prompt)
            if got in ("y", "n"):
                answers[n] = got == "y"
                break
            if got in ("a", "d"):
                answers.update({int(x.get("n", 0)): got == "a" for x in hunks[i:]})
                return answers, False
            if got == "q":
                return answers, True
            io.print(_PATCH_HELP.format(**words))
    return answers, False


@app.command()
def patch(
    proposal_id: str = typer.Argument(..., metavar="ID", help="The proposal or change set (see `oh review`)."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
) -> None:
    """Walk a proposal's or a change set's hunks one by one, like `git add -p` (y/n/a/d/q/?), at a terminal."""
    raise typer.Exit(run_patch(Streams.system(), proposal_id=proposal_id, workspace=workspace, instance=instance))


@_shown
def run_patch(
    io: Streams,
    *,
    proposal_id: str,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    interactive: Optional[bool] = None,
    control: Callable[[Any, dict[str, Any]], dict[str, Any]] = _send_control,
) -> int:
    """``oh review patch``'s behaviour: the answers are sent as one accept and one reject of hunks."""
    if not (interactive if interactive is not None else bool(getattr(io.inp, "isatty", lambda: False)())):
        die(
            "`oh review patch` asks about each hunk at a terminal, and stdin is not one.",
            USAGE,
            f"Print the numbered hunks with `oh review show {proposal_id}`, then decide them with `oh review accept "
            f"{proposal_id} --hunks 1,3` and `oh review reject {proposal_id} --hunks 2`.",
        )
    answer = _request(io, workspace, instance, {"op": "show", "id": proposal_id}, False, control)
    is_set = "changeset" in answer
    shown = answer.get("changeset" if is_set else "proposal") or {}
    hunks = [h for h in shown.get("hunks") or [] if isinstance(h, dict) and not h.get("decided")]
    if not hunks:
        io.print("No undecided hunks.")
        return 0
    words = (
        {"ask": "Keep", "yes": "keep", "no": "revert", "quit": "the answers given so far are applied, the rest wait"}
        if is_set
        else {
            "ask": "Write",
            "yes": "write",
            "no": "reject",
            "quit": "nothing is decided (a proposal is decided whole)",
        }
    )
    answers, quit_ = _walk(io, hunks, words)
    if quit_ and not is_set:
        io.print(f"Nothing decided: {proposal_id} still waits.")
        return 0
    yes = sorted(n for n, v in answers.items() if v)
    no = sorted(n for n, v in answers.items() if not v)
    code = 0
    for op, chosen in (("accept", yes), ("reject", no)):
        if chosen:
            frame = {"op": op, "id": proposal_id, "hunks": chosen}
            code = max(code, _report(io, _request(io, workspace, instance, frame, False, control), False))
            if not is_set:
                break  # one decision: the accepted hunks written, the others rejected
    return code
