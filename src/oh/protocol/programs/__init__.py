"""The program registry: what consent knows of each program, one record per program family.

The shell parser (``shellparse``) finds the simple commands of a line and unwraps wrappers; the decision
(``consent``) asks ``effects`` what one command does and never tests a program's name itself. A program with
no record has no effect this table knows: it is neither risky nor writing by name (the levels that ask every
command ask it; ``risky`` judges its paths). To teach consent a program, add one ``Program`` with its
``match``/``not_match`` examples to the family module it belongs to (docs/architecture.md, "Program registry").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from oh.protocol.programs.files import FILES
from oh.protocol.programs.record import Launcher, Options, Program, TableError, Wrapper
from oh.protocol.programs.runners import LAUNCHERS, RUNNERS, SHELLS, WRAPPERS
from oh.protocol.programs.system import SYSTEM
from oh.protocol.programs.tools import TOOLS

RECORDS: tuple[Program, ...] = FILES + SYSTEM + TOOLS + WRAPPERS + RUNNERS + SHELLS + LAUNCHERS
UNKNOWN = Program(("",))  # the record of a program the table does not know


def _index(records: tuple[Program, ...]) -> dict[str, Program]:
    out: dict[str, Program] = {}
    for rec in records:
        for name in rec.names:
            if name in out:
                raise TableError(f"program {name!r} has two records")
            out[name] = rec
    return out


_BY_NAME = _index(RECORDS)
_BY_SHAPE = tuple((rec, re.compile(rec.pattern)) for rec in RECORDS if rec.pattern or rec.prefixes)


def lookup(name: str) -> Program:
    """The record of a program name (the last component of its path), UNKNOWN if none."""
    rec = _BY_NAME.get(name)
    if rec is not None:
        return rec
    for rec, pattern in _BY_SHAPE:
        if (rec.prefixes and name.startswith(rec.prefixes)) or (rec.pattern and pattern.fullmatch(name)):
            return rec
    return UNKNOWN


@dataclass(frozen=True)
class Effects:
    """What one simple command does through its name and arguments, as its record computes it."""

    program: Program
    risky: str | None  # why it is risky by name or subcommand
    writes: tuple[str, ...]  # files its arguments name that it writes (words as typed)
    blind: str | None  # why the files it writes are only known at run time
    runs: str | None  # why it runs commands or code its name does not say

    @property
    def network(self) -> bool:
        return self.program.network

    @property
    def unknown(self) -> bool:
        """No record: nothing is known of what it does by its name (the levels that ask every command ask it)."""
        return self.program is UNKNOWN

    @property
    def flagged(self) -> bool:
        return bool(self.risky or self.writes or self.blind or self.runs)


def risky_subcommand(rec: Program, args: Sequence[str]) -> tuple[str, ...] | None:
    """The risky subcommand ``args`` start with (an option one: anywhere), or None."""
    for sub in rec.risky_subcommands:
        rest = list(args)
        if rec.global_values is not None:  # skip the global options (git -C dir, --git-dir=...)
            while rest and rest[0].startswith("-") and rest[0] != "-c":
                flag = rest.pop(0)
                if flag in rec.global_values and rest:
                    rest.pop(0)
        if tuple(rest[: len(sub)]) == sub or (sub[0].startswith("-") and sub[0] in rest):
            return sub
    return None


def loads_elsewhere(rec: Program, args: Sequence[str]) -> bool:
    """Whether the options before the subcommand load configuration or code from elsewhere (git -c, --git-dir)."""
    if not rec.loading_globals:
        return False
    lead = []
    for a in args:
        if not a.startswith("-"):
            break
        lead.append(a)
    return any(a.split("=", 1)[0] in rec.loading_globals for a in lead)


def risky(base: str, args: Sequence[str]) -> str | None:
    """Why running ``base args`` is risky by the program's name or subcommand, or None."""
    rec = lookup(base)
    if rec.risky:
        return f"{base} is a risky command ({rec.risky})"
    sub = risky_subcommand(rec, args)
    return None if sub is None else f"{base} {' '.join(sub)} is a risky command"


def effects(argv: Sequence[str]) -> Effects:
    """The effects of a simple command's words (``argv[0]`` the program, as typed)."""
    base = argv[0].rsplit("/", 1)[-1] if argv else ""
    rec = lookup(base)
    args = list(argv[1:])
    runner = f"{base} runs a command given in its arguments" if rec.role == "runner" else None
    if loads_elsewhere(rec, args):
        runner = f"{base} with options that load configuration or programs from elsewhere (-c, --git-dir, ...)"
    return Effects(
        rec,
        risky(base, args),
        rec.writes(base, args) if rec.writes else (),
        rec.blind(base, args) if rec.blind else None,
        runner or (rec.runs(base, args) if rec.runs else None) or (rec.inline(base, args) if rec.inline else None),
    )


__all__ = [
    "RECORDS",
    "UNKNOWN",
    "Effects",
    "Launcher",
    "Options",
    "Program",
    "TableError",
    "Wrapper",
    "effects",
    "loads_elsewhere",
    "lookup",
    "risky",
    "risky_subcommand",
]
