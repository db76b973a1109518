"""The agent verbs' one implementation: ``oh run``, ``oh read``, ``oh write``, ``oh edit``.

Both entry paths call it: the fast dispatcher (``oh.fastpath.dispatch``, no typer) and the typer
commands in ``oh.commands.agent`` (``--help``, shell completion, unusual cases). Each verb takes the
streams to write to (``Streams``, passed down by its caller) and the session (a session-file dict),
sends one action (built by ``oh.protocol.actions``) over ``oh.fastpath.ws`` and returns the exit code
after printing; a failure is raised as ``OhError``. Nothing here imports typer, rich, pydantic or psutil.
"""

from __future__ import annotations

import os

from ..protocol import (
    actions,  # stdlib only: the fast path may load it
    runtimenames,  # stdlib only
)
from ..protocol.paths import within  # stdlib only
from . import fastjson, ws
from .exits import ACTION_FAILED, AUTH, INTERRUPTED, NO_EDITOR, TIMEOUT, UNREACHABLE, USAGE, OhError
from .streams import Streams

TYPE_CHECKING = False  # the fast path does not import typing (startup time); annotations only
if TYPE_CHECKING:
    from typing import Any

CLI_SHELL = "cli"  # every `oh run` shares this shell/terminal

_TRUNCATED = ("[... ", " characters truncated ...]")  # oh.runtimes.local.output.truncation_marker
# What a person can do while a command runs in the shared `oh run` shell.
NEXT_STEPS = (
    "see more of its output with `oh run --wait`, send it a line of input with `oh run --input TEXT`, "
    "stop it with `oh run --interrupt`, or kill everything there with `oh run --reset`"
)

# The backend words its errors for agents (args, actions); `oh` shows them to a person at a shell: the
# advice becomes the command that does it (issue 18 item 11).
CLI_ADVICE = (
    (
        'read it with args.encoding "base64" to get its bytes',
        "`oh read` shows text only: get its bytes with `oh run -- base64 FILE` (or copy the file)",
    ),
    (" List the jobs with the job action op list.", ""),  # the hint under the error names `oh jobs`
    ('get its bytes with the read action and args.encoding "base64"', "get its bytes with `oh run -- base64 FILE`"),
)


def cli_advice(text: str) -> str:
    for agent_words, cli_words in CLI_ADVICE:
        text = text.replace(agent_words, cli_words)
    return text


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def shell_quote(word: str) -> str:
    """``shlex.quote`` (same output) without importing shlex and re."""
    if not word:
        return "''"
    if all(c in _SAFE for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def pick_mode(*pairs: tuple[str, bool], default: str | None = None, what: str) -> str:
    """The one mode flag given (or ``default`` when none); several is a usage error."""
    on = [mode for mode, given in pairs if given]
    if len(on) == 1:
        return on[0]
    if not on and default:
        return default
    raise OhError(f"give {'at most' if default else 'exactly'} one of {what}.", USAGE)


def content_or_stdin(io: Streams, content: str | None) -> str:
    if content is not None:
        return content
    if io.inp is None or io.inp.isatty():
        raise OhError("give the content with --content TEXT or on stdin (e.g. `cat f | oh write PATH`).", USAGE)
    return io.inp.read()


# ---------------------------------------------------------------------------- paths
def roots(session: dict) -> list[str]:
    """Where the backend may act: workspace + allowed roots (when the backend reports them)."""
    extra = session.get("allowed_roots") or []
    return [session["workspace"], *[r for r in extra if isinstance(r, str) and r != session["workspace"]]]


def base_dir(session: dict) -> str:
    """Your cwd when the backend may act there, else its workspace root (README: `oh run` from outside)."""
    here = os.path.realpath(os.getcwd())
    return here if any(within(here, r) for r in roots(session)) else session["workspace"]


def resolve(path: str, session: dict) -> str:
    """An explicit absolute path: relative ones are taken from ``base_dir``."""
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(base_dir(session), path))


# ---------------------------------------------------------------------------- the wire
def exchange(
    io: Streams, session: dict, action: dict, *, shell: str | None = None, announce: bool = True, watch=None
) -> dict:
    """Connect, send ``action`` (id 1), return its observation. Raises OhError.

    ``announce``: with runtime vscode and no editor connected, say at once that we wait.
    ``watch``: what to do with progress frames (``Watch``); default: say at once when the action waits
    for the user (consent, review), unless ``announce`` is off (--quiet).
    """
    try:
        no_editor = (
            announce
            and runtimenames.uses_editor(session.get("runtime"))
            and _wait_for_editor_note(io, session, action.get("timeout"))
        )
        if watch is None and announce:
            watch = Watch(io)
        if watch is not None and no_editor:
            watch.editor_wait = session
        link = AgentLink(session, shell=shell)
    except KeyboardInterrupt:
        raise OhError(NOT_SENT, INTERRUPTED) from None
    try:
        return link.ask(action, watch=watch)
    finally:
        link.close()


NOT_SENT = "interrupted before the action reached the backend: nothing was run or changed."
INTERRUPT_GRACE = 3.0  # after Ctrl-C, how long `oh run` waits to show how the command ended


class Watch:
    """Progress frames of one action (docs/protocol.md §3.16) as a person at a terminal sees them: a wait
    for consent or review said at once on stderr, and with ``stream`` the command's output as it comes
    on stdout (then the observation's content is not printed again)."""

    def __init__(
        self, io: Streams, *, stream: bool = False, run: bool = False, jobs: bool = True, steps: bool = False
    ) -> None:
        self.io = io
        # `started`: a run's job id, which Ctrl-C names; `output` only to a terminal; `step`: what `ensure` runs.
        self.events = ["waiting", "started", "output"] if stream else ["waiting", "started"] if run else ["waiting"]
        if steps:
            self.events.append("step")
        self.jobs = jobs  # the runtime keeps a command its client left as a job (local; not VS Code)
        self.streamed = False  # some output was printed
        self.open_line = False  # the output printed so far does not end with a newline
        self.interrupted_sent = False  # Ctrl-C was passed on to the command (the answer then says how it ended)
        self.job_id: str | None = None
        self.waiting: str | None = None  # the approval / proposal it waits for
        self.editor_wait: dict | None = None  # runtime vscode, no editor when sent: the session, to ask again
        self.dropped = 0

    def __call__(self, frame: dict) -> None:
        event = frame.get("event")
        if event == "output" and isinstance(frame.get("text"), str) and frame["text"]:
            self.io.write(frame["text"])
            self.streamed = True
            self.open_line = not frame["text"].endswith("\n")
            dropped = frame.get("dropped")
            self.dropped += dropped if isinstance(dropped, int) else 0
        elif event == "started" and isinstance(frame.get("job_id"), str):
            self.job_id = frame["job_id"]
            self.waiting = None
        elif event == "waiting":
            self._waiting(frame)
        elif event == "step" and isinstance(frame.get("text"), str):
            from ..text.sanitize import visible

            self.io.note(_first_words(visible(frame["text"]), 300))

    def _waiting(self, frame: dict) -> None:
        from ..text.sanitize import visible  # agent-controlled text (the command) on the user's terminal

        what = visible(str(frame.get("what") or ""))[:200]
        aid, pid = frame.get("approval"), frame.get("proposal")
        if isinstance(aid, str):
            self.waiting = aid
            self.io.note(
                f"waiting for your consent: {aid} ({what}) — oh approve {aid} / oh reject {aid} "
                "(or answer in VS Code / the live view)"
            )
        elif isinstance(pid, str):
            self.waiting = pid
            self.io.note(
                f"waiting for your review: {pid} ({what}) — oh review show {pid}, then oh review accept {pid} / "
                f"oh review reject {pid} (or answer in the live view)"
            )
        elif "proposal" in frame:
            self.waiting = "review"
            self.io.note(f"waiting for your review in VS Code: {what} (accept or reject it in the diff editor)")

    def interrupted(self) -> tuple[dict | None, str]:
        """Ctrl-C: (the follow-up that passes it to the command, or None) and what to say if it does not end."""
        if self.job_id is None:
            if self.waiting:
                return None, f"interrupted while waiting for {self.waiting}: nothing was run or changed."
            if self.editor_wait is not None and _editors(self.editor_wait) == []:
                # still none: no editor ever had the action (it said "the command got Ctrl-C in the shell")
                return None, "interrupted while waiting for an editor to connect: nothing was run or changed."
            return None, ""
        jid = self.job_id
        if not self.jobs:
            return actions.run("C-c", is_input=True, job_id=jid), (
                f"interrupted: the command ({jid}) got Ctrl-C in the `oh run` shell and has not ended. "
                "`oh run --wait` shows its output, `oh run --interrupt` sends Ctrl-C again, `oh run --reset` kills it."
            )
        return actions.run("C-c", is_input=True, job_id=jid), (
            f"interrupted: the command got Ctrl-C and has not ended; it goes on as job {jid}: `oh jobs wait {jid}`, "
            f"`oh jobs output {jid}` (its output is kept), `oh jobs cancel {jid}`."
        )


_HINT_STATUS = "Check the backend with `oh status`; see its log with `oh logs`."


class AgentLink:
    """One agent connection for several actions in a row (``oh jobs wait`` asks until the job ends).
    Failures raise OhError with the exit codes of the agent verbs."""

    def __init__(self, session: dict, *, shell: str | None = None, on_interrupt: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {session['token']}", "X-OH-Client": "oh-cli", "User-Agent": "oh-cli"}
        if shell:
            headers["X-OH-Shell"] = shell
        if os.environ.get("OH_AGENT_ISOLATE") == "worktree":  # issue 37: this agent asks for a worktree of its own
            headers["X-OH-Isolate"] = "worktree"
        # What Ctrl-C leaves behind: a command goes on in the shared shell (say how to reach it).
        # Leaving mid-action cancels it: the backend sends the command Ctrl-C (C-c), as a terminal would.
        self._on_interrupt = on_interrupt or (
            "interrupted: the command got Ctrl-C in the `oh run` shell. If it ignores "
            "Ctrl-C, `oh run --wait` shows it still running and `oh run --reset` kills it."
            if shell
            else "interrupted."
        )
        self._next_id = 1
        try:
            self._conn = ws.Connection.open(
                session["host"], int(session["port"]), "/v1/agent", headers, unix=ws.unix_of(session)
            )
        except ws.WsError as exc:
            if exc.kind == "auth":
                raise OhError(
                    f"{exc}: the token in its session file is stale.",
                    AUTH,
                    "Retry (the token may be mid-rotation), or see `oh doctor`.",
                ) from None
            raise OhError(str(exc) + ".", UNREACHABLE, _HINT_STATUS) from None

    def ask(self, action: dict, *, watch=None) -> dict:
        """Send ``action`` with the next id; return its observation. ``watch`` (``Watch``) gets the action's
        progress frames; on Ctrl-C it may name a follow-up (the command's C-c), after which the answer is
        awaited ``INTERRUPT_GRACE`` s more, as a terminal shows how a command ends; a second Ctrl-C leaves."""
        extra = {"progress": watch.events} if watch is not None else {}
        aid = self._next_id
        try:
            aid = self._send(dict(action, **extra))
            return self._answer(aid, watch)
        except KeyboardInterrupt:
            follow_up, said = watch.interrupted() if watch is not None else (None, "")
        message = said or self._on_interrupt
        if follow_up is None:
            raise OhError(message, INTERRUPTED)
        try:
            self._send(follow_up)
            watch.interrupted_sent = True
            return self._answer(aid, watch, within=INTERRUPT_GRACE)
        except (KeyboardInterrupt, OhError):
            raise OhError(message, INTERRUPTED) from None

    def _send(self, action: dict) -> int:
        aid, self._next_id = self._next_id, self._next_id + 1
        try:
            self._conn.send_text(fastjson.dumps(dict(action, id=aid)).encode("utf-8", "surrogatepass"))
        except ws.WsError as exc:
            raise OhError(str(exc) + ".", UNREACHABLE, _HINT_STATUS) from None
        return aid

    def _answer(self, aid: int, watch=None, within: float | None = None) -> dict:
        import time

        deadline = None if within is None else time.monotonic() + within
        try:
            while True:
                left = None if deadline is None else max(deadline - time.monotonic(), 0.001)
                obs = fastjson.loads(self._conn.recv_text(left))
                if not isinstance(obs, dict) or obs.get("cause") != aid:
                    continue
                if obs.get("type") == "progress":
                    if watch is not None:
                        watch(obs)
                    continue
                return obs
        except ws.WsError as exc:
            raise OhError(str(exc) + ".", UNREACHABLE, _HINT_STATUS) from None
        except (ValueError, UnicodeDecodeError):
            raise OhError("the backend sent a frame that is not JSON.", UNREACHABLE, _HINT_STATUS) from None

    def close(self) -> None:
        self._conn.close()


def _extras(obs: dict) -> dict:
    return obs.get("extras") or {}


def error_exit(error_id: str) -> int:
    if error_id == "TIMEOUT":
        return TIMEOUT
    if error_id in ("NO_EDITOR", "EDITOR_DISCONNECTED"):
        return NO_EDITOR
    if error_id == "BAD_REQUEST":
        return USAGE
    return ACTION_FAILED


def finish(io: Streams, obs: dict, json_: bool, *, show_content: bool = True) -> int | None:
    """Print the observation; an exit code when it was an error, else None."""
    if json_:
        io.json(obs)
    if obs.get("observation") == "error":
        eid = _extras(obs).get("error_id") or ""
        if not json_:
            io.note(f"{eid}: {cli_advice(str(obs.get('content', '')))}")
        return error_exit(eid)
    content = obs.get("content") or ""
    if not json_ and show_content and content:
        io.write(content if content.endswith("\n") else content + "\n")
    if not json_:
        for note in shell_notes(obs) + suffix_notes(obs):
            io.note("note: " + note)
        line = branch_note(obs, in_content=not show_content)
        if line:
            io.note(line)
    return None


def shell_notes(obs: dict) -> list[str]:
    """The agent shell's notes in a run's prefix (``[...]`` lines: the clean-shell fallback, a fixed rc
    setting, a vanished directory). The backend says each once, so the user reads each once, on stderr."""
    md = _extras(obs).get("metadata") if obs.get("observation") == "run" else None
    prefix = (md or {}).get("prefix")
    if not isinstance(prefix, str):
        return []
    return [
        line[1:-1]
        for line in prefix.splitlines()
        if line.startswith("[")
        and line.endswith("]")
        and not line.startswith((_BRANCH_NOTE, "[Below is the output"))
        # the sandbox's level is for the agent (how to ask to leave it); the user sees it in `oh status` and
        # the live view. Only "no sandbox" (an unconfined fallback) is said on the terminal too.
        and (not line.startswith("[Sandbox: ") or line.startswith("[Sandbox: none"))
    ]


def suffix_notes(obs: dict) -> list[str]:
    """The ``[...]`` notes after a finished command's output (issue 41: `oh run` dropped them): the shell reset
    after `exit N`, review's "changes held as h3", a repetition warning. A command that did not finish (exit
    code -1: timed out, still running, input sent) is explained by ``run``'s own words instead."""
    md = _extras(obs).get("metadata") if obs.get("observation") == "run" else None
    suffix = (md or {}).get("suffix")
    code = (md or {}).get("exit_code")
    if not isinstance(suffix, str) or not isinstance(code, int) or code < 0:
        return []
    return [
        line.strip()[1:-1]
        for line in suffix.splitlines()
        if line.strip().startswith("[") and line.strip().endswith("]")
    ]


_BRANCH_NOTE = "[oh] Branch mode: "


def branch_note(obs: dict, *, in_content: bool = True) -> str | None:
    """Branch mode's line on the first change (runtimes/branch.py puts it in a run's prefix, else the
    content): for stderr, where the user sees it even when the content is not printed (`oh write`)."""
    md = _extras(obs).get("metadata") if obs.get("observation") == "run" else None
    where = [(md or {}).get("prefix") or ""] + ([obs.get("content") or ""] if in_content else [])
    for text in where:
        if isinstance(text, str) and text.startswith(_BRANCH_NOTE):
            return "branch mode: " + text[len(_BRANCH_NOTE) :].split("\n", 1)[0]
    return None


def check_truncation(io: Streams, obs: dict, quiet: bool) -> None:
    """The backend drops the middle of long output; say so on stderr."""
    if quiet:
        return
    content = obs.get("content") or ""
    end = content.find(_TRUNCATED[1])
    begin = content.rfind(_TRUNCATED[0], 0, end) if end >= 0 else -1
    count = content[begin + len(_TRUNCATED[0]) : end] if begin >= 0 else ""
    if count.isdigit():
        io.note(
            f"note: the output was truncated: {plural(int(count), 'character')} in the middle were left out. "
            "Get all of it with `--max-output 0`, or send it to a file inside the command (`cmd > out.txt`)."
        )


# ---------------------------------------------------------------------------- verbs
def _refusal(obs: dict) -> str | None:
    """BUSY / NO_COMMAND, also in the shape of backends before jobs (a run observation with exit code -1)."""
    if obs.get("observation") == "error":
        return {"BUSY": "BUSY", "NO_COMMAND": "NO_COMMAND"}.get(_extras(obs).get("error_id") or "")
    if obs.get("observation") == "run" and (_extras(obs).get("metadata") or {}).get("exit_code") == -1:
        content = obs.get("content") or ""
        if content.startswith('[Your command "') and "is NOT executed" in content:
            return "BUSY"
        if content.startswith("ERROR: No previous running command"):
            return "NO_COMMAND"
    return None


def _editors(session: dict) -> list | None:
    """The backend's connected editors (its /v1/status), or None when it cannot be asked."""
    try:
        status, body = ws.http_get(
            session["host"], int(session["port"]), "/v1/status", session["token"], timeout=2.0, unix=ws.unix_of(session)
        )
        return fastjson.loads(body).get("editors") if status == 200 else None
    except (ws.WsError, ValueError, AttributeError):
        return None


def _wait_for_editor_note(io: Streams, session: dict, timeout: float | None = None) -> bool:
    """Runtime vscode with no editor connected: say at once that (and how long) we wait; whether it did."""
    if _editors(session) == []:
        wait = float(session.get("editor_timeout") or 30)
        if timeout:  # the action's timeout bounds the editor wait too (protocol/budget.editor_wait)
            wait = min(wait, float(timeout))
        io.note(
            f"no editor is connected to this backend (runtime vscode): waiting up to {wait:g} s for VS Code "
            f"to open {session['workspace']} with the oh extension... (Ctrl-C to give up)"
        )
        if not _on_path("code"):
            io.hint("`code` is not on PATH, so oh cannot open VS Code for you: open that folder in VS Code yourself.")
        return True
    return False


def _on_path(program: str) -> bool:
    """shutil.which without importing shutil (fnmatch, re...)."""
    return any(os.access(os.path.join(d, program), os.X_OK) for d in os.environ.get("PATH", "").split(os.pathsep) if d)


def _check_unsandboxed(reason: str | None, mode: str, flag: str = "--unsandboxed") -> None:
    """Usage errors of ``--unsandboxed`` / ``--network`` before anything is sent (the backend checks them too)."""
    if reason is None:
        return
    if mode != "command":
        raise OhError(f"{flag} asks to run a new command with more than the sandbox gives: not with --{mode}.", USAGE)
    if not reason.strip():
        raise OhError(f'{flag} needs the reason the user is asked with, e.g. {flag} "npm ci needs the network".', USAGE)


def check_escalation(unsandboxed: str | None, network: str | None, mode: str) -> None:
    if unsandboxed is not None and network is not None:
        raise OhError("--unsandboxed already includes the network: give one of --unsandboxed and --network.", USAGE)
    _check_unsandboxed(unsandboxed, mode)
    _check_unsandboxed(network, mode, "--network")


def _run_action(
    session: dict,
    command: list[str],
    mode: str,
    text: str | None,
    timeout: float | None,
    cwd: str | None,
    max_output: int | None,
    unsandboxed: str | None = None,
    network: str | None = None,
) -> dict:
    """The ``run`` frame of ``oh run`` in ``mode`` (usage errors raised here)."""
    check_escalation(unsandboxed, network, mode)
    line = ""
    if command:
        if len(command) == 1:
            line = command[0]
        else:
            line = " ".join(shell_quote(word) for word in command)
    if mode in ("input", "interrupt", "wait") and command:
        raise OhError(
            f"--{mode} acts on the command already running: give no command with it (or use --reset -- COMMAND).", USAGE
        )
    if mode == "command" and not line.strip():
        raise OhError(
            (
                "give a command (e.g. `oh run -- ls -la`); to act on a running one use --wait, --input, "
                "--interrupt or --reset."
            ),
            USAGE,
        )
    if mode == "input":
        action = actions.run(text or "", is_input=True, timeout=timeout, max_output=max_output)
    elif mode == "interrupt":
        action = actions.run("C-c", is_input=True, timeout=timeout, max_output=max_output)
    elif mode == "wait":
        action = actions.run("", timeout=timeout, max_output=max_output)
    else:  # command, or reset (then the command, if any)
        # The cwd always explicit: the shared shell/terminal keeps the last command's cwd otherwise.
        action = actions.run(
            line,
            blocking=timeout is not None and bool(line),
            reset=mode == "reset",
            timeout=timeout,
            cwd=resolve(cwd, session) if cwd else base_dir(session),
            max_output=max_output,
            unsandboxed=unsandboxed,
            network=network,
        )
    return action


def _run_refused(io: Streams, obs: dict, refused: str, mode: str, json_: bool) -> int:
    """What ``oh run`` says when the backend refused the action (BUSY, or no command to act on)."""
    if json_:
        io.json(obs)
    elif refused == "BUSY":
        io.note("not run: a command is still running in the `oh run` shell. You can " + NEXT_STEPS + ".")
    elif mode == "reset":  # only a backend from before `args.reset` answers a reset like this
        io.note(
            "this backend cannot reset the `oh run` shell (it predates --reset); restart it: `oh stop`, "
            "then `oh start`."
        )
    else:
        io.note(
            "nothing is running in the `oh run` shell: there is no output to wait for and nothing to send input to."
        )
    return ACTION_FAILED


def run(
    io: Streams,
    session: dict,
    *,
    command: list[str],
    mode: str = "command",
    text: str | None = None,
    timeout: float | None = None,
    cwd: str | None = None,
    max_output: int | None = None,
    unsandboxed: str | None = None,
    network: str | None = None,
    json_: bool = False,
    quiet: bool = False,
) -> int:
    """``mode``: command | input | interrupt | wait | reset (reset runs ``command`` after, if any).
    ``unsandboxed``: the reason to run ``command`` outside the sandbox; ``network``: the reason it needs the
    network (it stays in the sandbox otherwise); asked either way (README "Sandbox")."""
    action = _run_action(session, command, mode, text, timeout, cwd, max_output, unsandboxed, network)
    # On a terminal the output comes as it is printed (issue 30 #1); a pipe gets the observation's text,
    # rendered and bounded by --max-output, as before (what an agent calling `oh run` reads).
    watch = None if quiet else Watch(io, stream=io.tty and not json_, run=True, jobs=session.get("runtime") == "local")
    obs = exchange(io, session, action, shell=CLI_SHELL, announce=not (quiet or json_), watch=watch)
    streamed = watch is not None and watch.streamed
    if watch is not None and streamed and watch.open_line:
        io.write("\n")
    if watch is not None and streamed and watch.dropped:
        io.note(f"{plural(watch.dropped, 'character')} of output were not shown live (the terminal fell behind).")
    refused = _refusal(obs)
    if refused:
        return _run_refused(io, obs, refused, mode, json_)
    code = finish(io, obs, json_, show_content=not streamed)
    if code is not None:
        return code
    check_truncation(io, obs, quiet or json_ or streamed)
    metadata = _extras(obs).get("metadata") or {}
    exit_code = metadata.get("exit_code")
    if watch is not None and watch.interrupted_sent and not json_ and isinstance(exit_code, int) and exit_code >= 0:
        io.note(f"interrupted: the command got Ctrl-C in the `oh run` shell and ended (exit code {exit_code}).")
    if exit_code is None or exit_code < 0:
        from ..text.fmt import timeout_of  # only here: the common case never pays for it

        how = timeout_of(obs)
        suffix = (metadata.get("suffix") or "").strip().strip("[]").strip()
        first = suffix.split(". ")[0].rstrip(".") if suffix else ""
        if mode in ("input", "interrupt") and first == "Input sent":
            # Another `oh run` waits for that command and gets its output and exit code: the input did
            # its job (issue 30 #6). Both runtimes word it so (docs/protocol.md §3.4).
            if not json_ and not quiet:
                io.note("sent; the `oh run` that waits for that command shows its output and exit code.")
            return 0
        if how in ("killed", "interrupted"):  # a hard timeout stopped it: nothing is left running
            if not json_:
                io.note(f"{first}; nothing is left running in the `oh run` shell.")
            return TIMEOUT
        if how == "running" or "no new output" in first:
            if not json_:
                io.note(f"{first}. It is still running: you can {NEXT_STEPS}.")
            return TIMEOUT
        if not json_:  # no timeout and no exit code (an editor's terminal that reported none): say only that
            io.note(f"the command ended without an exit code{': ' + first if first else ''}.")
        return 1
    return exit_code if 0 <= exit_code <= 255 else 1


def read(
    io: Streams, session: dict, *, path: str, start: int = 1, end: int = -1, json_: bool = False, quiet: bool = False
) -> int:
    """``--start``/``--end`` count as editors do (1-based, both inclusive: ``--start 1 --end 1`` is the first
    line, as in ``oh open FILE:42``); the wire's FileReadAction is 0-based with an exclusive end
    (docs/protocol.md §3.1)."""
    if start < 1:
        raise OhError(f"--start must be 1 or more (got {start}); lines are counted from 1, as in an editor.", USAGE)
    if end != -1 and end < start:
        raise OhError(
            (
                f"--end must be --start ({start}) or more, or -1 for the end of the file (got {end}); both lines "
                "are included."
            ),
            USAGE,
        )
    action = actions.read(resolve(path, session), start=start - 1, end=end)
    code = finish(io, exchange(io, session, action, announce=not (quiet or json_)), json_)
    return code or 0


def write(
    io: Streams,
    session: dict,
    *,
    path: str,
    content: str,
    json_: bool = False,
    quiet: bool = False,
    if_version: str | None = None,
    force: bool = False,
) -> int:
    """``if_version``/``force``: several agents (docs/protocol.md §3.18; a stale write is refused, exit 1)."""
    frame = actions.write(resolve(path, session), content, if_version=if_version, force=force)
    obs = exchange(io, session, frame, announce=not (quiet or json_))
    code = finish(io, obs, json_, show_content=False)
    if code is not None:
        return code
    if not json_ and not quiet:
        size = len(content.encode("utf-8", "surrogatepass"))
        io.print(f"wrote {plural(size, 'byte')} to {_extras(obs).get('path') or path}")
    return 0


EDIT_MODES = ("create", "replace", "insert", "undo", "view")


def _given(pair: tuple[Any, str] | None, what: str) -> tuple[Any, str]:
    """An edit mode's two values (the mode is picked from the ones given, so they are there)."""
    if pair is None:
        raise OhError(f"{what}: missing.", USAGE)
    return pair


def edit(
    io: Streams,
    session: dict,
    *,
    path: str,
    mode: str,
    create: str | None = None,
    replace: tuple[str, str] | None = None,
    insert: tuple[int, str] | None = None,
    json_: bool = False,
    quiet: bool = False,
    if_version: str | None = None,
    force: bool = False,
) -> int:
    target = resolve(path, session)
    guard: dict = {"if_version": if_version, "force": force} if mode != "view" else {}
    if mode == "create":
        action = actions.edit(target, "create", file_text=create, **guard)
    elif mode == "replace":
        old, new = _given(replace, "--replace OLD NEW")
        action = actions.edit(target, "str_replace", old_str=old, new_str=new, **guard)
    elif mode == "insert":
        line, text = _given(insert, "--insert LINE TEXT")
        if line < 0:
            raise OhError(f"--insert LINE must be 0 (the top) or more (got {line}).", USAGE)
        action = actions.edit(target, "insert", insert_line=line, new_str=text, **guard)
    else:
        action = actions.edit(target, "undo_edit" if mode == "undo" else "view", **guard)
    obs = exchange(io, session, action, announce=not (quiet or json_))
    code = finish(io, obs, json_, show_content=not (quiet and mode != "view"))
    return code or 0


def _first_words(text: str, limit: int) -> str:
    """A progress line as it goes by: whole when short, else cut between words with a visible "…" (the
    answer that follows says it all; an `oh ensure` step was cut mid-word: "which the sandbox ke")."""
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"
