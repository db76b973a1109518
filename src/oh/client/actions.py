"""Build OpenHands-shaped action dicts (the client's half of oh.protocol.events).

Optional oh additions (docs/protocol.md: run ``reset``/``env``/``max_output``, read/write ``encoding``,
the top-level ``security_risk`` label LOW/MEDIUM/HIGH/UNKNOWN) are only put in the frame when the caller gives them, so a
frame built with the defaults is byte-for-byte what OpenHands itself sends.
"""

from __future__ import annotations

from typing import Any


def _risk(action: dict[str, Any], security_risk: str | None) -> dict[str, Any]:
    # OpenHands keeps an int in args.security_risk (-1 = unset); oh's label rides at the top level.
    if security_risk is not None:
        action["security_risk"] = str(security_risk)
    return action


def run(command: str, *, timeout: float | None = None, blocking: bool = False, is_input: bool = False, cwd: str | None = None,
        reset: bool | None = None, env: dict[str, str] | None = None, max_output: int | None = None,
        security_risk: str | None = None, exclusive: bool | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"command": command, "is_input": is_input, "thought": "", "blocking": blocking, "is_static": False, "cwd": cwd,
                            "hidden": False, "confirmation_state": "confirmed", "security_risk": -1}
    if reset:
        args["reset"] = True
    if env:
        args["env"] = dict(env)
    if max_output is not None:
        args["max_output"] = int(max_output)
    if exclusive:
        args["exclusive"] = True
    action: dict[str, Any] = {"action": "run", "args": args}
    if timeout is not None:
        action["timeout"] = float(timeout)
    return _risk(action, security_risk)


def read(path: str, *, start: int = 0, end: int = -1, view_range: list[int] | None = None, encoding: str | None = None,
         security_risk: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"path": path, "start": start, "end": end, "thought": "", "security_risk": -1,
                            "impl_source": "oh_aci", "view_range": view_range}
    if encoding is not None:
        args["encoding"] = encoding
    return _risk({"action": "read", "args": args}, security_risk)


def write(path: str, content: str, *, encoding: str | None = None, security_risk: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"path": path, "content": content, "start": 0, "end": -1, "thought": "", "security_risk": -1}
    if encoding is not None:
        args["encoding"] = encoding
    return _risk({"action": "write", "args": args}, security_risk)


def edit(path: str, command: str, *, file_text: str | None = None, old_str: str | None = None, new_str: str | None = None,
         insert_line: int | None = None, view_range: list[int] | None = None, security_risk: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"path": path, "command": command, "file_text": file_text, "old_str": old_str, "new_str": new_str,
                            "insert_line": insert_line, "content": "", "start": 1, "end": -1, "thought": "",
                            "security_risk": -1, "impl_source": "oh_aci"}
    if view_range is not None:
        args["view_range"] = view_range
    return _risk({"action": "edit", "args": args}, security_risk)
