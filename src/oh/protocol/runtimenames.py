"""The runtimes a backend can run, by name, with the traits the CLI, the live view and the validators ask
about: the one place that knows the names (``runtimes/choose.py`` maps each to its class).

Stdlib only and free of imports: the fast path (``oh run``) and ``oh status`` read it.
"""

from __future__ import annotations


class Traits:
    """What differs between runtimes for everything outside the backend."""

    __slots__ = ("name", "where", "editor", "review_where")

    def __init__(self, name: str, where: str, editor: bool, review_where: str) -> None:
        self.name = name
        self.where = where  # where actions run (``describe`` adds the sandbox: completion help, MCP)
        self.editor = editor  # actions go to a connected editor (VS Code, `oh attach`)
        self.review_where = review_where  # where review mode's proposals are decided


TRAITS = {
    "local": Traits("local", "on this machine", False, "with `oh review`"),
    "vscode": Traits("vscode", "in VS Code", True, "in VS Code's diff editor"),
}
NAMES = tuple(TRAITS)
DEFAULT = "local"


def describe(name: str, sandbox: str) -> str:
    """Where runtime ``name``'s actions run and how its agent shell is confined, from the ``sandbox`` level the
    settings give (both runtimes apply the same one: docs/protocol.md §3.17)."""
    traits = TRAITS.get(name)
    where = traits.where if traits is not None else name
    if sandbox == "off":
        return f"{where}, no sandbox (sandbox = off)"
    return f"{where}, the agent's shell sandboxed ({sandbox})"


def uses_editor(name: object) -> bool:
    """Whether runtime ``name`` sends actions to an editor (an unknown name: no)."""
    traits = TRAITS.get(name) if isinstance(name, str) else None
    return traits is not None and traits.editor


def unknown(name: str) -> str:
    """The error text for a name that is no runtime."""
    return f"unknown runtime {name!r} ({' or '.join(NAMES)})"
