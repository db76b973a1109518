"""Repetition control (docs/protocol.md §3.10, opt-in with ``repeat_limit``): the pure rule.

An agent's streak is its last new ``run`` command and how many times in a row it was sent. New
``run`` commands count; follow-ups (empty command, ``is_input``) and ``job``/``stat`` actions are
neutral; any other action (a write, an edit, a read) ends the streak. The backend keeps one
``Streak`` per agent and calls ``step`` once per action.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import kinds
from .events import Action


@dataclass(slots=True)
class Streak:
    command: str | None = None  # the last new command
    count: int = 0  # how many times in a row it was sent


def step(streak: Streak, action: Action, limit: int, mode: str) -> str | None:
    """Update ``streak`` for ``action``; the note (or, with ``mode`` "skip", the refusal text) when
    the command has now been sent ``limit`` or more times in a row, else None (also when ``limit`` is 0)."""
    if action.kind == "run" and not action.is_input and action.command.strip():
        if action.command == streak.command:
            streak.count += 1
        else:
            streak.command, streak.count = action.command, 1
        if limit and streak.count >= limit:
            verb = "was NOT run again" if mode == "skip" else "ran again"
            return (
                f"[Note: this exact command has now been sent {streak.count} times in a row and {verb} "
                f"(repeat_limit = {limit}). Its result is unlikely to change: try a different approach.]"
            )
    elif not kinds.is_neutral(action.kind):  # a run here is not a new command
        streak.command, streak.count = None, 0
    return None
