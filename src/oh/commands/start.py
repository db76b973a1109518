"""``oh start``: start a backend for a workspace; live view in the foreground, or ``--detach``."""

from __future__ import annotations

import os
from typing import Any, Literal, Optional

import typer

from ..protocol import runtimenames
from ._common import ERROR, INTERRUPTED, USAGE, complete_runtimes, die, distrust_sandbox, load_settings
from ._io import Streams

EPILOG = (
    "Exit codes: 0 started (--detach), or stopped on request (Ctrl-C, SIGTERM, SIGHUP: the terminal closed) · "
    "1 the backend failed to start or died, or the live view failed (its terminal went away, an internal error): "
    "the backend is stopped first · 2 bad flag or setting · 3 a backend already serves this workspace."
)

NO_SANDBOX = (
    "warning: runtime local has NO sandbox (sandbox = off): every command an agent sends runs on this machine as you. "
    "Use it only with agents you trust; `oh start --sandbox workspace-write` confines the agent's shell."
)


def writable_on_path(s) -> str:
    """The warning about ``sandbox_writable`` entries on the user's PATH ("" when none, or not at workspace-write)."""
    from ..protocol.sandbox_defaults import on_path, on_path_warning

    if getattr(s, "sandbox", "workspace-write") != "workspace-write":
        return ""
    home = os.path.expanduser("~")
    return on_path_warning(on_path(list(s.sandbox_writable or ()), os.environ.get("PATH", ""), home))


def sandbox_warnings(s) -> list[tuple[str, str]]:
    """What `oh start` says about the agent shell's sandbox (README "Sandbox"): nothing when it confines."""
    if s.sandbox == "off":
        return [("no_sandbox", NO_SANDBOX)]
    from ..runtimes.bwrapcheck import check

    said = writable_on_path(s)
    shims = [("writable_on_path", "warning: " + said)] if said else []
    found = check(s.sandbox_bwrap)
    if found.ok:
        return shims
    if s.sandbox_fallback == "unconfined":
        return shims + [
            (
                "no_sandbox",
                f"warning: runtime local has NO sandbox: {found.problem} (fix: {found.fix}). "
                "sandbox_fallback = unconfined: every command an agent sends runs on this machine as you.",
            )
        ]
    failed = "error: " + found.message + " Until then every command fails (nothing runs)."
    return shims + [("sandbox_unavailable", failed)]


def _complete_on_dirty(incomplete: str):
    from ._branch import complete_on_dirty

    return complete_on_dirty(incomplete)


# The options of `oh start` (module constants: the function stays readable).
_OPT_RUNTIME = typer.Option(
    None,
    "--runtime",
    "-r",
    help="local (this machine) or vscode (in VS Code). Default: config `runtime`.",
    autocompletion=complete_runtimes,
)
_OPT_PORT = typer.Option(None, "--port", "-p", help="Port to listen on; 0 = a free one. Default: config `port`.")
_OPT_HOST = typer.Option(
    None, "--host", help="Loopback address to listen on (127.0.0.1 or ::1). Default: config `host`."
)
_OPT_DETACH = typer.Option(
    False,
    "--detach",
    "-d",
    help="Return once the backend listens; it keeps running (watch it with `oh watch`, stop it with `oh stop`).",
)
_OPT_JSON = typer.Option(
    False, "--json", help="With --detach: print the started backend as JSON. Foreground: NDJSON events."
)
_OPT_OPEN = typer.Option(
    None,
    "--open/--no-open",
    help=(
        "vscode: ask the editor to open the workspace now / never. Default: config `open_editor` (auto: only if "
        "no editor connects within 3 s and a supported editor CLI is found: code, code-insiders, cursor, "
        "windsurf, codium or code-server, on PATH or where it installs; OH_CODE=<cli> picks one)."
    ),
)
_OPT_EDITOR_TIMEOUT = typer.Option(
    None,
    "--editor-timeout",
    help="Seconds an action waits for an editor before NO_EDITOR. Default: config `editor_timeout`.",
)
_OPT_ACTION_TIMEOUT = typer.Option(
    None,
    "--action-timeout",
    help="Deadline (s) for actions without their own timeout. Default: config `action_timeout`.",
)
_OPT_ALLOW = typer.Option(
    None,
    "--allow",
    help=(
        "Also allow file actions and run cwds in DIR (repeatable; e.g. --allow /tmp; a relative DIR is resolved "
        "against the current directory). Adds to config `allowed_roots`."
    ),
)
_OPT_BRANCH = typer.Option(
    None,
    "--branch/--no-branch",
    help=(
        "Git-branch mode: before the agent's first change (write, edit, command), switch the workspace to a new "
        "branch oh/<date>-<time>-<agent> (VS Code's Git extension with --runtime vscode, git locally). Default: "
        "config `branch`."
    ),
)
_OPT_BRANCH_NAME = typer.Option(
    None,
    "--branch-name",
    metavar="NAME",
    help=(
        "Branch mode on this branch instead (implies --branch): created if missing, switched to if it exists. "
        "Default: config `branch_name`."
    ),
)
_OPT_ON_DIRTY = typer.Option(
    None,
    "--on-dirty",
    metavar="MODE",
    autocompletion=_complete_on_dirty,
    help=(
        "Branch mode with uncommitted changes: stash | carry | abort | review | ask. Stash them, carry them to "
        "the branch, abort, use review mode instead of a branch (decided at start), or ask (a terminal prompt; VS "
        "Code's dialog). Needed without a terminal (--detach, --json) for --runtime local. Default: config "
        "`on_dirty`."
    ),
)
_OPT_GIT_INIT = typer.Option(
    False,
    "--git-init",
    help=(
        "Branch mode in a folder that is not a git repository: run `git init` first (else you are asked, or it is "
        "refused). Default: config `on_not_git`."
    ),
)
_OPT_ISOLATE = typer.Option(
    None,
    "--isolate",
    metavar="MODE",
    help=(
        "A git worktree per agent: worktree (every agent) | on-request (agents that ask) | off. Each works on its "
        "own branch, outside the repository (~/.local/share/oh/worktrees); `oh merge AGENT` brings the work back. "
        "Default: config `isolate`."
    ),
)
_OPT_REVIEW = typer.Option(
    None,
    "--review/--no-review",
    help=(
        "Proposal mode: write/edit become proposals you accept or reject (VS Code diff, or `oh review`); the same "
        "as --consent changes. Default: config `review`."
    ),
)
_OPT_HISTORY = typer.Option(
    None,
    "--history/--no-history",
    help=(
        "Record every action's file changes (commands too) so `oh history` shows them and `oh undo` reverts them. "
        "Default: config `history`."
    ),
)
_OPT_CONSENT = typer.Option(
    None,
    "--consent",
    metavar="LEVEL",
    autocompletion=lambda incomplete: [
        c for c in ("never", "risky", "commands", "changes", "all") if c.startswith(incomplete)
    ],
    help=(
        "When to ask you before an agent's action runs: never | risky | commands | changes | all. Answer in the "
        "live view (y/n/a), with `oh approve ID` / `oh reject ID`, or in VS Code. Rules: config "
        "consent_allow/ask/deny. Default: config `consent`."
    ),
)
_OPT_APPROVAL_TIMEOUT = typer.Option(
    None,
    "--approval-timeout",
    help=(
        "Seconds an action waits for your answer; then the agent gets REJECTED (not run). Default: config "
        "`approval_timeout`."
    ),
)
_OPT_REVIEW_TIMEOUT = typer.Option(
    None,
    "--review-timeout",
    help="Seconds a proposal waits for a decision (then TIMEOUT, nothing written). Default: config `review_timeout`.",
)
_OPT_SANDBOX = typer.Option(
    None,
    "--sandbox",
    metavar="LEVEL",
    autocompletion=lambda incomplete: [c for c in ("workspace-write", "read-only", "off") if c.startswith(incomplete)],
    help=(
        "The agent's shell in a bubblewrap sandbox: workspace-write (system and HOME read-only, the workspace "
        "writable, secrets hidden), read-only, or off (unconfined). A command can ask to leave it; you are asked. "
        'README "Sandbox". Default: config `sandbox`.'
    ),
)
_OPT_SANDBOX_NETWORK = typer.Option(
    None,
    "--sandbox-network",
    metavar="on|off",
    autocompletion=lambda incomplete: [c for c in ("on", "off") if c.startswith(incomplete)],
    help="Network inside the sandbox (off: loopback of its own only). Default: config `sandbox_network` (off).",
)
_OPT_CLEAN_SHELL = typer.Option(
    False,
    "--clean-shell",
    help=(
        "The agent's shell is the clean shell (bash without your rc files) instead of your own $SHELL with its rc "
        "files: for reproducible runs. Default: config `user_shell`."
    ),
)


def start(
    runtime: Optional[str] = _OPT_RUNTIME,
    workspace: str = typer.Option(".", "--workspace", "-C", help="Directory the backend serves (default: cwd)."),
    port: Optional[int] = _OPT_PORT,
    host: Optional[str] = _OPT_HOST,
    detach: bool = _OPT_DETACH,
    json_: bool = _OPT_JSON,
    open_: Optional[bool] = _OPT_OPEN,
    editor_timeout: Optional[float] = _OPT_EDITOR_TIMEOUT,
    action_timeout: Optional[float] = _OPT_ACTION_TIMEOUT,
    allow: Optional[list[str]] = _OPT_ALLOW,
    branch: Optional[bool] = _OPT_BRANCH,
    branch_name: Optional[str] = _OPT_BRANCH_NAME,
    on_dirty: Optional[str] = _OPT_ON_DIRTY,
    git_init: bool = _OPT_GIT_INIT,
    review: Optional[bool] = _OPT_REVIEW,
    isolate: Optional[str] = _OPT_ISOLATE,
    history: Optional[bool] = _OPT_HISTORY,
    consent: Optional[str] = _OPT_CONSENT,
    approval_timeout: Optional[float] = _OPT_APPROVAL_TIMEOUT,
    review_timeout: Optional[float] = _OPT_REVIEW_TIMEOUT,
    clean_shell: bool = _OPT_CLEAN_SHELL,
    sandbox: Optional[str] = _OPT_SANDBOX,
    sandbox_network: Optional[str] = _OPT_SANDBOX_NETWORK,
) -> None:
    """Start a backend for a workspace and show the live view (Ctrl-C stops it).

    The vscode runtime writes the session file the oh VS Code extension watches: the window
    whose workspace matches connects by itself. Only one backend per workspace.
    """
    raise typer.Exit(
        run_start(
            Streams.system(),
            runtime=runtime,
            workspace=workspace,
            port=port,
            host=host,
            detach=detach,
            json_=json_,
            open_=open_,
            editor_timeout=editor_timeout,
            action_timeout=action_timeout,
            allow=allow,
            branch=branch,
            branch_name=branch_name,
            on_dirty=on_dirty,
            git_init=git_init,
            review=review,
            isolate=isolate,
            review_timeout=review_timeout,
            consent=consent,
            approval_timeout=approval_timeout,
            clean_shell=clean_shell,
            history=history,
            sandbox=sandbox,
            sandbox_network=sandbox_network,
        )
    )


def run_start(
    io: Streams,
    *,
    runtime: Optional[str] = None,
    workspace: str = ".",
    port: Optional[int] = None,
    host: Optional[str] = None,
    detach: bool = False,
    json_: bool = False,
    open_: Optional[bool] = None,
    editor_timeout: Optional[float] = None,
    action_timeout: Optional[float] = None,
    allow: Optional[list[str]] = None,
    branch: Optional[bool] = None,
    branch_name: Optional[str] = None,
    on_dirty: Optional[str] = None,
    git_init: bool = False,
    review: Optional[bool] = None,
    isolate: Optional[str] = None,
    review_timeout: Optional[float] = None,
    consent: Optional[str] = None,
    approval_timeout: Optional[float] = None,
    clean_shell: bool = False,
    history: Optional[bool] = None,
    sandbox: Optional[str] = None,
    sandbox_network: Optional[str] = None,
) -> int:
    """``oh start``'s behaviour: --detach returns 0 once the backend listens; else the live view's exit code."""
    s = load_settings(
        {
            "runtime": runtime,
            "port": port,
            "host": host,
            "editor_timeout": editor_timeout,
            "action_timeout": action_timeout,
            "branch": True if branch_name else branch,
            "branch_name": branch_name,
            "on_dirty": on_dirty,
            "on_not_git": "init" if git_init else None,
            "review": review,
            "isolate": isolate,
            "review_timeout": review_timeout,
            "consent": consent,
            "approval_timeout": approval_timeout,
            "user_shell": False if clean_shell else None,
            "history": history,
            "sandbox": sandbox,
            "sandbox_network": sandbox_network,
        }
    )
    if not os.path.isdir(workspace):
        die(f"workspace {workspace} is not a directory.", USAGE)
    distrust_sandbox(s, workspace, tuple(allow or ()))
    branch_flags, review_on = _branch_mode(s, workspace, detach, json_)
    branch_flags.update(_isolate_flags(s, workspace))
    open_mode = s.open_editor if open_ is None else ("always" if open_ else "never")
    from ..launcher import consent as _consent

    consent_plan = _consent.plan(s, os.path.realpath(workspace), review_on)
    return _start_and_show(io, s, workspace, allow, detach, json_, open_mode, branch_flags, consent_plan)


def _start_and_show(
    io: Streams,
    s: Any,
    workspace: str,
    allow: Optional[list[str]],
    detach: bool,
    json_: bool,
    open_mode: str,
    branch_flags: dict,
    consent_plan: Any,
) -> int:
    """Start the backend process, then say how it went: --detach's answer, or the live view."""
    review_on = consent_plan.review
    token = _token()
    roots, allow_notes = _allowed_roots(workspace, s.allowed_roots, allow)
    hangup: list[int] = []
    # --detach, runtime vscode: ask the editor CLIs which has the extension while the backend starts (each
    # CLI takes about a second); the answer joins the warnings below. The live view asks by itself.
    install_check = _InstallCheck() if detach and runtimenames.uses_editor(s.runtime) else None
    # process.StartError carries its exit code (3 when a backend already serves the workspace): cli.main reports it.
    with _deferred_signals(hangup), _said_if_interrupted(io):  # a closed terminal must not orphan the backend
        started = _launch(
            s,
            workspace,
            token,
            roots,
            branch_flags,
            review_on,
            consent_plan,
        )
    session = started.session
    try:  # from here until the live view runs (it owns Ctrl-C then) or --detach answered
        # Warnings only once the backend runs (never before an "already running" error). JSON mode keeps
        # them out of stderr: an NDJSON `warning` event (foreground) or a "warnings" list (--detach).
        warnings = _warnings(s, allow_notes, session, consent_plan.warnings)
        if install_check is not None:
            warnings += [("no_extension", text) for text in install_check.result(timeout=20.0)]
        gone = _terminal_gone(io, session, warnings, hangup, detach, json_)
        if gone is not None:
            return gone
        if detach:
            _signal_editor_detached(io, session, open_mode)
            _tell_detached(io, started, warnings, json_, s.review_timeout if review_on else None, branch_flags)
            return 0
        mode = "json" if json_ else ("rich" if io.tty else "plain")
        from ..ui.liveview import foreground

        return foreground(io, session, open_mode, mode, warnings)
    except KeyboardInterrupt:
        return _interrupted(io, session)


class _said_if_interrupted:
    """Ctrl-C while the backend process starts (before it is ready): the launcher has already ended it
    (launcher.process.start_backend); say so, instead of a silent exit 130 (issue 41)."""

    def __init__(self, io: Streams) -> None:
        self.io = io

    def __enter__(self) -> "_said_if_interrupted":
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> Literal[False]:
        if kind is KeyboardInterrupt:
            self.io.note("oh start: interrupted while starting; the backend it was starting was stopped.")
        return False  # re-raised: cli.main exits 130


def _interrupted(io: Streams, session: Any) -> int:
    """Ctrl-C after the backend started but before `oh start` finished starting (the live view not drawn yet, or
    --detach not answered): stop what this start started, and say so (issue 41: it was left running, silently)."""
    import signal as os_signal

    from ..launcher.process import stop_backend

    os_signal.signal(os_signal.SIGINT, os_signal.SIG_IGN)  # a second Ctrl-C must not cut the stop short
    how = stop_backend(session)
    if how == "alive":
        io.note(
            f"oh start: interrupted; the backend {session.instance_id} did not stop: `oh stop {session.instance_id}`"
        )
        return ERROR
    io.note("oh start: interrupted while starting; the backend it started was stopped.")
    return INTERRUPTED


def _launch(s: Any, workspace: str, token: str, roots: list[str], branch: dict, review_on: bool, consent: Any) -> Any:
    """The backend process, started with its whole configuration resolved once from the settings."""
    from ..launcher import backendconfig, process

    config = backendconfig.resolve(s, workspace, allowed_roots=roots, review=review_on, consent=consent, branch=branch)
    return process.start_backend(config, token=token, log_level=s.log_level)


def _warnings(s: Any, allow_notes: list, session: Any, consent_warnings: list) -> list:
    """What `oh start` says once the backend runs (never before an "already running" error)."""
    sandbox = [] if runtimenames.uses_editor(session.runtime) else sandbox_warnings(s)
    return allow_notes + workspace_warnings(session.workspace) + overlap_warnings(session) + sandbox + consent_warnings


def overlap_warnings(session: Any) -> list[tuple[str, str]]:
    """Another backend serves a folder that holds this workspace, or one inside it (issue 41: `oh start -d` in a
    subfolder quietly started a second, overlapping backend). Their agents would change the same files with
    neither backend seeing the other's writes: say so, with the way back to one backend."""
    from .. import sessions
    from ..protocol.paths import within

    out = []
    for other in sessions.list_sessions():
        if other.instance_id == session.instance_id:
            continue
        if within(session.workspace, other.workspace) or within(other.workspace, session.workspace):
            out.append(
                (
                    "overlap",
                    f"warning: the backend {other.instance_id} already serves {other.workspace}, which overlaps "
                    f"this workspace: agents of the two change the same files and neither sees the other's writes. "
                    f"One backend is safer: `oh stop {session.instance_id}` and use `oh run -C DIR` with the other.",
                )
            )
    return out


def _isolate_flags(s: Any, workspace: str) -> dict:
    """--isolate's flag for the backend; a workspace in no git repository is refused before anything starts."""
    if s.isolate == "off":
        return {}
    if runtimenames.uses_editor(s.runtime):
        die(
            f"--isolate {s.isolate} works with the local runtime only for now (an editor's window shows the "
            "workspace, not the agents' worktrees).",
            USAGE,
            "Start with --runtime local, or without --isolate.",
        )
    from .. import gitrepo

    try:
        gitrepo.toplevel(os.path.realpath(workspace))
    except gitrepo.GitError as exc:
        die(str(exc), USAGE, "Run `git init` and make a first commit, or start without --isolate.")
    return {"isolate": s.isolate}


def _branch_mode(s: Any, workspace: str, detach: bool, json_: bool) -> tuple[dict, bool]:
    """(the backend's branch-mode flags, review on?): asks (or refuses) about a dirty tree or no repository
    before anything starts; choosing review mode instead turns proposals on, with no branch."""
    if not s.branch:
        return {}, s.review
    from ..protocol.branch import Plan
    from . import _branch

    plan = _branch.settle(
        workspace,
        s.runtime,
        Plan(s.branch_name or None, s.on_dirty, s.on_not_git),
        _branch.interactive(detach, json_),
    )
    if isinstance(plan, str):  # _branch.REVIEW: no branch, review mode instead
        return {}, True
    return _branch.flags(plan), s.review


def _terminal_gone(
    io: Streams, session: Any, warnings: list, hangup: list[int], detach: bool, json_: bool
) -> int | None:
    """Print the warnings; the exit code when the terminal hung up (or is gone) and the foreground backend was
    stopped, else None (a detached backend stays)."""
    if hangup and not detach:
        from ..launcher.process import stop_backend

        stop_backend(session)
        return 0
    try:
        if not json_:
            for _, text in warnings:
                io.note(text)
    except OSError:  # the terminal is already gone: same as a hang-up (a detached backend stays)
        if not detach:
            from ..launcher.process import stop_backend
            from ..ui.liveview import silence_output

            stop_backend(session)
            silence_output()
            return ERROR
    return None


def _token() -> str:
    from ..config import secrets

    try:
        return secrets.get_or_create_token()
    except Exception as exc:  # noqa: BLE001
        die(f"cannot read or create the token: {exc}", ERROR, "Run `oh doctor` to see where the token should live.")


def _allowed_roots(
    workspace: str, configured: list[str], allow: Optional[list[str]]
) -> tuple[list[str], list[tuple[str, str]]]:
    """Setting `allowed_roots` plus --allow, checked the way the backend will check them; and a note for
    each relative --allow saying the absolute directory it names (resolved against the current
    directory, as a shell would, not against --workspace)."""
    added, notes = [], []
    for given in allow or ():
        if not given.strip():  # `--allow ''` (an unset variable) would otherwise mean the current directory
            die("--allow '' names no directory.", USAGE, "Give a directory: `--allow /tmp` (repeat --allow for more).")
        path = os.path.abspath(os.path.expanduser(given))
        if not os.path.isabs(os.path.expanduser(given)):
            notes.append(
                (
                    "allow_relative",
                    f"note: --allow {given} is relative: it allows {path} (resolved against the current directory).",
                )
            )
        added.append(path)
    roots = [*configured, *added]
    try:
        from ..backend.agentinfo import effective_roots

        effective_roots(workspace, roots)
    except ValueError as exc:
        die(str(exc), USAGE, "Fix `--allow` or the `allowed_roots` setting (`oh config list`).")
    return roots, notes


def _tell_detached(
    io: Streams,
    started,
    warnings: list[tuple[str, str]],
    json_: bool,
    review_timeout: Optional[float],
    branch_flags: Optional[dict] = None,
) -> None:
    """--detach's report; ``review_timeout``: set when review mode is on; ``branch_flags``: branch mode's."""
    session = started.session
    if json_:
        info = {
            "instance_id": session.instance_id,
            "pid": session.pid,
            "port": session.port,
            "url": session.url,
            "runtime": session.runtime,
            "workspace": session.workspace,
        }
        # "warnings" only when there is one: the object stays the same for the common case.
        io.ndjson(
            {**info, **({"warnings": [{"id": wid, "message": text} for wid, text in warnings]} if warnings else {})}
        )
    else:
        io.say(
            f"backend {session.instance_id} listening on {session.url} (runtime {session.runtime}, pid {session.pid})"
        )
        io.say(f"workspace {session.workspace}; log {started.log_file}")
        _say_protections(io, session)
        if review_timeout is not None:
            where = runtimenames.TRAITS[session.runtime].review_where
            io.say(
                f"review mode: the agent's writes and edits wait for your accept/reject {where} (up to "
                f"{review_timeout:g} s)"
            )
        if branch_flags and branch_flags.get("branch"):
            target = (
                f"the git branch '{branch_flags['branch_name']}'"
                if branch_flags.get("branch_name")
                else "a new git branch oh/<date>-<time>-<agent>"
            )
            io.say(
                "branch mode: before the agent's first change (write, edit, command) the workspace switches "
                f"to {target}"
            )
        if branch_flags and branch_flags.get("isolate"):
            io.say(
                f"isolate {branch_flags['isolate']}: agents work in git worktrees of their own (`oh worktrees`); "
                "`oh merge AGENT` brings one back"
            )
        iid = session.instance_id
        io.say(f"watch it live with `oh watch {iid}`; stop it with `oh stop {iid}`")


def _say_protections(io: Streams, session: Any) -> None:
    """What guards the user, as `oh status` says it (issue 41: a start must show which protections are on)."""
    from ..launcher.control import BackendUnreachable, status
    from ..text.status import history_line, protections

    try:
        answer = status(session)
        io.say("protections: " + protections(answer))
        said = history_line(answer.get("history"))
        if said is not None:
            io.say(said)
    except BackendUnreachable:
        pass  # it stopped already: `oh status` will say so


def workspace_warnings(workspace: str) -> list[tuple[str, str]]:
    """A workspace of `/` or the home directory hands agents every file you have: say so."""
    real = os.path.realpath(workspace)
    if real == os.path.realpath(os.sep):
        return [
            (
                "workspace_root",
                f"warning: the workspace is {real} (the whole file system): agents can read and change "
                "every file you can. Serve a project folder instead: `oh start -C <project>`.",
            )
        ]
    home = os.path.expanduser("~")
    if home not in ("~", "") and real == os.path.realpath(home):
        return [
            (
                "workspace_home",
                f"warning: the workspace is your home directory ({real}): agents can read and change "
                "all of it (ssh keys, shell start-up files, other projects). Serve a project folder "
                "instead: `oh start -C <project>`.",
            )
        ]
    return []


class _deferred_signals:
    """SIGHUP/SIGTERM while the backend starts: remember them instead of dying (which would leave a
    detached backend behind); the caller stops the backend once it knows it. A signal that was
    ignored when we started (``nohup``) stays ignored."""

    SIGNALS = ("SIGHUP", "SIGTERM")

    def __init__(self, seen: list[int]) -> None:
        self.seen = seen
        self.saved: dict[int, object] = {}

    def __enter__(self) -> "_deferred_signals":
        import signal as os_signal

        for name in self.SIGNALS:
            sig = getattr(os_signal, name, None)
            if sig is None or os_signal.getsignal(sig) == os_signal.SIG_IGN:
                continue
            self.saved[sig] = os_signal.signal(sig, lambda signum, _frame: self.seen.append(signum))
        return self

    def __exit__(self, *exc: object) -> None:
        import signal as os_signal

        for sig, handler in self.saved.items():
            os_signal.signal(sig, handler)  # type: ignore[arg-type]


def _signal_editor_detached(io: Streams, session, open_mode: str) -> None:
    from ..launcher import signal as editor_signal

    if not runtimenames.uses_editor(session.runtime) or open_mode == "never":
        return
    if open_mode == "always":
        if editor_signal.open_editor(session.workspace, session.instance_id) is None:
            io.note(
                "no VS Code CLI (code, cursor, windsurf, codium, code-server) on PATH: open the workspace in "
                "the editor yourself (the extension connects by itself)."
            )
        return
    if editor_signal.code_binary() is None:
        return  # auto: nothing we could do; the session file is the signal
    import time

    from ..launcher.control import BackendUnreachable, status

    deadline = time.monotonic() + editor_signal.AUTO_GRACE
    while time.monotonic() < deadline:
        try:
            if status(session).get("editors"):
                return
        except BackendUnreachable:
            return
        time.sleep(0.2)
    editor_signal.open_editor(session.workspace, session.instance_id)


class _InstallCheck:
    """No editor oh can see has the extension (or only another release): the fix, `oh vscode install`.
    Runs in a daemon thread from construction; ``result`` waits for it (each CLI call is bounded)."""

    def __init__(self) -> None:
        import threading

        self._hints: list[str] = []
        self._thread = threading.Thread(target=self._run, name="oh-install-check", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from ..launcher import signal as editor_signal
        from ..ui.hints import install_hints

        self._hints = install_hints(editor_signal.extension_states(), editor_signal.bundled_version())

    def result(self, timeout: float = 20.0) -> list[str]:
        self._thread.join(timeout)  # extension_states bounds each CLI at 15 s
        return list(self._hints)
