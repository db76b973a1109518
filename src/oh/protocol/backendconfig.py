"""A backend's whole configuration (``BackendConfig``), spelled once (issue 38 item 3).

The launcher (``launcher/backendconfig.py``) resolves it from the user's settings and sends it as JSON on the
backend's private stdin, after the token (never in argv or the environment); ``python -m oh.backend`` decodes it
(``from_wire``). A hand-started backend gets flags instead, made from the same fields (``add_arguments``).

Adding a setting: a key in ``config/settings.py`` and a field here with ``setting="<key>"`` in its metadata (the
launcher copies it; the wire and the hand-start flag follow from the field), and the code that uses it.
The backend reads no user settings itself (docs/architecture.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import OhBaseError
from .branch import Plan
from .consent import Policy, RuleError, parse_rules
from .sandbox import SandboxError, Spec, spec_from

MAX_FRAME = 128 * 1024 * 1024  # a 64 MiB file read, JSON-escaped, must fit
DEADLINE_GRACE = 5.0
OPEN_TIMEOUT = 5.0  # seconds for a peer to complete the HTTP upgrade (our clients need milliseconds)
MAX_IN_FLIGHT = 256  # per agent connection: actions in flight (more: BUSY)
MAX_OUTPUT = 16 * 1024 * 1024  # per agent connection: bytes of observations not yet sent


class ConfigError(OhBaseError, ValueError):
    """A configuration the backend cannot take (bad JSON, a wrong type, a bad rule): said, never a traceback."""


def _f(default: Any = None, *, setting: str | None = None, wire: str = "plain", flag: bool = True) -> Any:
    """A field: ``setting``, the settings key the launcher copies into it; ``wire``, how it travels as JSON
    (plain, path, strs, spec, plan, policy); ``flag``: a hand-started backend takes it as ``--name``."""
    meta = {"setting": setting, "wire": wire, "flag": flag}
    if isinstance(default, (list, dict)):
        raise TypeError("mutable default")
    return field(default=default, metadata=meta)


@dataclass
class BackendConfig:
    workspace: str = _f(".")
    runtime: str = _f("local", setting="runtime")  # "local" | "vscode"
    host: str = _f("127.0.0.1", setting="host")
    port: int = _f(0, setting="port")
    instance_id: str = _f("")
    editor_timeout: float = _f(30.0, setting="editor_timeout")
    action_timeout: float = _f(300.0, setting="action_timeout")  # deadline for an action without its own timeout
    trace_path: Path | None = _f(None, wire="path")
    trace_max_bytes: int = _f(10 * 1024 * 1024, setting="trace_max_bytes")
    allowed_roots: list[str] | None = _f(None, wire="strs")  # extra roots besides the workspace (`oh start --allow`)
    write_session: bool = _f(True, flag=False)
    session_dir: Path | None = _f(None, wire="path", flag=False)
    max_frame: int = _f(MAX_FRAME)
    deadline_grace: float = _f(DEADLINE_GRACE)
    # Keepalive: a peer that stops reading (or freezes) is dropped after about interval + timeout,
    # which is what bounds a send to it (docs/reliability.md).
    ping_interval: float = _f(20.0)
    ping_timeout: float = _f(20.0)
    # A send to a peer that does not read is abandoned (and the peer dropped) after this long.
    send_timeout: float = _f(40.0)
    # Jobs and repetition control (docs/protocol.md §3.8, §3.10)
    max_shells: int = _f(8, setting="max_shells")
    job_retention: float = _f(3600.0, setting="job_retention")
    repeat_limit: int = _f(0, setting="repeat_limit")
    repeat_action: str = _f("note", setting="repeat_action")
    spool_dir: str | None = _f(None)  # background jobs' output (None: a private temporary directory)
    # the local runtime's agent shell: the user's (True) or the clean one; None: its default
    user_shell: bool | None = _f(None, setting="user_shell")
    shell_startup_timeout: float | None = _f(None, setting="shell_startup_timeout")
    # The agent shell's sandbox (README "Sandbox"): None = the runtime's default; and oh's own directories,
    # hidden in it.
    sandbox: Spec | None = _f(None, wire="spec")
    sandbox_hidden: tuple[str, ...] = _f((), wire="strs")
    # Proposal mode (docs/protocol.md §3.11): write/edit wait for the user's decision, at most this long.
    review: bool = _f(False)
    # History (issue 29, docs/protocol.md §3.15): None = off; else the directory of this workspace's timeline.
    history_dir: str | None = _f(None)
    history_store_ignored: bool = _f(False, setting="history_store_ignored")
    history_max_file: int = _f(64 * 1024 * 1024)
    history_max_bytes: int = _f(1024 * 1024 * 1024)  # the store's bound (setting history_max_mb, issue 39)
    review_timeout: float = _f(600.0, setting="review_timeout")
    # Pre-auth bounds (backend/guard.py): seconds to complete the upgrade, and the fd budget the
    # caps on connections that have not sent their request yet derive from (None: RLIMIT_NOFILE).
    open_timeout: float = _f(OPEN_TIMEOUT)
    fd_budget: int | None = _f(None)
    # Git-branch mode (docs/protocol.md §3.12): None = off; else the user's choices.
    branch: Plan | None = _f(None, wire="plan")
    # A git worktree per agent (issue 37, docs/protocol.md §3.19): off | worktree (every agent) | on-request
    # (agents sending `X-OH-Isolate: worktree`); the worktrees live under ``worktree_root`` (an allowed root).
    isolate: str = _f("off", setting="isolate")
    worktree_root: str | None = _f(None)
    # Consent (docs/protocol.md §3.13): None = ask for nothing; else the level and the user's rules.
    consent: Policy | None = _f(None, wire="policy")
    approval_timeout: float = _f(600.0, setting="approval_timeout")
    # The approvals page (issue 40, backend/approvalweb.py): served on its own loopback port (0: any free one)
    # whenever consent is on; the public origin of the user's tunnel, if any; a notifier's argv.
    approvals_port: int = _f(0, setting="approvals_port")
    approvals_origin: str | None = _f(None)
    approval_notify: tuple[str, ...] = _f((), wire="strs")
    # Workspace bootstrap (docs/protocol.md §3.14): run .oh/setup.sh (or .openhands/setup.sh) once, before the
    # first action.
    setup_script: bool = _f(True, setting="setup_script")
    # Per agent connection (backend/flow.py): actions in flight (more: BUSY), bytes of observations
    # not yet sent (more: its frames are not read until they drain).
    max_in_flight: int = _f(MAX_IN_FLIGHT)
    max_output: int = _f(MAX_OUTPUT)
    # The Unix-socket endpoint (issue 28, backend/listen.py): off in-process unless asked; `python -m oh.backend`
    # turns it on. None path: the workspace's default (<state dir>/sock/<hash>/oh.sock, or OH_SOCKET_DIR).
    unix_socket: bool = _f(False)
    unix_socket_path: str | None = _f(None)
    share_book: str | None = _f(None)  # issue 28: the shares on disk (backend/sharestore.py); None: memory only


def copied_settings() -> dict[str, str]:
    """{field: settings key} for the fields the launcher copies from the settings as they are."""
    return {f.name: f.metadata["setting"] for f in dataclasses.fields(BackendConfig) if f.metadata.get("setting")}


# ------------------------------------------------------------------ the wire (JSON on the private stdin)


def _encode(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "path":
        return str(value)
    if kind == "strs":
        return [str(v) for v in value]
    if kind == "spec":
        return dataclasses.asdict(value)
    if kind == "plan":
        return dataclasses.asdict(value)
    if kind == "policy":
        rules: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
        for rule in value.rules:
            rules[rule.verdict].append(rule.text)
        return {
            "level": value.level,
            "rules": rules,
            "workspace": value.workspace,
            "home": value.home,
            "protected": list(value.protected),
        }
    return value


def _strs(name: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{name} must be a list of strings")
    return list(value)


def _object(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a JSON object")
    return value


def _decode_policy(value: dict[str, Any], workspace: str) -> Policy:
    rules = _object("consent.rules", value.get("rules", {}))
    try:
        parsed = parse_rules(rules.get("allow", ()), rules.get("ask", ()), rules.get("deny", ()))
    except RuleError as exc:
        raise ConfigError(f"consent rules: {exc}") from None
    level = value.get("level", "never")
    if level not in ("never", "risky", "commands", "changes", "all"):
        raise ConfigError(f"consent level must be never, risky, commands, changes or all (got {level!r})")
    home = value.get("home", os.path.expanduser("~"))
    protected = tuple(_strs("consent.protected", value.get("protected", [])))
    return Policy(level, parsed, str(value.get("workspace", workspace)), str(home), protected)


def _decode(name: str, kind: str, value: Any, workspace: str) -> Any:
    if value is None:
        return None
    if kind == "path":
        return Path(str(value))
    if kind == "strs":
        items = _strs(name, value)
        return items if name == "allowed_roots" else tuple(items)
    if kind == "spec":
        spec = _object(name, value)
        try:
            return spec_from({f"sandbox_{k}" if k != "level" else "sandbox": v for k, v in spec.items()})
        except SandboxError as exc:
            raise ConfigError(str(exc)) from None
    if kind == "plan":
        plan = _object(name, value)
        return Plan(plan.get("name"), str(plan.get("on_dirty", "ask")), str(plan.get("on_not_git", "ask")))
    if kind == "policy":
        return _decode_policy(_object(name, value), workspace)
    return value


def _check_plain(f: dataclasses.Field[Any], value: Any) -> Any:
    """A plain field's JSON value, of the default's type (an int where a float is wanted is fine)."""
    want = type(f.default) if f.default is not None else None
    if value is None or want is None:
        return value
    if want is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, want) or (want is int and isinstance(value, bool)):
        raise ConfigError(f"{f.name} must be a {want.__name__} (got {value!r})")
    return value


def to_wire(config: BackendConfig) -> dict[str, Any]:
    """The configuration as a JSON object (every field; ``from_wire`` gives it back)."""
    return {f.name: _encode(f.metadata["wire"], getattr(config, f.name)) for f in dataclasses.fields(config)}


def from_wire(data: Any) -> BackendConfig:
    """A configuration from its JSON object; an unknown key or a wrong type is a ConfigError."""
    given = _object("the configuration", data)
    known = {f.name: f for f in dataclasses.fields(BackendConfig)}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ConfigError(f"unknown backend settings: {', '.join(unknown)}")
    workspace = str(given.get("workspace", "."))
    values: dict[str, Any] = {}
    for name, value in given.items():
        f = known[name]
        kind = f.metadata["wire"]
        values[name] = _check_plain(f, value) if kind == "plain" else _decode(name, kind, value, workspace)
    return BackendConfig(**values)


def dumps(config: BackendConfig) -> str:
    return json.dumps(to_wire(config), separators=(",", ":"))


# ------------------------------------------------------------------ a hand-started backend's flags


def _flag_type(f: dataclasses.Field[Any]) -> Any:
    if f.metadata["wire"] != "plain":
        return json.loads  # the field's wire form, as JSON
    if f.type in ("bool", "bool | None"):
        return lambda v: v.strip().lower() in ("1", "true", "yes", "on")
    if f.type in ("int", "int | None"):
        return int
    if f.type in ("float", "float | None"):
        return float
    return str


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One ``--name`` per field (dashes for underscores; a non-plain field takes its JSON wire form);
    unset flags keep the field's default."""
    for f in dataclasses.fields(BackendConfig):
        if f.metadata["flag"]:
            kind = f.metadata["wire"]
            helptext = f"default {f.default!r}" + ("" if kind == "plain" else f" (JSON, as on the wire: {kind})")
            dest = "cfg_" + f.name
            flag = "--" + f.name.replace("_", "-")
            if kind == "plain" and f.type in ("bool", "bool | None"):  # `--review` alone means true
                parser.add_argument(flag, dest=dest, type=_flag_type(f), nargs="?", const=True, help=helptext)
            else:
                parser.add_argument(flag, dest=dest, type=_flag_type(f), help=helptext)


def from_arguments(args: argparse.Namespace) -> BackendConfig:
    """The configuration of the flags ``add_arguments`` made (those left out: the defaults)."""
    given = {
        f.name: getattr(args, "cfg_" + f.name)
        for f in dataclasses.fields(BackendConfig)
        if f.metadata["flag"] and getattr(args, "cfg_" + f.name, None) is not None
    }
    return from_wire(given)
