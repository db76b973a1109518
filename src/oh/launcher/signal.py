"""The on-demand editor signal for ``--runtime vscode``.

The session file *is* the signal: the extension watches the sessions directory and connects only
when a file for its window's workspace appears. Asking the editor to open or focus the workspace is
extra, decided by ``open_editor`` (flag ``--open/--no-open`` > config):

- ``always`` (``--open``): right after the backend is ready.
- ``auto`` (default): only when no editor has registered within ``AUTO_GRACE`` seconds *and* an
  editor CLI is found (an already-open window connects by itself; we do not steal focus).
- ``never`` (``--no-open``): the editor is never touched.

Which editor: ``OH_CODE`` (a CLI's name or path: ``cursor``, ``/opt/VSCodium/bin/codium``) when set,
else the first of ``editorcli.KINDS`` found (VS Code, Insiders, Cursor, Windsurf, VSCodium,
code-server), preferring one that has the extension. What runs, in that editor's own terms:
``<cli> <workspace>`` (opens the folder or focuses the window that has it), then ``<cli> --open-url
<scheme>://oh-dev.oh-vscode/connect?session=<instance_id>`` (``vscode://``, ``cursor://``,
``windsurf://``, ``vscodium://``, ``vscode-insiders://``; code-server has no scheme, the folder is
all). Never the token: argv is visible to every local user, so the extension reads the token from
the 0600 session file.
"""

from __future__ import annotations

import os
from urllib.parse import quote

from . import editorcli

EXTENSION_ID = editorcli.EXTENSION_ID
AUTO_GRACE = 3.0


def visible_editors() -> list[editorcli.Editor]:
    """The editor CLIs oh can see: just ``OH_CODE`` when it is set (absent: none), else every one found."""
    chosen = os.environ.get("OH_CODE")
    if chosen:
        try:
            return [editorcli.editor_at(chosen)]
        except FileNotFoundError:
            return []
    return editorcli.find_editors()


def pick(editors: list[editorcli.Editor], with_extension: set[str] | None = None) -> editorcli.Editor | None:
    """The editor ``--open`` asks: the first that has the extension (paths in ``with_extension``), else the first."""
    for e in editors:
        if with_extension and e.path in with_extension:
            return e
    return editors[0] if editors else None


def code_binary() -> str | None:
    """The CLI ``--open`` would use (None: no editor CLI found)."""
    e = pick(visible_editors())
    return e.path if e else None


def connect_path(instance_id: str) -> str:
    return f"connect?session={quote(instance_id, safe='')}"


def connect_url(instance_id: str, scheme: str = "vscode") -> str:
    return f"{scheme}://{EXTENSION_ID}/{connect_path(instance_id)}"


def open_commands(workspace: str, instance_id: str, editor: editorcli.Editor) -> list[list[str]]:
    return editorcli.open_argv(
        editor, workspace, connect_path(instance_id), bool(os.environ.get("VSCODE_IPC_HOOK_CLI"))
    )


def open_editor(workspace: str, instance_id: str, with_extension: set[str] | None = None) -> list[list[str]] | None:
    """Ask the editor to open/focus ``workspace`` and connect. Returns the commands run ([]: this editor
    cannot be asked from here, code-server outside its terminal), None if no editor CLI."""
    editor = pick(visible_editors(), with_extension)
    if editor is None:
        return None
    cmds = open_commands(workspace, instance_id, editor)
    import subprocess  # here: `oh doctor` imports this module and runs no editor

    for argv in cmds:
        try:
            subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=15,
                start_new_session=True,
            )
        except (OSError, subprocess.TimeoutExpired):
            pass
    return cmds


def should_open_after_grace(mode: str, editors_connected: int) -> bool:
    return mode == "auto" and editors_connected == 0 and code_binary() is not None


def extension_states(timeout: float = 15.0) -> list[dict]:
    """Each visible editor and the oh extension version it has (``EditorState.describe()`` dicts, asked
    in parallel); [] when no editor CLI is found."""
    return [s.describe() for s in editorcli.query_all(visible_editors(), timeout=timeout, remembered=True)]


async def extension_states_async(timeout: float = 15.0) -> list[dict]:
    """``extension_states`` for the live view: cancellable (the CLIs are killed), a hung CLI counts as unknown."""
    import asyncio

    async def one(e: editorcli.Editor) -> dict:
        try:
            st = await editorcli.query_async(e, timeout)
            # installed by `oh vscode install --extensions-dir/--user-data-dir` where the plain list does not look
            for ext, data in editorcli.remembered_dirs(e) if st.version is None and st.error is None else []:
                other = await editorcli.query_async(e, timeout, ext, data)
                if other.version:
                    return other.describe()
            return st.describe()
        except asyncio.TimeoutError:
            return editorcli.EditorState(e, None, f"no answer within {timeout:.0f} s").describe()

    return list(await asyncio.gather(*(one(e) for e in visible_editors())))


def bundled_version() -> str | None:
    try:
        return editorcli.vsix_version(editorcli.bundled_vsix())
    except (editorcli.NoVsix, ValueError):
        return None
