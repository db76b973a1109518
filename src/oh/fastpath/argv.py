"""A small parser for the agent verbs' command lines (``run/read/write/edit/status``, ``stat`` and
``jobs [wait|output|cancel|poll]``).

It accepts exactly the ordinary spellings of the options the typer commands declare (click's
rules: options anywhere before ``--``, ``--opt=value``, ``-tVALUE``, the last repeat wins) and
returns None for anything else (``--help``, an unknown option, a missing or malformed value...):
the caller then runs the full typer CLI, which prints the canonical usage error or help. So this
parser never has its own error texts; tests/cli/test_fastpath.py checks that both paths agree.
"""

from __future__ import annotations

# option -> (key, kind); kind: flag | str | int | uint | float | nnfloat | pair_str | pair_int
_TARGET = {
    "--workspace": ("workspace", "str"),
    "-C": ("workspace", "str"),
    "--instance": ("instance", "str"),
    "-i": ("instance", "str"),
    "--json": ("json_", "flag"),
}
_COMMON = {**_TARGET, "--quiet": ("quiet", "flag"), "-q": ("quiet", "flag")}
SPECS: dict[str, dict[str, tuple[str, str]]] = {
    "run": {
        **_COMMON,
        "--timeout": ("timeout", "float"),
        "-t": ("timeout", "float"),
        "--cwd": ("cwd", "str"),
        "--input": ("input", "str"),
        "--interrupt": ("interrupt", "flag"),
        "--wait": ("wait", "flag"),
        "--reset": ("reset", "flag"),
        "--max-output": ("max_output", "uint"),
        "--background": ("background", "flag"),
        "-b": ("background", "flag"),
        "--force": ("force", "flag"),
        "--unsandboxed": ("unsandboxed", "str"),
        "--network": ("network", "str"),
    },
    "read": {**_COMMON, "--start": ("start", "int"), "--end": ("end", "int")},
    "write": {
        **_COMMON,
        "--content": ("content", "str"),
        "--append": ("append", "flag"),
        "--create": ("create", "flag"),
        "--if-version": ("if_version", "str"),
        "--force": ("force", "flag"),
    },
    "edit": {
        **_COMMON,
        "--create": ("create", "str"),
        "--replace": ("replace", "pair_str"),
        "--insert": ("insert", "pair_int"),
        "--undo": ("undo", "flag"),
        "--view": ("view", "flag"),
        "--if-version": ("if_version", "str"),
        "--force": ("force", "flag"),
    },
    "status": {"--json": ("json_", "flag")},
    "stat": _TARGET,
    # `oh jobs` alone lists; its subcommands come first (group options before one are left to typer).
    "jobs": _TARGET,
    "jobs wait": {**_COMMON, "--timeout": ("timeout", "nnfloat"), "-t": ("timeout", "nnfloat")},
    "jobs output": {
        **_TARGET,
        "--offset": ("offset", "uint"),
        "--follow": ("follow", "flag"),
        "-f": ("follow", "flag"),
    },
    "jobs cancel": _TARGET,
    "jobs poll": _TARGET,
}
POSITIONALS = {
    "run": (1, None),
    "read": (1, 1),
    "write": (1, 1),
    "edit": (1, 1),
    "status": (0, 0),
    "stat": (1, 1),
    "jobs": (0, 0),
    "jobs wait": (1, 1),
    "jobs output": (1, 1),
    "jobs cancel": (1, 1),
    "jobs poll": (1, 1),
}  # (min, max)
JOB_COMMANDS = ("wait", "output", "cancel", "poll")


def _int(text: str) -> int | None:
    body = text[1:] if text[:1] in "+-" else text
    return int(text) if body.isdigit() and body.isascii() else None


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0.001 else None  # the typer option's min; NaN fails this too


def _nnfloat(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0 else None  # the typer option's min=0.0; NaN fails this too


def split_verb(argv: list[str]) -> tuple[str, list[str]]:
    """``jobs wait ...`` is the verb "jobs wait"; every other verb is one word."""
    if argv[0] == "jobs" and len(argv) > 1 and argv[1] in JOB_COMMANDS:
        return f"jobs {argv[1]}", argv[2:]
    return argv[0], argv[1:]


def parse(verb: str, argv: list[str]) -> tuple[dict, list[str]] | None:
    """(options, positionals), or None when the full CLI must handle this command line."""
    spec = SPECS.get(verb)
    if spec is None:
        return None
    opts: dict = {}
    pos: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok == "--":
            pos.extend(argv[i:])
            break
        if not tok.startswith("-") or tok == "-":
            pos.append(tok)
            continue
        name, eq, inline = tok.partition("=") if tok.startswith("--") else (tok[:2], "", tok[2:])
        if name not in spec:
            return None
        key, kind = spec[name]
        if kind == "flag":
            if eq or inline:
                return None
            opts[key] = True
            continue
        need = 2 if kind.startswith("pair") else 1
        values = [inline] if (eq or inline) else []
        while len(values) < need:
            if i >= len(argv):
                return None
            values.append(argv[i])
            i += 1
        if len(values) != need:
            return None
        if kind == "str":
            opts[key] = values[0]
        elif kind == "int":
            opts[key] = _int(values[0])
        elif kind == "uint":
            number = _int(values[0])
            opts[key] = number if number is not None and number >= 0 else None
        elif kind == "float":
            opts[key] = _float(values[0])
        elif kind == "nnfloat":
            opts[key] = _nnfloat(values[0])
        elif kind == "pair_str":
            opts[key] = (values[0], values[1])
        else:
            line = _int(values[0])
            opts[key] = None if line is None else (line, values[1])
        if opts[key] is None:
            return None
    lo, hi = POSITIONALS[verb]
    if len(pos) < lo and not (verb == "run" and _run_without_command(opts)):
        return None
    if hi is not None and len(pos) > hi:
        return None
    return opts, pos


def _run_without_command(opts: dict) -> bool:
    return any(k in opts for k in ("input", "interrupt", "wait", "reset"))
