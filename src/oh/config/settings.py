"""Typed settings with one precedence rule: flags > env ``OH_<KEY>`` > config.toml > defaults.

The file is TOML (read with ``tomllib``, changed in place with ``tomlkit``) at ``paths.config_file()``.
Every key is declared once in ``KEYS``; parsing, validation, ``oh config`` and shell completion
all read that table. Errors are ``SettingError`` whose message names the allowed values (and a
suggestion for a mistyped key).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import CliError
from ..protocol import runtimenames
from ..protocol.sandbox_defaults import DEFAULT_WRITABLE as _SANDBOX_WRITABLE
from . import paths

TYPE_CHECKING = False  # typing costs ~20 ms to import; these names serve annotations (and mypy) only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Callable

ENV_PREFIX = "OH_"


class SettingError(CliError, ValueError):
    """A bad key or value; the message says what is allowed."""


# ---------------------------------------------------------------------------- value parsers
def _choice(*allowed: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip().lower()
        if text not in allowed:
            raise SettingError(f"must be one of {', '.join(allowed)} (got {value!r})")
        return text

    parse.allowed = allowed  # type: ignore[attr-defined]
    return parse


def _int_range(lo: int, hi: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool):
            raise SettingError(f"must be an integer from {lo} to {hi} (got {value!r})")
        try:
            number = int(str(value).strip()) if not isinstance(value, int) else value
        except ValueError:
            raise SettingError(f"must be an integer from {lo} to {hi} (got {value!r})") from None
        if not lo <= number <= hi:
            raise SettingError(f"must be an integer from {lo} to {hi} (got {number})")
        return number

    return parse


def _positive_float(value: Any) -> float:
    if isinstance(value, bool):
        raise SettingError(f"must be a number of seconds > 0 (got {value!r})")
    try:
        number = float(str(value).strip()) if not isinstance(value, (int, float)) else float(value)
    except ValueError:
        raise SettingError(f"must be a number of seconds > 0 (got {value!r})") from None
    if not number > 0 or number != number or number == float("inf"):
        raise SettingError(f"must be a number of seconds > 0 (got {value!r})")
    return number


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}


def _size(value: Any) -> int:
    msg = f"must be a size in bytes >= 1024, optionally with K/M/G (e.g. 10M) (got {value!r})"
    if isinstance(value, bool):
        raise SettingError(msg)
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip().lower().replace(" ", "")
        digits = text.rstrip("kmgib")
        unit = text[len(digits) :]
        if unit not in _SIZE_UNITS or not digits:
            raise SettingError(msg)
        try:
            number = int(float(digits) * _SIZE_UNITS[unit])
        except ValueError:
            raise SettingError(msg) from None
    if number < 1024:
        raise SettingError(msg)
    return number


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise SettingError(f"must be true or false (got {value!r})")


def _host(value: Any) -> str:
    text = str(value).strip()
    from ..protocol.addresses import is_loopback_host  # lazy: startup of `oh config get`

    if not is_loopback_host(text):  # the same rule the backend enforces
        # Decision: refuse, do not warn. The backend's Host check only accepts
        # loopback names, and the token is the only thing between the network and a shell.
        raise SettingError(
            f"must be a loopback address: 127.0.0.1, ::1 or localhost (got {value!r}); oh never listens on the network"
        )
    return "127.0.0.1" if text == "localhost" else text.strip("[]")


def _branch_name(value: Any) -> str:
    text = str(value).strip()
    from ..protocol.branch import valid_name  # lazy: startup of `oh config get`

    if text and not valid_name(text):
        raise SettingError(
            "must be a git branch name like feature/x (letters, digits, . _ - + /), or empty for an "
            f"automatic oh/<date>-<time>-<agent> (got {value!r})"
        )
    return text


def _dir_list(value: Any) -> list[str]:
    """Absolute directories: a TOML list, or one string split on os.pathsep (env ``OH_ALLOWED_ROOTS``).
    Existence is checked when the backend starts (a root may be created later)."""
    items = value if isinstance(value, (list, tuple)) else [p for p in str(value).split(os.pathsep)]
    out = []
    for item in items:
        if not isinstance(item, str):
            raise SettingError(f"must be a list of absolute directory paths (got {item!r})")
        text = os.path.expanduser(item.strip())
        if not text:
            continue
        if not os.path.isabs(text):
            raise SettingError(f"must be absolute directory paths (got {item!r})")
        if os.path.realpath(text) == os.sep:
            raise SettingError("must not contain / (that would allow every path); name narrower directories")
        out.append(text)
    return out


def _rules(verdict: str) -> Callable[[Any], list[str]]:
    """Consent rules (protocol/consent.py): a TOML list of 'KIND: PATTERN' strings, or one per line
    (env ``OH_CONSENT_ALLOW`` etc.). Each is checked; the stored text is the rule's normal form."""

    def parse(value: Any) -> list[str]:
        from ..protocol.consent import RuleError, parse_rule  # lazy: the consent parser is heavy (startup)

        items = value if isinstance(value, (list, tuple)) else [line for line in str(value).splitlines()]
        out: list[str] = []
        for item in items:
            if isinstance(item, str) and not item.strip():
                continue
            try:
                text = parse_rule(item, verdict).text
            except RuleError as exc:
                raise SettingError(str(exc)) from None
            if text not in out:
                out.append(text)
        return out

    return parse


def _argv(value: Any) -> list[str]:
    """A command as its argv: a TOML list of strings, or one string split like a shell would (env
    ``OH_APPROVAL_NOTIFY``); never run by a shell unless it says ``sh -c`` itself. Empty: none."""
    if isinstance(value, (list, tuple)):
        items = list(value)
    else:
        import shlex  # lazy: startup of `oh config get`

        try:
            items = shlex.split(str(value))
        except ValueError as exc:
            raise SettingError(f"must be a command line or a list of its words ({exc})") from None
    if not all(isinstance(i, str) and "\0" not in i for i in items):
        raise SettingError(f"must be a list of strings, the command and its arguments (got {value!r})")
    return [str(i) for i in items]


def _origin(value: Any) -> str:
    """The approvals page's public origin behind the user's tunnel or proxy: http(s)://host[:port]; empty: none."""
    text = str(value).strip()
    if not text:
        return ""
    from ..protocol.approvalweb import origin_of  # lazy: startup of `oh config get`

    origin = origin_of(text)
    if origin is None or _urlpath(text) not in ("", "/"):
        raise SettingError(f"must be an origin like https://box.tailnet.ts.net (got {value!r})")
    return origin


def _urlpath(text: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(text.strip()).path


class Key:
    """One setting. A plain class, not a dataclass: `oh config get` starts without importing dataclasses
    (and the inspect/ast it pulls in; docs/benchmarks.md, "Commands people type")."""

    __slots__ = ("name", "parse", "default", "help", "allowed")

    def __init__(self, name: str, parse: Callable[[Any], Any], default: Any, help: str, allowed: str) -> None:
        self.name, self.parse, self.default, self.help = name, parse, default, help
        self.allowed = allowed  # human-readable allowed values

    def __repr__(self) -> str:
        return f"Key({self.name!r}, default={self.default!r})"

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def choices(self) -> tuple[str, ...]:
        return getattr(self.parse, "allowed", ())


KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key(
            "runtime",
            _choice(*runtimenames.NAMES),
            runtimenames.DEFAULT,
            "where actions execute: on this machine (local) or in VS Code (vscode)",
            "local | vscode",
        ),
        Key(
            "host", _host, "127.0.0.1", "address the backend listens on (loopback only)", "127.0.0.1 | ::1 | localhost"
        ),
        Key("port", _int_range(0, 65535), 0, "port the backend listens on; 0 picks a free one", "0-65535"),
        Key(
            "editor_timeout",
            _positive_float,
            30.0,
            "seconds to wait for an editor before an action fails with NO_EDITOR",
            "seconds > 0",
        ),
        Key(
            "action_timeout",
            _positive_float,
            300.0,
            "deadline in seconds for an action without its own timeout",
            "seconds > 0",
        ),
        Key(
            "open_editor",
            _choice("auto", "always", "never"),
            "auto",
            (
                "ask VS Code to open the workspace on `oh start --runtime vscode`: auto = only when no editor "
                "registers within 3 s and `code` is on PATH"
            ),
            "auto | always | never",
        ),
        Key("trace", _bool, True, "write the JSONL trace of every action (`oh logs`)", "true | false"),
        Key(
            "trace_max_bytes",
            _size,
            10 * 1024 * 1024,
            "size at which the trace file is rotated",
            "bytes >= 1024, e.g. 10M",
        ),
        Key(
            "allowed_roots",
            _dir_list,
            [],
            (
                "directories besides the workspace that file actions and run cwds may use (e.g. /tmp); `oh start "
                "--allow DIR` adds more"
            ),
            f"absolute directories ({os.pathsep}-separated in OH_ALLOWED_ROOTS)",
        ),
        Key(
            "max_shells",
            _int_range(1, 256),
            8,
            (
                "shells per agent shell key: a run arriving while the agent's shell is busy (or a background job) "
                "gets an extra shell, up to this many in all; then BUSY"
            ),
            "1-256",
        ),
        Key(
            "user_shell",
            _bool,
            True,
            (
                "the agent's shell (local runtime, `oh attach`, VS Code's default terminal): your $SHELL (bash or "
                "zsh) reading your rc files, on a terminal; false = the clean shell (bash without rc files) for "
                "reproducible runs; `oh start --clean-shell` for one backend"
            ),
            "true | false",
        ),
        Key(
            "shell_startup_timeout",
            _positive_float,
            5.0,
            (
                "seconds your rc files may take when the agent's shell starts; slower, or an rc that exits, gives "
                "the clean shell and a note"
            ),
            "seconds > 0",
        ),
        Key(
            "sandbox",
            _choice("workspace-write", "read-only", "off"),
            "workspace-write",
            (
                "the agent's shell (local runtime, `oh attach`, VS Code's engine terminal) in a bubblewrap "
                "sandbox: workspace-write (system and HOME read-only, the workspace and caches writable, secrets "
                'hidden), read-only, or off (unconfined, as you); README "Sandbox"'
            ),
            "workspace-write | read-only | off",
        ),
        Key(
            "sandbox_network",
            _bool,
            False,
            (
                "network inside the sandbox (off: a private loopback only; a command that needs it can ask to run "
                "unsandboxed)"
            ),
            "true | false",
        ),
        Key(
            "sandbox_writable",
            _dir_list,
            list(_SANDBOX_WRITABLE),
            (
                "directories besides the workspace the sandboxed shell may write (the caches package managers "
                "use); missing ones are skipped"
            ),
            f"absolute directories, ~ allowed ({os.pathsep}-separated in OH_SANDBOX_WRITABLE)",
        ),
        Key(
            "sandbox_fallback",
            _choice("refuse", "unconfined"),
            "refuse",
            (
                "where bubblewrap cannot run (not installed, user namespaces disabled, macOS, Windows): refuse = "
                "commands fail with the fix; unconfined = they run unsandboxed (said once)"
            ),
            "refuse | unconfined",
        ),
        Key(
            "sandbox_bwrap",
            str,
            "",
            "the bubblewrap program (empty: bwrap on PATH)",
            "a program name or path",
        ),
        Key(
            "job_retention",
            _positive_float,
            3600.0,
            "seconds a finished background job (its state and output) is kept for `oh jobs` / the job action",
            "seconds > 0",
        ),
        Key(
            "repeat_limit",
            _int_range(0, 1000),
            0,
            (
                "the same command run this many times in a row by an agent gets a note (or is skipped, see "
                "repeat_action); 0 = off"
            ),
            "0-1000",
        ),
        Key(
            "repeat_action",
            _choice("note", "skip"),
            "note",
            "what repeat_limit does: add a note to the observation, or skip the command (error REPEATED)",
            "note | skip",
        ),
        Key(
            "branch",
            _bool,
            False,
            (
                "git-branch mode: before an agent's first change (write, edit, command) put the workspace on a "
                "feature branch (docs/protocol.md §3.12)"
            ),
            "true | false",
        ),
        Key(
            "branch_name",
            _branch_name,
            "",
            "branch mode's branch; empty = a new oh/<date>-<time>-<agent> (an existing branch is never overwritten)",
            "a git branch name, or empty",
        ),
        Key(
            "on_dirty",
            _choice("ask", "stash", "carry", "abort", "review"),
            "ask",
            (
                "branch mode with uncommitted changes: ask (VS Code dialog / terminal prompt), stash them, carry "
                "them to the new branch, abort, or use review mode instead of a branch (decided at `oh start`)"
            ),
            "ask | stash | carry | abort | review",
        ),
        Key(
            "on_not_git",
            _choice("ask", "init", "abort", "review"),
            "ask",
            (
                "branch mode in a folder that is not a git repository: ask, run `git init`, abort, or use review "
                "mode instead (decided at `oh start`)"
            ),
            "ask | init | abort | review",
        ),
        Key(
            "isolate",
            _choice("off", "worktree", "on-request"),
            "off",
            (
                "a git worktree per agent (on its own branch, outside the repository; `oh merge` brings it back): "
                "off, worktree (every agent), on-request (agents sending X-OH-Isolate: worktree)"
            ),
            "off | worktree | on-request",
        ),
        Key(
            "review",
            _bool,
            False,
            (
                "proposal mode: the agent's write and edit actions become proposals you accept or reject (VS "
                "Code: a diff editor; local runtime: `oh review`)"
            ),
            "true | false",
        ),
        Key(
            "history",
            _bool,
            True,
            (
                "record every action's file changes (commands included) so `oh undo` can revert them (on by default; "
                'false turns it off); README "History and undo"'
            ),
            "true | false",
        ),
        Key(
            "history_store_ignored",
            _bool,
            False,
            (
                "history: store the content of .gitignored trees too (node_modules, .venv, build output); off: "
                "changed, not stored"
            ),
            "true | false",
        ),
        Key(
            "history_max_file",
            _positive_float,
            64.0,
            "history: MiB above which a changed file is hashed but not stored (its change is shown, not undone)",
            "MiB > 0",
        ),
        Key(
            "history_max_mb",
            _positive_float,
            1024.0,
            (
                "history: MiB the store of recorded contents may take; past it the oldest entries are collected "
                "(listed, no longer undoable)"
            ),
            "MiB > 0",
        ),
        Key(
            "review_timeout",
            _positive_float,
            600.0,
            "seconds a proposal waits for your decision before the agent gets TIMEOUT (nothing is written)",
            "seconds > 0",
        ),
        Key(
            "consent",
            _choice("never", "risky", "commands", "changes", "all"),
            "never",
            (
                "when to ask you before an agent's action runs: never, risky (built-in risky commands, sensitive "
                "paths, security_risk HIGH), commands (every command), changes (every write/edit: review mode), "
                'all (commands, changes and reads); README "Consent"'
            ),
            "never | risky | commands | changes | all",
        ),
        Key(
            "approval_timeout",
            _positive_float,
            600.0,
            (
                "seconds an action waits for your answer (`oh approve`, the live view, VS Code) before the agent "
                "gets REJECTED; it is not run"
            ),
            "seconds > 0",
        ),
        Key(
            "approval_notify",
            _argv,
            [],
            (
                "a command oh runs for each new approval question, with OH_APPROVAL_ID, OH_APPROVAL_SUMMARY and "
                'OH_APPROVAL_URL in its environment (no shell, no credential); README "Approvals from anywhere"'
            ),
            "a command: ['notify-send', 'oh asks'] (a string is split like a shell would)",
        ),
        Key(
            "approvals_origin",
            _origin,
            "",
            "the approvals page's public origin behind your own tunnel or proxy (e.g. https://box.tailnet.ts.net)",
            "http(s)://host[:port] or empty",
        ),
        Key(
            "approvals_port",
            _int_range(0, 65535),
            0,
            "loopback port of the approvals page (0: any free port; `oh approvals --web` prints it)",
            "0-65535",
        ),
        Key(
            "consent_allow",
            _rules("allow"),
            [],
            (
                "consent rules that allow without asking, e.g. ['run: npm test *', 'write: docs/**'] (`oh config "
                "add consent_allow RULE`)"
            ),
            "rules 'run|write|read|unsandboxed|network: PATTERN' (one per line in OH_CONSENT_ALLOW)",
        ),
        Key(
            "consent_ask",
            _rules("ask"),
            [],
            "consent rules that always ask, e.g. ['run: git push *', 'risk: MEDIUM']",
            "rules 'run|write|read|risk|unsandboxed|network: PATTERN'",
        ),
        Key(
            "consent_deny",
            _rules("deny"),
            [],
            (
                "consent rules that refuse (REJECTED, never asked), e.g. ['run: rm -rf *', 'write: .env']; deny "
                "beats ask beats allow"
            ),
            "rules 'run|write|read|risk|unsandboxed|network: PATTERN'",
        ),
        Key(
            "setup_script",
            _bool,
            True,
            (
                "run the workspace's .oh/setup.sh (or .openhands/setup.sh) once per backend, as a job, before the "
                "first action (docs/protocol.md §3.14)"
            ),
            "true | false",
        ),
        Key(
            "log_level",
            _choice("debug", "info", "warning", "error"),
            "info",
            "backend log level (log file under the state dir)",
            "debug | info | warning | error",
        ),
    )
}


def suggest(name: str) -> str:
    import difflib  # lazy: only for a mistyped key

    close = difflib.get_close_matches(name.lower().replace("-", "_"), KEYS, n=1, cutoff=0.5)
    return f" Did you mean {close[0]!r}?" if close else ""


def key(name: str) -> Key:
    norm = name.strip().lower().replace("-", "_")
    if norm not in KEYS:
        raise SettingError(f"unknown setting {name!r}.{suggest(name)} Known settings: {', '.join(KEYS)}.")
    return KEYS[norm]


def parse_value(name: str, value: Any) -> Any:
    k = key(name)
    try:
        return k.parse(value)
    except SettingError as exc:
        raise SettingError(f"{k.name} {exc}") from None


# ---------------------------------------------------------------------------- the file
class ConfigFileError(SettingError):
    pass


def read_file(path: Path | None = None) -> dict[str, Any]:
    """The raw table in config.toml ({} when there is none). Raises ConfigFileError on bad TOML."""
    path = path or paths.config_file()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigFileError(
            f"cannot read {path}: {exc.strerror or exc}. Fix: make its directory readable, or point OH_HOME at a "
            "directory you can read and write (e.g. `export OH_HOME=~/.oh`)."
        ) from None
    import tomllib  # lazy: no config.toml, no TOML parser to import (startup of `oh config get`)

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"{path} is not valid TOML: {exc}. Fix it with `oh config edit`.") from None
    return data


def set_in_file(name: str, value: Any, path: Path | None = None) -> Path:
    """Store one key in config.toml, keeping the file's comments, layout and key order (tomlkit;
    rewriting the table with tomli-w dropped comments and sorted the keys)."""
    return _edit_file(lambda doc: doc.__setitem__(name, value), path)


def unset_in_file(name: str, path: Path | None = None) -> Path:
    """Remove one key from config.toml; everything else in the file stays as it was."""
    return _edit_file(lambda doc: doc.__delitem__(name), path)


def _edit_file(change: Callable[[Any], None], path: Path | None) -> Path:
    import tomlkit

    path = path or paths.config_file()
    read_file(path)  # the same clear error as everywhere when the file is not valid TOML
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    doc = tomlkit.parse(text)
    change(doc)
    paths.write_private_file(path, tomlkit.dumps(doc))
    return path


def validate_table(data: dict[str, Any], source: str) -> list[str]:
    """Problems in a config table, each a full sentence naming the fix."""
    problems = []
    for name, value in data.items():
        if name not in KEYS:
            problems.append(
                f"{source}: unknown setting {name!r}.{suggest(name)} Remove it with `oh config unset {name}`."
            )
            continue
        try:
            KEYS[name].parse(value)
        except SettingError as exc:
            problems.append(f"{source}: {name} {exc}. Fix it with `oh config set {name} VALUE`.")
    return problems


# ---------------------------------------------------------------------------- resolution
class Resolved:
    """A setting's effective value and where it comes from (a plain class: see Key)."""

    __slots__ = ("value", "origin", "detail")

    def __init__(self, value: Any, origin: str, detail: str = "") -> None:
        self.value = value
        self.origin = origin  # "flag" | "env" | "file" | "default"
        self.detail = detail  # env var name or file path

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resolved) and (self.value, self.origin, self.detail) == (
            other.value,
            other.origin,
            other.detail,
        )

    def __repr__(self) -> str:
        return f"Resolved({self.value!r}, {self.origin!r}, {self.detail!r})"


class Settings:
    """Resolved settings. ``Settings.load(flags)``; ``s.runtime``, ``s.origin("port")``."""

    def __init__(self, values: dict[str, Resolved]) -> None:
        self._values = values

    if TYPE_CHECKING:  # one property per key, made below the class (_value_of)

        def __getattr__(self, name: str) -> Any: ...

    @classmethod
    def load(
        cls, flags: dict[str, Any] | None = None, *, env: dict[str, str] | None = None, path: Path | None = None
    ) -> "Settings":
        source: Mapping[str, str] = os.environ if env is None else env
        path = path or paths.config_file()
        table = read_file(path)
        problems = validate_table(table, str(path))
        if problems:
            raise ConfigFileError("\n".join(problems))
        values: dict[str, Resolved] = {}
        for name, k in KEYS.items():
            flag = (flags or {}).get(name)
            if flag is not None:
                values[name] = Resolved(parse_value(name, flag), "flag")
            elif source.get(k.env, "") != "":
                try:
                    values[name] = Resolved(k.parse(source[k.env]), "env", k.env)
                except SettingError as exc:
                    raise SettingError(f"environment variable {k.env} {exc}. Unset it or fix its value.") from None
            elif name in table:
                values[name] = Resolved(k.parse(table[name]), "file", str(path))
            else:
                values[name] = Resolved(k.default, "default")
        return cls(values)

    def get(self, name: str) -> Any:
        return self._values[key(name).name].value

    def origin(self, name: str) -> Resolved:
        return self._values[key(name).name]

    def items(self):
        return self._values.items()


def _value_of(name: str) -> property:
    return property(lambda self: self._values[name].value, doc=KEYS[name].help)


# One read-only attribute per key, generated from the key table (``s.runtime``, ``s.port``, ...):
# a real attribute, so a typo is an AttributeError at once and ``dir(s)`` lists the keys.
for _name in KEYS:
    setattr(Settings, _name, _value_of(_name))
del _name


def display(value: Any) -> str:
    """A value as config.toml writes it (a list as a TOML array, never a Python repr)."""
    if isinstance(value, (list, tuple)):
        import json  # a JSON array of strings/numbers is a valid TOML array

        return "[" + ", ".join(json.dumps(item, ensure_ascii=False) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}"
    return str(value)


JOB_SETTINGS = (
    "max_shells",
    "job_retention",
    "repeat_limit",
    "repeat_action",
    "setup_script",
    "user_shell",
    "shell_startup_timeout",
    "sandbox",
    "sandbox_network",
    "sandbox_writable",
    "sandbox_fallback",
    "sandbox_bwrap",
)


def job_settings(s: "Settings") -> dict:
    """The settings the headless editor (`oh attach`) takes as arguments (it reads no config; the backend gets
    its whole configuration from launcher/backendconfig.resolve)."""
    out = {name: s.get(name) for name in JOB_SETTINGS}
    out["sandbox_writable"] = os.pathsep.join(out["sandbox_writable"])  # one flag value
    out["sandbox_bwrap"] = out["sandbox_bwrap"] or None  # unset: bwrap on PATH
    return out
