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
class Options:
    """A program's options, as GNU getopt reads them (clusters, attached values, unique long prefixes)."""

    flags: str = ""  # short options without a value
    req: str = ""  # short options with a value (attached or the next word)
    opt: str = ""  # short options with an optional value (attached only)
    long_flags: tuple[str, ...] = ()
    long_req: tuple[str, ...] = ()
    long_opt: tuple[str, ...] = ()  # --name[=value]
    plus: bool = False  # +o / +O / +e: a shell's options also start with +

    def __post_init__(self) -> None:
        # an option both a flag and a value-taker would be read as a flag: its value would become the program
        if set(self.flags) & set(self.req + self.opt) or set(self.long_flags) & set(self.long_req + self.long_opt):
            raise TableError(f"an option is both a flag and takes a value: {self!r}")


@dataclass(frozen=True)
class Wrapper:
    """How a wrapper's options read and what it adds to the command it runs (its words after the options)."""

    options: Options
    as_user: bool = False  # sudo, doas: the command runs as another user
    sets_env: bool = False  # env: NAME=value words after the options go to the command's environment
    number_first: bool = False  # nice -10 CMD: an old-style number before the options
    runs_nothing_with: tuple[str, ...] = ()  # command -v, ionice -p: a lookup or another process, nothing runs
    output_options: tuple[str, ...] = ()  # time -o FILE: a file it writes
    skip_words: int = 0  # timeout DURATION CMD: words between the options and the command
    feeds_input: bool = False  # xargs: the command gets arguments from the input (echo when none is named)


@dataclass(frozen=True)
class Launcher:
    """A package runner (npx X, uv run X, poetry run X): the grammar that finds the program it runs."""

    globals: Options | None = None  # options before the subcommand (None: the runner has its own parser)
    subcommands: tuple[tuple[str, Options], ...] = ()  # "run", "tool run": the options after it
    fetched: tuple[str, ...] = ()  # subcommands whose program is a package fetched by name (cowsay@1 is cowsay)
    direct: Options | None = None  # uvx, bunx, pnpx: no subcommand, the options of the fetching one
    nopt: bool = False  # npm's own option parser (options anywhere before `--`)
    exec_subcommands: tuple[str, ...] = ()  # npm exec / npm x (none: npx, whose first word is the program)
    own_commands: frozenset[str] = frozenset()  # pnpm: any other first word runs a script or program
    command_options: tuple[str, ...] = ()  # mise -c CMD: a shell command string
    after_dashdash: bool = False  # mise exec TOOL@VERSION -- CMD: the program follows `--`
    shell_mode: tuple[str, ...] = ()  # pnpm --shell-mode: the words are a shell command
    shell_words: bool = False  # yarn exec: runs its words in a shell
    env_scripts: bool = False  # hatch run ENV:SCRIPT: the program is the part after the colon
    module_options: tuple[str, ...] = ()  # uv run -m MOD: runs python -m MOD


@dataclass(frozen=True)
class Program:
    """One program family: its names, role, what it does through its arguments, and its examples."""

    names: tuple[str, ...]
    role: str = "plain"  # lister: only lists or names a directory it is given (never reads the files in it)
    risky: str = ""  # why running it at all is risky ("deletes files", "talks to the network"), "" if not
    network: bool = False  # talks to the network (asked at `risky`; in the sandbox it needs the network on)
    risky_subcommands: tuple[tuple[str, ...], ...] = ()  # words after the name (an option: anywhere)
    global_values: tuple[str, ...] | None = None  # options before the subcommand are skipped; these take a value
    loading_globals: tuple[str, ...] = ()  # options before the subcommand that load config or code from elsewhere
    directory_options: tuple[str, ...] = ()  # git -C DIR: it finds its repository from there (or from the cwd)
    runs_python: bool = False  # may import any Python module (`python -m oh approve`, `uv run -m oh`)
    subcommands: bool = False  # its first argument is a subcommand ("always allow" suggests `git status *`)
    opens_args: bool = True  # False: never opens the words it is given (a word known at run time is data)
    writes: Writes | None = None  # files its arguments name that it writes
    blind: Why | None = None  # why the files it writes are only known at run time
    runs: Why | None = None  # why it runs commands or code its name does not say
    dynamic_runs: bool = False  # an argument known only at run time may make it run or write something
    input_args_risky: bool = False  # given arguments from its input (xargs rm): risky
    inline: Why | None = None  # interpreters: why the code on its command line is asked
    code: Callable[[str, list[str]], list[str]] | None = None  # interpreters: the code on its command line
    wrapper: Wrapper | None = None  # role wrapper: how the parser peels it off
    launcher: Launcher | None = None  # package runners: how the parser finds the program they run
    exec_options: tuple[str, ...] = ()  # find -exec CMD ;: options whose words up to ; or + are a command
    prefixes: tuple[str, ...] = ()  # also any name starting with one of these (mkfs.ext4)
    pattern: str = ""  # also any name this regex matches in full (python3.12)
    match: tuple[str, ...] = ()
    not_match: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.role not in ROLES or not self.names or (self.role == "wrapper") != (self.wrapper is not None):
            raise TableError(f"bad program record {self.names!r}: role {self.role!r}")
