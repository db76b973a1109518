"""``oh token show|rotate``."""

from __future__ import annotations

import os

import typer

from ._common import ERROR, USAGE, die
from ._io import Streams

app = typer.Typer(
    help="Show where the token lives, or rotate it (running backends switch live).",
    epilog=(
        "Exit codes: 0 ok · 1 failed (no token, an insecure token file, some backend not updated) · 2 OH_TOKEN is "
        "set (rotate)."
    ),
    no_args_is_help=True,
)


@app.command()
def show(
    reveal: bool = typer.Option(False, "--reveal", help="Print the bare token alone on stdout (for scripts)."),
    json_: bool = typer.Option(False, "--json", help="Machine-readable output (never includes the token)."),
) -> None:
    """Where the token is stored (keyring backend or fallback file, with its real mode and owner), its fingerprint, \
and the fingerprints running backends use."""
    raise typer.Exit(run_show(Streams.system(), reveal=reveal, json_=json_))


def run_show(io: Streams, *, reveal: bool = False, json_: bool = False) -> int:
    """``oh token show``'s behaviour."""
    from ..config import secrets
    from ..config.paths import UnsafePath

    refused: UnsafePath | None = None
    try:
        token, storage = secrets.get_token()
    except UnsafePath as exc:
        # Report what is there (mode, owner) instead of a bare refusal; never use or reveal it.
        if reveal:
            raise
        refused, token, storage = exc, None, secrets.storage()
        storage.secure = False
        storage.problem = storage.problem or exc.problem
    if reveal:
        if not token:
            die("no token stored yet.", ERROR, "One is created by `oh start` or `oh token rotate`.")
        io.print(token)
        return 0
    info = {
        "stored": bool(token) or refused is not None,
        "storage": storage.kind,
        "backend": storage.backend,
        "detail": storage.detail or None,
        "secure": storage.secure,
        "fingerprint": secrets.fingerprint(token) if token else None,
    }
    if storage.kind == "file":
        info.update(path=storage.backend, mode=storage.mode, owner_uid=storage.owner_uid, problem=storage.problem)
    if refused is not None:
        info["refused"] = {"path": refused.path, "problem": refused.problem, "fix": refused.fix}
    backends = _running_fingerprints(secrets, token)
    info["backends"] = backends
    if json_:
        io.json(info)
    else:
        io.print(f"storage      {storage.describe()}")
        io.print(f"fingerprint  {info['fingerprint'] or '(no token yet: `oh start` or `oh token rotate` creates one)'}")
        for b in backends:
            io.print(
                f"backend      {b['instance_id']} uses fingerprint {b['fingerprint']}"
                + ("" if b["same"] else " (a different token: see below)")
            )
        if storage.kind == "keyring" and not storage.secure:
            io.note("warning: this keyring backend stores the token unencrypted on disk.")
    _explain_mismatch(io, storage, backends)
    if refused is not None:
        io.note(f"refusing to use {refused.path}: {refused.problem}.")
        io.hint(f"fix: {refused.fix}")
        return ERROR
    if storage.kind == "file" and storage.problem:
        io.note(
            f"warning: the token file is insecure ({storage.problem}). Fix: chmod 600 {storage.backend}, then "
            "`oh token rotate` (it may have been copied)."
        )
    return 0


def _running_fingerprints(secrets, token: str | None) -> list[dict]:
    """Which token each running backend uses (fingerprints only): a backend keeps the token it was
    started with, so after exporting OH_TOKEN the two can differ -- say so instead of leaving the
    user with two unexplained fingerprints."""
    from .. import sessions

    try:
        found = sessions.list_sessions(clean=False)
    except Exception:  # noqa: BLE001 - `token show` must work even when the sessions dir is refused
        return []
    return [
        {
            "instance_id": s.instance_id,
            "fingerprint": secrets.fingerprint(s.token),
            "same": token is not None and s.token == token,
        }
        for s in found
    ]


def _explain_mismatch(io: Streams, storage, backends: list[dict]) -> None:
    other = [b for b in backends if not b["same"]]
    if not other:
        return
    ids = ", ".join(b["instance_id"] for b in other)
    if storage.kind == "env":
        io.note(
            f"note: OH_TOKEN overrides the stored token for commands you start now, but running backend(s) {ids} keep "
            "the token they were started with (`oh status` shows that fingerprint). Agent verbs use each backend's "
            "own token from its session file."
        )
    else:
        io.note(
            f"note: running backend(s) {ids} use a different token than the stored one (started with OH_TOKEN, or the "
            "store changed since). `oh token rotate` switches them all to a new stored token."
        )


@app.command()
def rotate(json_: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Store a new token and switch every running backend to it live.

    Connections opened with the old token are closed (code 4001); editors re-read the new token
    from the session file and reconnect.
    """
    raise typer.Exit(run_rotate(Streams.system(), json_=json_))


def run_rotate(io: Streams, *, json_: bool = False) -> int:
    """``oh token rotate``'s behaviour."""
    from .. import sessions
    from ..config import secrets
    from ..launcher.control import BackendUnreachable, control

    if os.environ.get(secrets.ENV):
        die(
            "OH_TOKEN is set in the environment and overrides the stored token.",
            USAGE,
            "Unset it to rotate the stored token, or change OH_TOKEN yourself.",
        )
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
    result = {
        "fingerprint": secrets.fingerprint(new),
        "storage": storage.kind,
        "backend": storage.backend,
        "updated": updated,
        "failed": failed,
    }
    if json_:
        io.json(result)
    else:
        io.print(f"new token stored in {storage.describe()}; fingerprint {result['fingerprint']}")
        closed = sum(u["closed"] for u in updated)
        io.print(
            f"{len(updated)} running backend(s) updated"
            + (f", {closed} connection(s) closed (they reconnect with the new token)" if updated else "")
        )
    for f in failed:
        io.note(
            f"backend {f['instance_id']} not updated: {f['error']}. Restart it: `oh stop {f['instance_id']}` "
            "then `oh start`."
        )
    return ERROR if failed else 0
