"""``oh approvals`` / ``oh approve ID`` / ``oh reject ID``: answer the actions that wait for your
consent (issue 19, docs/protocol.md §3.13) from any terminal.

Each is one ``approvals`` frame on the backend's control leg, sent with the session's decider
credential (the agent token may list but never decide). Commands and paths are agent-controlled:
printed through ``text.sanitize.visible``.
"""

from __future__ import annotations

from typing import Any, Optional

import typer

from ._common import ERROR, UNREACHABLE, USAGE, die, pick_session, target_options
from ._io import Streams

_WORKSPACE, _INSTANCE = target_options()
_JSON = typer.Option(False, "--json", help="Machine-readable output (the backend's answer).")
_HINTS = {
    "CONSENT_OFF": "Start the backend with `oh start --consent LEVEL` (or `oh config set consent risky`).",
    "FORBIDDEN": "This session file has no decider credential (an older backend?): restart it with `oh start`.",
}


def request(session: Any, frame: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """One approvals frame with the decider credential; raises BackendUnreachable."""
    from ..launcher.consent import request as send

    return send(session, frame, timeout)


def _ask(
    io: Streams, workspace: Optional[str], instance: Optional[str], frame: dict[str, Any], json_: bool
) -> dict[str, Any]:
    from ..launcher.control import BackendUnreachable

    session = pick_session(workspace, instance)
    try:
        answer = request(session, frame)
    except BackendUnreachable as exc:
        die(str(exc), UNREACHABLE, "Is the backend still running? `oh status` shows it.")
    if answer.get("type") == "error":
        if json_:
            io.json(answer)
            raise typer.Exit(USAGE if answer.get("error_id") == "BAD_REQUEST" else ERROR)
        from ..text.sanitize import visible

        code = str(answer.get("error_id", ""))
        die(
            visible(answer.get("message", "the backend refused the request")),
            USAGE if code == "BAD_REQUEST" else ERROR,
            _HINTS.get(code),
        )
    return answer


_WHAT = typer.Argument(
    None,
    metavar="pair|devices|revoke ID",
    help=(
        "pair: print a one-time code that makes a browser or phone a device of the approvals page; devices: list "
        "them; revoke ID: end one (`oh token rotate` ends them all)."
    ),
)


def approvals(
    what: Optional[list[str]] = _WHAT,
    web: bool = typer.Option(False, "--web", help="Print the approvals page's address (loopback; pair a device)."),
    open_: bool = typer.Option(False, "--open", help="With --web or pair: also open the page in a browser."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """List the actions waiting for your consent: id, agent, what, why, the agent's security_risk. With --web
    or pair/devices/revoke: the approvals page (README "Approvals from anywhere")."""
    if web or what:
        raise typer.Exit(
            run_web(
                Streams.system(),
                what=list(what or []),
                open_=open_,
                workspace=workspace,
                instance=instance,
                json_=json_,
            )
        )
    raise typer.Exit(run_approvals(Streams.system(), workspace=workspace, instance=instance, json_=json_))


def run_web(
    io: Streams,
    *,
    what: list[str],
    open_: bool = False,
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
    browser: Any = None,
) -> int:
    """``oh approvals --web | pair | devices | revoke ID``: the approvals page's ops on the control leg (decider)."""
    from ..text.sanitize import visible

    verb = what[0] if what else "web"
    if verb not in ("web", "pair", "devices", "revoke") or (verb == "revoke") != (len(what) == 2) or len(what) > 2:
        die("oh approvals takes pair, devices or revoke ID (or --web)", USAGE, "`oh approvals --help`")
    frame: dict[str, Any] = {"op": verb} if verb != "revoke" else {"op": "revoke", "device": what[1]}
    answer = _ask(io, workspace, instance, frame, json_)
    if json_:
        io.json(answer)
        return 0
    if verb == "web":
        io.print(f"approvals page: {visible(answer.get('url'))}  (pair a device: `oh approvals pair`)")
    elif verb == "pair":
        code = str(answer.get("code", ""))
        io.print(f"pairing code: {code[:5]}-{code[5:]}  (single use, valid {answer.get('ttl', 0):g} s)")
        io.print(f"open {visible(answer.get('url'))} on the device and type it there.")
        if io.tty and answer.get("url"):  # a phone reads the address from the screen (the code stays typed)
            io.write(qr_text(str(answer["url"])))
    elif verb == "devices":
        rows = answer.get("devices") or []
        for d in rows:
            io.print(f"{visible(d.get('id'))}  {visible(d.get('name'))}")
        if not rows:
            io.print("no paired devices (`oh approvals pair`)")
    else:
        io.print(f"revoked {visible(answer.get('device'))}")
    if open_ and answer.get("url"):
        _open(io, str(answer["url"]), browser)
    return 0


def _open(io: Streams, url: str, browser: Any) -> None:
    """Open the page if a browser is there; never fail when none is."""
    import webbrowser

    try:
        opened = (browser or webbrowser.open)(url)
    except Exception:  # noqa: BLE001 - no browser is no error: the address is printed
        opened = False
    if not opened:
        io.note("no browser to open here: open the address above yourself")


def run_approvals(
    io: Streams, *, workspace: Optional[str] = None, instance: Optional[str] = None, json_: bool = False
) -> int:
    from .approvalsview import render_list

    answer = _ask(io, workspace, instance, {"op": "list"}, json_)
    if json_:
        io.json(answer)
        return 0
    return render_list(io, answer)


def approve(
    approval_id: str = typer.Argument(..., metavar="ID", help="An id from `oh approvals` (e.g. c3)."),
    always: bool = typer.Option(
        False,
        "--always",
        "-a",
        help=(
            "Also allow it from now on: adds the rule `oh approvals` shows to config consent_allow (remove it "
            "with `oh config remove consent_allow RULE`)."
        ),
    ),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Allow a waiting action to run (once, or --always)."""
    raise typer.Exit(
        run_decide(
            Streams.system(),
            approval_id=approval_id,
            allow=True,
            always=always,
            workspace=workspace,
            instance=instance,
            json_=json_,
        )
    )


def reject(
    approval_id: str = typer.Argument(..., metavar="ID", help="An id from `oh approvals` (e.g. c3)."),
    reason: str = typer.Option("", "--reason", "-m", help="Why: the agent gets this text with the REJECTED error."),
    workspace: Optional[str] = _WORKSPACE,
    instance: Optional[str] = _INSTANCE,
    json_: bool = _JSON,
) -> None:
    """Refuse a waiting action: it is not run; the agent gets REJECTED with your reason."""
    raise typer.Exit(
        run_decide(
            Streams.system(),
            approval_id=approval_id,
            allow=False,
            reason=reason,
            workspace=workspace,
            instance=instance,
            json_=json_,
        )
    )


def run_decide(
    io: Streams,
    *,
    approval_id: str,
    allow: bool,
    always: bool = False,
    reason: str = "",
    workspace: Optional[str] = None,
    instance: Optional[str] = None,
    json_: bool = False,
) -> int:
    from ..text.sanitize import visible

    frame: dict[str, Any] = {"op": "allow" if allow else "reject", "id": approval_id, "via": "cli"}
    if always:
        frame["always"] = True
    if reason:
        frame["reason"] = reason
    answer = _ask(io, workspace, instance, frame, json_)
    results = answer.get("results") or []
    saved = None
    for r in results:
        if r.get("rules"):
            from ..launcher import consent as _consent

            saved = _consent.remember(list(r["rules"]))
    if json_:
        io.json({**answer, **({"saved_to": saved} if saved else {})})
    else:
        for r in results:
            io.print(
                f"{visible(r.get('id'))}: {visible(r.get('outcome'))}: {visible(r.get('what') or r.get('message'))}"
            )
            if r.get("rules"):
                io.print(
                    f"    always allowed from now on: {visible(', '.join(r['rules']))}"
                    + (f" (saved in {saved})" if saved else "")
                )
    return 0 if all(r.get("outcome") in ("allowed", "rejected") for r in results) else ERROR


def qr_text(url: str) -> str:
    """The page's address as a QR code drawn with half blocks (two modules per character row), dark on light so
    phones read it on a dark terminal too. Only the address: the pairing code is typed, never put in a URL."""
    import io as _io

    import qrcode  # a well-kept encoder (error correction, versions, masks): not something to hand-write

    code = qrcode.QRCode(border=2, error_correction=qrcode.constants.ERROR_CORRECT_M)
    code.add_data(url)
    code.make(fit=True)
    out = _io.StringIO()
    code.print_ascii(out=out, invert=True)
    return out.getvalue()
