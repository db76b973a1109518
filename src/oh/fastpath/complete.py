"""TAB completion in bash without typer (issue 30 item 14): typer costs ~0.15-0.6 s per TAB, this a few ms.

It answers from ``completedata.TREE`` (written by scripts/gen-help from typer's own command tree) the way typer's
bash completion would, word for word: subcommands, option names, the values of options and arguments whose
candidates are fixed (runtimes, setting names, shells, choices) and running instance ids (read as the fast path
reads sessions). Whatever it is not sure of -- a stale session file, an ``--opt=value`` word, ``--`` in a group,
quoting,
an unknown word -- returns None and typer answers (tests/cli/test_fast_help.py compares both on every path).
"""

from __future__ import annotations

import os
from typing import Any

_QUOTING = ("\\", "'", '"', "$", "`", "=")


def complete_bash() -> int | None:
    """Print the completions for ``COMP_WORDS``/``COMP_CWORD`` (one per line) and return 0, or None for typer."""
    import sys

    if os.environ.get("_OH_COMPLETE") != "complete_bash":
        return None
    try:
        cword = int(os.environ.get("COMP_CWORD", ""))
    except ValueError:
        return None
    line = os.environ.get("COMP_WORDS", "")
    if any(c in line for c in _QUOTING):
        return None
    words = line.split()
    found = answer(words[1:cword], words[cword] if cword < len(words) else "")
    if found is None:
        return None
    sys.stdout.write("\n".join(found) + "\n")
    return 0


def answer(args: list[str], incomplete: str) -> list[str] | None:
    """typer's completions for ``incomplete`` after ``args`` (the words between ``oh`` and it), or None."""
    from .completedata import TREE

    path: tuple[str, ...] = ()
    used: set[int] = set()
    positional: list[str] = []
    pending: Any = None  # the option whose value the next word is
    ended = False  # after `--` every word is an argument (`oh run -- ls -l`: issue 41, typer took ~0.2 s per TAB)
    for word in args:
        node = TREE.get(path)
        if node is None or (word == "--" and (pending is not None or node[1])):
            return None
        if pending is not None:
            pending = None
            continue
        if ended:
            positional.append(word)
            continue
        if word == "--":
            ended = True
            continue
        if word.startswith("-"):
            index = _option(node, word)
            if index is None:
                return None
            used.add(index)
            pending = node[2][index] if node[2][index][2] else None
            continue
        if node[1] and not positional:  # a group: the word names one of its commands
            if word not in node[1]:
                return None
            path, used = (*path, word), set()
            continue
        positional.append(word)
    node = TREE.get(path)
    if node is None:
        return None
    return _at(node, used, positional, pending, incomplete, ended)


def _option(node: tuple, word: str) -> int | None:
    for i, opt in enumerate(node[2]):
        if word in opt[0] or word in opt[1]:
            return i
    return None


def _at(
    node: tuple, used: set[int], positional: list[str], pending: Any, incomplete: str, ended: bool = False
) -> list[str] | None:
    visible, subs, options, arguments = node
    if incomplete.startswith("-") and not ended:  # option names of this command, each once unless it may repeat
        names = [
            name
            for i, opt in enumerate(options)
            if opt[3] and (opt[4] or i not in used)
            for name in (*opt[0], *opt[1])
            if name.startswith(incomplete)
        ]
        return [s for s in visible if s.startswith(incomplete)] + names
    if pending is not None:  # the value of the option just given (typer: only a name in its opts)
        return _values(pending[5], incomplete)
    if subs and not positional:
        return [s for s in visible if s.startswith(incomplete)]
    left = list(positional)
    for nargs, values in arguments:
        if nargs == -1:
            return _values(values, incomplete)
        if nargs != 1:
            return None
        if not left:
            return _values(values, incomplete)
        left.pop(0)
    return None if left else []


def _values(values: tuple[str, ...] | str | None, incomplete: str) -> list[str] | None:
    if values == "instances":  # running backends, newest first (as oh.sessions lists them); else typer decides
        from .discover import live_sessions

        found = live_sessions()
        if found is None:
            return None
        values = tuple(s["instance_id"] for s in found)
    return None if values is None else [v for v in values if v.startswith(incomplete)]
