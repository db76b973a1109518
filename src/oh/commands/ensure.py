"""``oh ensure``: make the workspace's environments ready (docs/protocol.md §3.14).

One ``ensure`` action through the backend (``oh.fastpath.verbs.exchange``, the agent verbs' wire
code): Python (``.venv`` from uv.lock / poetry.lock / requirements*.txt / pyproject.toml) and Node
(``node_modules`` with the lockfile's own installer). The installs run as background jobs in the
backend, shared with every agent asking at the same time; a second call with nothing changed is a
no-op. Exit codes: 0 ready (or, with --no-wait, started); 1 not ready (a failed, cancelled or refused
target: the text says why); 124 still installing when --timeout passed (the install goes on: run
`oh ensure` again to wait for it); the usual codes otherwise (`oh --help`).
"""

from __future__ import annotations

from typing import List, Optional

import typer

from ._common import EXIT_CODES_HELP, USAGE, OhError, pick_session, target_options
from ._io import Streams

EPILOG = EXIT_CODES_HELP + " oh ensure: 0 ready, 1 not ready (the text says why), 124 still installing after --timeout."

_WORKSPACE, _INSTANCE = target_options()
TARGETS = ("python", "node")


def _complete_target(incomplete: str):
    return [(t, h) for t, h in (("python", ".venv"), ("node", "node_modules")) if t.startswith(incomplete)]


def ensure(
    path: Optional[str] = typer.Argument(
        None, metavar="DIR", help="The project directory (default: the current directory)."
    ),
    only: Optional[List[str]] = typer.Option(
        None,
        "--only",
        metavar="TARGET",
        help="Only this target: python or node (repeatable; default: every one detected).",
        autocompletion=_complete_target,
    ),
    force: bool = typer.Option(
        False, "--force", help="Redo the environments even when their stamps say they are up to date."
    ),
    no_wait: bool = typer.Option(
        False,
        "--no-wait",
        help=(
            "Start the installs and return at once with their job ids (follow one with `oh jobs wait JOB`, or run "
            "`oh ensure` again to wait for all)."
        ),
    ),
    timeout: Optional[float] = typer.Option(
        None,
        "--timeout",
        "-t",
        min=1.0,
        metavar="SECONDS",
        help="Wait at most this long (default: the backend's action timeout); the install goes on after it.",
    ),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = typer.Option(
        False, "--json", help="Print the observation as JSON (extras.targets: what is ready, what ran, how long)."
    ),
) -> None:
    """Make the project's environments ready: .venv (Python) and node_modules (Node); a no-op when nothing changed.

    Example: oh ensure && .venv/bin/python -m pytest
    """
    raise typer.Exit(
        run_ensure(
            Streams.system(),
            path=path,
            only=only or [],
            force=force,
            no_wait=no_wait,
            timeout=timeout,
            workspace=workspace,
            instance=instance,
            json_=json_,
        )
    )


def run_ensure(
    io: Streams,
    *,
    path: Optional[str] = None,
    only: Optional[List[str]] = None,
    force: bool = False,
    no_wait: bool = False,
    timeout: Optional[float] = None,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
) -> int:
    """``oh ensure``'s behaviour: 0 ready (or started with --no-wait), 1 not ready, 124 still installing."""

    from ..fastpath import verbs
    from ..fastpath.exits import ERROR, TIMEOUT
    from ..protocol.actions import ensure as ensure_action

    bad = [t for t in only or [] if t not in TARGETS]
    if bad:
        raise OhError(f"--only takes python or node (got {', '.join(bad)}).", USAGE)
    session = pick_session(workspace, instance).to_dict()
    action = ensure_action(
        targets=list(dict.fromkeys(only or [])) or None,
        path=verbs.resolve(path or ".", session),
        wait=not no_wait,
        force=force,
        timeout=timeout,
    )
    # Each install is said when it starts and ends (issue 30 #8: it was silent for seconds).
    watch = None if json_ else verbs.Watch(io, steps=True)
    obs = verbs.exchange(io, session, action, announce=not json_, watch=watch)
    if not json_ and isinstance(obs.get("content"), str):
        obs = dict(obs, content=_for_people(obs["content"]))
    code = verbs.finish(io, obs, json_)
    if code is not None:
        return code
    state = (obs.get("extras") or {}).get("state")
    if state == "failed":
        return ERROR
    if state == "running" and not no_wait:
        return TIMEOUT
    return 0


def _for_people(text: str) -> str:
    """The answer's advice in commands (it is worded for agents: the job action, args.job_id)."""
    import re

    text = re.sub(
        r"still installing as job (j\d+) \(`(.*?)`\): follow it with the job action \(op wait, poll, output, "
        r'cancel; args\.job_id "j\d+"\), or call ensure again to wait for it',
        r"started \1 (`\2`) — oh jobs wait \1 (or `oh ensure` again to wait for every target)",
        text,
    )
    return text.replace("the job action op output, args.job_id ", "oh jobs output ")
