"""Why no VS Code window may connect to a ``--runtime vscode`` backend: hints for the live view.

Computed once, off the render loop (``code --list-extensions`` starts a whole VS Code CLI and takes
about a second), and only after the grace period in which an open window normally connects.
"""

from __future__ import annotations

import asyncio
import os

LIST_TIMEOUT = 15.0


async def _extension_installed(code: str, extension_id: str) -> bool | None:
    """True/False from ``code --list-extensions``; None when it fails or hangs (then we say nothing)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            code, "--list-extensions", stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
        )
    except OSError:
        return None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), LIST_TIMEOUT)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        if proc.returncode is None:  # never leave it behind (the launcher may be exiting)
            proc.kill()
            await asyncio.shield(proc.wait())
        raise
    if proc.returncode != 0:
        return None
    return extension_id.lower() in {line.strip().lower() for line in out.decode("utf-8", "replace").splitlines()}


async def editor_hints(workspace: str, code: str | None, extension_id: str, sessions_dir: str) -> list[str]:
    """``code``: the VS Code CLI on PATH (None: absent). Plain inputs, so ui/ needs no launcher import."""
    hints: list[str] = []
    if code is None:
        hints.append(f"`code` is not on PATH, so oh cannot open VS Code: open {workspace} in VS Code yourself.")
    else:
        try:
            installed = await _extension_installed(code, extension_id)
        except asyncio.TimeoutError:
            installed = None
        if installed is False:
            hints.append(f"the oh extension ({extension_id}) is not installed in VS Code "
                         "(`code --list-extensions`): install it, see the README.")
    for var in ("OH_HOME", "XDG_STATE_HOME"):
        if os.environ.get(var):
            hints.append(f"{var} is set here: VS Code finds this backend only if it sees the same {var} "
                         f"(sessions in {sessions_dir}); start VS Code from this shell.")
            break
    hints.append("a VS Code window connects only when it has this folder (or one containing it) open.")
    return hints
