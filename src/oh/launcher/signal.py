"""The on-demand editor signal for ``--runtime vscode``.

The session file *is* the signal: the extension watches the sessions directory and connects only
when a file for its window's workspace appears. Asking VS Code to open or focus the workspace is
extra, decided by ``open_editor`` (flag ``--open/--no-open`` > config):

- ``always`` (``--open``): right after the backend is ready.
- ``auto`` (default): only when no editor has registered within ``AUTO_GRACE`` seconds *and*
  ``code`` is on PATH (an already-open window connects by itself; we do not steal focus).
- ``never`` (``--no-open``): VS Code is never touched.

What runs: ``code <workspace>`` (opens the folder or focuses the window that has it), then
``code --open-url vscode://oh-dev.oh-vscode/connect?session=<instance_id>``. Never the token: argv
is visible to every local user, so the extension reads the token from the 0600 session file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from urllib.parse import quote

EXTENSION_ID = "oh-dev.oh-vscode"
AUTO_GRACE = 3.0


def code_binary() -> str | None:
    return shutil.which(os.environ.get("OH_CODE", "code"))


def connect_url(instance_id: str) -> str:
    return f"vscode://{EXTENSION_ID}/connect?session={quote(instance_id, safe='')}"


def open_commands(workspace: str, instance_id: str, code: str) -> list[list[str]]:
    return [[code, workspace], [code, "--open-url", connect_url(instance_id)]]


def open_editor(workspace: str, instance_id: str) -> list[list[str]] | None:
    """Ask VS Code to open/focus ``workspace`` and connect. Returns the commands run, None if no ``code``."""
    code = code_binary()
    if code is None:
        return None
    cmds = open_commands(workspace, instance_id, code)
    for argv in cmds:
        try:
            subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=15, start_new_session=True)
        except (OSError, subprocess.TimeoutExpired):
            pass
    return cmds


def should_open_after_grace(mode: str, editors_connected: int) -> bool:
    return mode == "auto" and editors_connected == 0 and code_binary() is not None


def extension_installed(timeout: float = 15.0) -> bool | None:
    """True/False from ``code --list-extensions``; None when ``code`` is missing or fails."""
    code = code_binary()
    if code is None:
        return None
    try:
        out = subprocess.run([code, "--list-extensions"], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return EXTENSION_ID.lower() in {line.strip().lower() for line in out.stdout.splitlines()}
