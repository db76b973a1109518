"""Build OpenHands-shaped action dicts: the client's names for ``oh.protocol.actions``, the one builder
every surface shares (the CLI's verbs and ``oh mcp`` use it too).

Optional oh additions (docs/protocol.md: run ``reset``/``env``/``max_output``, read/write ``encoding``,
the top-level ``security_risk`` label LOW/MEDIUM/HIGH/UNKNOWN) are only put in the frame when the
caller gives them, so a frame built with the defaults is byte-for-byte what OpenHands itself sends.
"""

from __future__ import annotations

from typing import Any

from ..protocol import actions as _build
from ..protocol.actions import claim, edit, read, release

__all__ = ["run", "read", "write", "edit", "claim", "release"]


def run(
    command: str,
    *,
    timeout: float | None = None,
    blocking: bool = False,
    is_input: bool = False,
    cwd: str | None = None,
    reset: bool | None = None,
    env: dict[str, str] | None = None,
    max_output: int | None = None,
    security_risk: str | None = None,
    exclusive: bool | None = None,
    unsandboxed: str | None = None,
    network: str | None = None,
) -> dict[str, Any]:
    """``unsandboxed``: why this command must run outside the sandbox; ``network``: why it needs the network
    (it stays sandboxed otherwise); the user is asked either way (README "Sandbox")."""
    return _build.run(
        command,
        timeout=timeout,
        blocking=blocking,
        is_input=is_input,
        cwd=cwd,
        reset=bool(reset),
        env=env,
        max_output=max_output,
        security_risk=security_risk,
        exclusive=bool(exclusive),
        unsandboxed=unsandboxed,
        network=network,
    )


def write(
    path: str,
    content: str,
    *,
    encoding: str | None = None,
    security_risk: str | None = None,
    if_version: str | None = None,
    force: bool = False,
) -> dict[str, Any]:
    return _build.write(
        path, content, encoding=encoding, security_risk=security_risk, if_version=if_version, force=force
    )
