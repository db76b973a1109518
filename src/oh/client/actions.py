"""Build OpenHands-shaped action dicts (the client's half of oh.protocol.events)."""

from __future__ import annotations

from typing import Any


def run(command: str, *, timeout: float | None = None, blocking: bool = False, is_input: bool = False, cwd: str | None = None) -> dict[str, Any]:
    action: dict[str, Any] = {
        "action": "run",
        "args": {"command": command, "is_input": is_input, "thought": "", "blocking": blocking, "is_static": False, "cwd": cwd, "hidden": False, "confirmation_state": "confirmed", "security_risk": -1},
    }
    if timeout is not None:
        action["timeout"] = float(timeout)
    return action


def read(path: str, *, start: int = 0, end: int = -1, view_range: list[int] | None = None) -> dict[str, Any]:
    return {"action": "read", "args": {"path": path, "start": start, "end": end, "thought": "", "security_risk": -1, "impl_source": "oh_aci", "view_range": view_range}}


def write(path: str, content: str) -> dict[str, Any]:
    return {"action": "write", "args": {"path": path, "content": content, "start": 0, "end": -1, "thought": "", "security_risk": -1}}


def edit(path: str, command: str, *, file_text: str | None = None, old_str: str | None = None, new_str: str | None = None,
         insert_line: int | None = None, view_range: list[int] | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"path": path, "command": command, "file_text": file_text, "old_str": old_str, "new_str": new_str,
                            "insert_line": insert_line, "content": "", "start": 1, "end": -1, "thought": "", "security_risk": -1, "impl_source": "oh_aci"}
    if view_range is not None:
        args["view_range"] = view_range
    return {"action": "edit", "args": args}
