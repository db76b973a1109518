"""``oh token show|rotate``."""

from __future__ import annotations

import os

import typer

from ._common import ERROR, USAGE, die, err, print_json

app = typer.Typer(
    help="Show where the token lives, or rotate it (running backends switch live).",
    epilog="Exit codes: 0 ok · 1 failed (no token, some backend not updated) · 2 OH_TOKEN is set (rotate).",
    no_args_is_help=True,
)


@app.command()
def show(
    reveal: bool = typer.Option(False, "--reveal", help="Print the bare token alone on stdout (for scripts)."),
    json_: bool = typer.Option(False, "--json", help="Machine-readable output (never includes the token)."),
) -> None:
    """Where the token is stored (keyring backend or fallback file) and its fingerprint."""
    from ..config import secrets

    token, storage = secrets.get_token()
    if reveal:
        if not token:
            die("no token stored yet.", ERROR, "One is created by `oh start` or `oh token rotate`.")
        typer.echo(token)
        return
    info = {
        "stored": bool(token),
        "storage": storage.kind,
        "backend": storage.backend,
        "detail": storage.detail or None,
        "secure": storage.secure,
        "fingerprint": secrets.fingerprint(token) if token else None,
    }
    if storage.kind == "file":
        info["path"] = storage.backend
    if json_:
        print_json(info)
        return
    typer.echo(f"storage      {storage.describe()}")
    typer.echo(f"fingerprint  {info['fingerprint'] or '(no token yet: `oh start` or `oh token rotate` creates one)'}")
    if storage.kind == "keyring" and not storage.secure:
        err("warning: this keyring backend stores the token unencrypted on disk.")


@app.command()
def rotate(json_: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Store a new token and switch every running backend to it live.

    Connections opened with the old token are closed (code 4001); editors re-read the new token
    from the session file and reconnect.
    """
    from ..config import secrets
    from ..launcher import sessions
    from ..launcher.control import BackendUnreachable, control

    if os.environ.get(secrets.ENV):
        die("OH_TOKEN is set in the environment and overrides the stored token.", USAGE, "Unset it to rotate the stored token, or change OH_TOKEN yourself.")
    new = secrets.new_token()
    storage = secrets.store_token(new)
    updated, failed = [], []
    for s in sessions.list_sessions():
        try:
            answer = control(s, {"type": "rotate_token", "token": new})  # authenticated with the OLD token
            if answer.get("type") != "ok":
                raise BackendUnreachable(f"answered {answer.get('type')}: {answer.get('message', '')}")
            updated.append({"instance_id": s.instance_id, "closed": answer.get("closed", 0)})
        except BackendUnreachable as exc:
            failed.append({"instance_id": s.instance_id, "error": str(exc)})
    result = {"fingerprint": secrets.fingerprint(new), "storage": storage.kind, "backend": storage.backend, "updated": updated, "failed": failed}
    if json_:
        print_json(result)
    else:
        typer.echo(f"new token stored in {storage.describe()}; fingerprint {result['fingerprint']}")
        closed = sum(u["closed"] for u in updated)
        typer.echo(f"{len(updated)} running backend(s) updated" + (f", {closed} connection(s) closed (they reconnect with the new token)" if updated else ""))
    for f in failed:
        err(f"backend {f['instance_id']} not updated: {f['error']}. Restart it: `oh stop {f['instance_id']}` then `oh start`.")
    if failed:
        raise typer.Exit(ERROR)
