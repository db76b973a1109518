"""``oh share``: give an agent elsewhere (a container, another machine) this workspace's backend, and nothing more.

Thin: parse, call launcher/share.py (or launcher/sshlink.py for ``oh share ssh``), print. docs/security.md §9.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional

import typer

from ._common import ERROR, USAGE, die, distrust_sandbox, load_settings, pick_session, target_options
from ._io import Streams

EPILOG = (
    "Exit codes: 0 ok · 1 failed · 2 usage · 3 no running backend. The credential gives agents of this "
    "workspace only (never the editor's or the decider's credential); `oh share revoke ID` or `oh token rotate` "
    "ends it at once. README: Agents elsewhere."
)

app = typer.Typer(
    help=(
        "Share this workspace's backend with an agent elsewhere: a container (--docker, --devcontainer) or "
        "another machine (`oh share ssh`)."
    ),
    epilog=EPILOG,
    invoke_without_command=True,
)
_WORKSPACE, _INSTANCE = target_options()
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


DEFAULT_TTL = "24h"  # a share is a credential: one forgotten must not work for ever (issue 41)


def parse_ttl(text: Optional[str]) -> Optional[float]:
    """``90``, ``90s``, ``30m``, ``8h``, ``7d`` -> seconds; None or ``never`` = no expiry."""
    if text is None or text.strip().lower() == "never":
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not m or float(m.group(1)) <= 0:
        die(f"--ttl {text!r}: give a duration like 90s, 30m, 8h or 7d, or `never`.", USAGE)
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def _fail(exc: Exception) -> None:
    text = str(exc)
    die(text if text.endswith((".", "!", "?")) else f"{text}.", ERROR)  # the backend's words may end a sentence


@app.callback()
def share(
    ctx: typer.Context,
    ttl: str = typer.Option(
        DEFAULT_TTL,
        "--ttl",
        metavar="DURATION",
        help=f"Expire after DURATION (90s, 30m, 8h, 7d; default {DEFAULT_TTL}; `never`: until revoked).",
    ),
    docker: bool = typer.Option(
        False, "--docker", help="Print the exact `docker run` flags (socket, credential, workspace at /workspace)."
    ),
    devcontainer: bool = typer.Option(
        False, "--devcontainer", help="Print the devcontainer.json mounts and remoteEnv."
    ),
    write: bool = typer.Option(
        False, "--write", help="With --devcontainer: merge them into .devcontainer/devcontainer.json."
    ),
    maps: Optional[List[str]] = typer.Option(
        None,
        "--map",
        metavar="AGENT=HOST",
        help="The agent sees HOST at AGENT (default with --docker: /workspace=<workspace>).",
    ),
    where: Optional[str] = typer.Option(
        None, "--where", metavar="LABEL", help="Where the agent runs (shown on its actions)."
    ),
    json_: bool = typer.Option(
        False, "--json", help="Machine-readable output (includes the credential file's path, never the credential)."
    ),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
) -> None:
    """Create a share: a credential for agents of this workspace only, and the environment that finds it \
(OH_URL, OH_TOKEN_FILE)."""
    if ctx.invoked_subcommand is not None:
        return
    raise typer.Exit(
        run_share(
            Streams.system(),
            ttl=parse_ttl(ttl),
            docker=docker,
            devcontainer=devcontainer,
            write=write,
            maps=list(maps or []),
            where=where,
            json_=json_,
            workspace=workspace,
            instance=instance,
        )
    )


def run_share(io: Streams, *, ttl, docker, devcontainer, write, maps, where, json_, workspace, instance) -> int:
    from ..launcher import share as svc

    if docker and devcontainer:
        die("--docker and --devcontainer: choose one.", USAGE)
    if write and not devcontainer:
        die("--write goes with --devcontainer.", USAGE)
    session = pick_session(workspace, instance)
    agent_ws = session.workspace
    if docker:
        agent_ws = svc.CONTAINER_WORKSPACE
    elif devcontainer:
        agent_ws = svc.default_devcontainer_workspace(session.workspace)
    for m in maps:  # an explicit map of the workspace root says where the agent sees it
        agent, _, host = m.partition("=")
        if host.rstrip("/") == session.workspace.rstrip("/"):
            agent_ws = agent
    if agent_ws != session.workspace and not any(m.partition("=")[2].rstrip("/") == session.workspace for m in maps):
        maps = [f"{agent_ws}={session.workspace}", *maps]
    label = where or ("docker" if docker else "devcontainer" if devcontainer else "elsewhere")
    try:
        kind = "docker" if docker else "devcontainer" if devcontainer else "env"
        made = svc.create(session, where=label, ttl=ttl, maps=maps, agent_workspace=agent_ws, kind=kind)
        written = (
            svc.write_devcontainer(made, Path(session.workspace) / ".devcontainer" / "devcontainer.json")
            if write
            else None
        )
    except svc.ShareFailed as exc:
        _fail(exc)
    if json_:
        io.json(
            {
                **made.share,
                "socket": made.socket,
                "token_file": str(made.token_file),
                "connect_file": str(made.connect_file),
                "env": made.env(),
                **({"docker": svc.docker_args(made)} if docker else {}),
                **({"devcontainer": svc.devcontainer(made)} if devcontainer else {}),
                **({"written": str(written)} if written else {}),
            }
        )
        return 0
    _print_made(io, svc, made, docker=docker, devcontainer=devcontainer, written=written)
    return 0


def _print_made(io: Streams, svc, made, *, docker: bool, devcontainer: bool, written) -> None:
    import json

    from ..text.fmt import fmt_duration

    s = made.share
    expires = f"expires in {fmt_duration(s['expires_at'] - s['created'])}" if s.get("expires_at") else "no expiry"
    io.note(f"share {s['share_id']} ({s['where']}, {expires}); end it with `oh share revoke {s['share_id']}`.")
    if docker:
        io.print(svc.docker_flags(made))
        io.note(
            "e.g. docker run --rm -it $(oh share --docker) IMAGE oh run 'ls' (the socket is 0600: the "
            "container runs as you)."
        )
    elif devcontainer:
        if written:
            io.note(f"merged into {written}; rebuild the container to use it.")
        else:
            io.print(json.dumps(svc.devcontainer(made), indent=2))
    else:
        for k, v in made.env().items():
            io.print(f"export {k}={v}")
        io.note(f"or point OH_CONNECT at {made.connect_file}.")


@app.command("list")
def list_(
    json_: bool = typer.Option(False, "--json", help="Machine-readable output."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
) -> None:
    """The backend's active shares (id, where, expiry, path map, link state)."""
    from ..launcher import share as svc

    io = Streams.system()
    try:
        rows = svc.listing(pick_session(workspace, instance))
    except svc.ShareFailed as exc:
        _fail(exc)
    if json_:
        io.json(rows)
        raise typer.Exit(0)
    if not rows:
        io.note("no shares (create one with `oh share`).")
    for line in share_lines(rows):
        io.print(line)


def share_lines(rows) -> list[str]:
    """One line per share: the renderer of `oh status` (text/status.py), without its indentation."""
    from ..text.status import remote_lines

    return [line.replace("  share      ", "", 1) for line in remote_lines({"shares": rows})]


@app.command()
def revoke(
    share_id: str = typer.Argument(..., metavar="ID", help="The share to end (see `oh share list`)."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
) -> None:
    """End a share now: its credential stops working and its agents' connections are closed."""
    from ..launcher import share as svc

    io = Streams.system()
    try:
        answer = svc.revoke(pick_session(workspace, instance), share_id)
    except svc.ShareFailed as exc:
        _fail(exc)
    io.note(f"share {share_id} revoked; {answer.get('closed', 0)} connection(s) closed.")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def ssh(
    ctx: typer.Context,
    destination: str = typer.Argument(..., metavar="[USER@]HOST", help="Where the agent runs (anything `ssh` takes)."),
    ttl: Optional[str] = typer.Option(None, "--ttl", metavar="DURATION", help="Expire after DURATION."),
    remote_dir: Optional[str] = typer.Option(
        None,
        "--remote-dir",
        metavar="DIR",
        help=(
            "The remote directory for the socket and connect file (default: the remote oh state dir, where the "
            "agent looks; with DIR the agent needs OH_CONNECT=DIR/connect.json)."
        ),
    ),
    maps: Optional[List[str]] = typer.Option(
        None, "--map", metavar="AGENT=HOST", help="Path map (the remote checkout at AGENT)."
    ),
    resume: Optional[str] = typer.Option(
        None,
        "--resume",
        metavar="ID",
        help="Link an existing ssh share again (after `oh stop; oh start`): same credential, no new share.",
    ),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
) -> None:
    """Share with an agent on another machine over your `ssh` (-R forward of the socket); runs until Ctrl-C. \
Options after `--` go to ssh."""
    from ..launcher import sshlink

    io = Streams.system()
    if resume and (ttl or maps):
        die("--resume keeps the share's own expiry and path map: drop --ttl and --map.", USAGE)
    session = pick_session(workspace, instance)
    distrust_sandbox(load_settings(), session.workspace)  # ssh is never found where the agent can write
    try:
        code = sshlink.run(
            io,
            session,
            destination,
            ssh_options=list(ctx.args),
            ttl=parse_ttl(ttl),
            remote_dir=remote_dir,
            maps=list(maps or []),
            resume=resume,
        )
    except sshlink.LinkFailed as exc:
        die(str(exc), ERROR, exc.hint)
    raise typer.Exit(code)
