"""Why no VS Code window may connect to a ``--runtime vscode`` backend: hints for the live view.

Pure: the caller asks the editor CLIs (``launcher.signal.extension_states``, off the render loop: each
CLI takes about a second to start) and passes plain dicts, so ui/ runs no subprocess. Two moments:

- ``install_hints``, at once: no editor oh can see has the extension (or only another release of it).
  That is known before any wait, so ``oh start`` says it immediately and names ``oh vscode install``.
- ``editor_hints``, after the grace period in which an open window normally connects: no CLI found,
  a different OH_HOME, another machine (Remote-SSH, WSL, containers), the folder not open.
"""

from __future__ import annotations

from typing import Any, Mapping


def install_hints(states: list[dict[str, Any]], bundled: str | None) -> list[str]:
    """``states``: ``EditorState.describe()`` per visible editor CLI. [] when at least one has this oh's extension."""
    known = [s for s in states if not s.get("error")]
    if not known:
        return []
    have = [s for s in known if s.get("installed_version")]
    names = ", ".join(dict.fromkeys(str(s.get("editor")) for s in known))
    if not have:
        return [
            f"the oh extension (oh-dev.oh-vscode) is not installed in any editor oh can see ({names}): "
            "run `oh vscode install`, then reload the editor's window."
        ]
    if bundled and not any(s.get("installed_version") == bundled for s in have):
        found = ", ".join(f"{s.get('editor')} has {s.get('installed_version')}" for s in have)
        return [
            f"the oh extension in your editors is another release than this oh's {bundled} ({found}): "
            "run `oh vscode install`, then reload the editor's window."
        ]
    return []


def editor_hints(workspace: str, cli: str | None, sessions_dir: str, env: Mapping[str, str]) -> list[str]:
    """``cli``: the editor CLI oh found (None: none). ``env``: this process's environment."""
    hints: list[str] = []
    if cli is None:
        hints.append(
            f"no VS Code CLI (code, cursor, windsurf, codium, code-server) is on PATH, so oh cannot open the editor: "
            f"open {workspace} in it yourself."
        )
    for var in ("OH_HOME", "XDG_STATE_HOME"):
        if env.get(var):
            hints.append(
                f"{var} is set here: VS Code finds this backend only if it sees the same {var} "
                f"(sessions in {sessions_dir}); start VS Code from this shell."
            )
            break
    if env.get("SSH_CONNECTION") and not env.get("VSCODE_IPC_HOOK_CLI"):
        hints.append(
            "this shell is an SSH session: a VS Code window on your own computer sees this oh only when it is "
            "connected to this machine (Remote-SSH): open the folder that way, then run `oh vscode install` in that "
            "window's terminal."
        )
    hints.append(
        "a VS Code window connects only when it has this folder (or one containing it) open, on this machine: a "
        "window on a remote (Remote-SSH, WSL, Dev Container: see its bottom-left corner) runs its extensions there, "
        "so oh must run there too (install it in that window's terminal, as the README's \"Install\" says, e.g. "
        "`pipx install oh_editor_runtime-*.whl`; then `oh vscode install`)."
    )
    return hints
