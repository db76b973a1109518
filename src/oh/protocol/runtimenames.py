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
        self.where = where  # where actions run (completion help, `oh start --help`)
        self.editor = editor  # actions go to a connected editor (VS Code, `oh attach`); False: no sandbox here
        self.review_where = review_where  # where review mode's proposals are decided


TRAITS = {
    "local": Traits("local", "on this machine, no sandbox", False, "with `oh review`"),
    "vscode": Traits("vscode", "in VS Code", True, "in VS Code's diff editor"),
}
NAMES = tuple(TRAITS)
DEFAULT = "local"


def uses_editor(name: object) -> bool:
    """Whether runtime ``name`` sends actions to an editor (an unknown name: no)."""
    traits = TRAITS.get(name) if isinstance(name, str) else None
    return traits is not None and traits.editor


def unknown(name: str) -> str:
    """The error text for a name that is no runtime."""
    return f"unknown runtime {name!r} ({' or '.join(NAMES)})"
