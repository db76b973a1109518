"""One record per program family: what consent knows of a program, and the examples that prove it.

Pure data and pure functions of an argv (no I/O). A record names the program (and its aliases), its role,
why running it at all is risky, its risky subcommands, and the functions that compute what it writes, writes
blind (only known at run time) or runs from its arguments. ``match`` examples are commands the record flags
(risky, writing, running something); ``not_match`` ones it does not. tests/protocol/test_programs.py runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from oh.errors import OhBaseError

ROLES = ("plain", "lister", "wrapper", "runner", "interpreter", "shell")

# each takes the program's name (its last path component) and its arguments
Writes = Callable[[str, list[str]], tuple[str, ...]]
Why = Callable[[str, list[str]], "str | None"]


class TableError(OhBaseError):
    """A program record that contradicts itself or another (raised when the table loads)."""


@dataclass(frozen=True)
class Program:
    names: tuple[str, ...]
    role: str = "plain"  # lister: only lists or names a directory it is given (never reads the files in it)
    risky: str = ""  # why running it at all is risky ("deletes files", "talks to the network"), "" if not
    risky_subcommands: tuple[tuple[str, ...], ...] = ()  # words after the name (an option: anywhere)
    global_values: tuple[str, ...] | None = None  # options before the subcommand are skipped; these take a value
    subcommands: bool = False  # its first argument is a subcommand ("always allow" suggests `git status *`)
    opens_args: bool = True  # False: never opens the words it is given (a word known at run time is data)
    writes: Writes | None = None  # files its arguments name that it writes
    blind: Why | None = None  # why the files it writes are only known at run time
    runs: Why | None = None  # why it runs commands or code its name does not say
    dynamic_runs: bool = False  # an argument known only at run time may make it run or write something
    input_args_risky: bool = False  # given arguments from its input (xargs rm): risky
    inline: Why | None = None  # interpreters: why the code on its command line is asked
    code: Callable[[str, list[str]], list[str]] | None = None  # interpreters: the code on its command line
    prefixes: tuple[str, ...] = ()  # also any name starting with one of these (mkfs.ext4)
    pattern: str = ""  # also any name this regex matches in full (python3.12)
    match: tuple[str, ...] = ()
    not_match: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.role not in ROLES or not self.names:
            raise TableError(f"bad program record {self.names!r}: role {self.role!r}")
