"""``oh approvals``' listing without typer or ``websockets``: ``oh.commands.quick`` runs a bare ``oh approvals``
(and ``--json``) from here, and ``oh.commands.approvals`` (the typer part) renders with the same ``render_list``,
so both paths print the same (tests/cli/test_fast_help.py compares them).

The fast route asks the backend over ``oh.fastpath.ws`` (a plain-socket WebSocket client: importing
``websockets`` alone costs ~5x the interpreter's start). It answers only the ordinary case, a local backend
whose session file holds the decider credential and that answers the list; anything else (no backend, an
agent elsewhere, a refusal, an error answer) returns None and the typer command asks again and words it.
Listing changes nothing on the backend, so asking twice is harmless.
"""

from __future__ import annotations

from ._io import Streams


def fast_list(io: Streams, json_: bool) -> int | None:
    """The exit code when this route answered, None to hand over to the full command."""
    from ..fastpath import discover, fastjson, ws

    session = discover.pick(None, None)
    if session is None or not session.get("decider_token"):
        return None
    headers = {"Authorization": f"Bearer {session['decider_token']}"}
    try:
        conn = ws.Connection.open(
            session["host"], int(session["port"]), "/v1/control", headers, timeout=10.0, unix=ws.unix_of(session)
        )
        try:
            conn.send_text(fastjson.dumps({"type": "approvals", "op": "list"}).encode("utf-8"))
            answer = fastjson.loads(conn.recv_text(timeout=10.0))
        finally:
            conn.close()
    except (ws.WsError, OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(answer, dict) or answer.get("type") == "error":
        return None
    if json_:
        io.json(answer)
        return 0
    return render_list(io, answer)


def render_list(io: Streams, answer: dict) -> int:
    """The backend's approvals list as ``oh approvals`` prints it. Commands and paths are agent-controlled:
    printed through ``text.sanitize.visible``."""
    from ..text.fmt import fmt_duration
    from ..text.sanitize import visible

    rows = answer.get("approvals") or []
    io.print(f"consent: {answer.get('level', '?')}, {len(answer.get('rules') or [])} rule(s)")
    if not rows:
        io.print("Nothing waits for your consent.")
        return 0
    for r in rows:
        age = fmt_duration(float(r["age_s"])) if isinstance(r.get("age_s"), (int, float)) else "?"
        risk = f"  security_risk {visible(r.get('security_risk'))}" if r.get("security_risk") else ""
        io.print(f"{visible(r.get('id'))}  {visible(r.get('agent'))}  {age} ago{risk}")
        io.print(f"    {visible(r.get('kind'))}: {visible(r.get('what'))}")
        io.print(f"    why: {visible(r.get('reason'))}")
        if r.get("command"):  # the whole command, wrapped: what you approve is what you see
            io.print("    command (whole):")
            for line in _wrapped(str(r["command"]), 100):
                io.print("    $ " + line)
        for line in str(r.get("detail") or "").splitlines()[:40]:
            io.print("    | " + "\t".join(visible(part) for part in line.split("\t")))
        if r.get("always"):
            io.print(f"    --always adds: {visible(', '.join(r['always']))}")
    io.print("Answer with `oh approve ID [--always]` or `oh reject ID --reason TEXT`.")
    return 0


def _wrapped(text: str, width: int) -> list[str]:
    """Every line of ``text`` (escaped), cut into pieces of ``width``: nothing is left out."""
    from ..text.sanitize import visible

    out: list[str] = []
    for raw in text.split("\n"):
        line = visible(raw)
        out += [line[i : i + width] for i in range(0, len(line), width)] or [""]
    return out
