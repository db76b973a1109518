"""``oh mcp install CLIENT``: add oh's MCP server to a client's configuration file.

One ``Plan`` per client and scope: which file, its text before and after. Merging keeps everything
else in the file (other servers, other settings; TOML comments through tomlkit) and is idempotent:
a second install changes nothing. A file we cannot parse (JSON with comments, broken TOML) is never
rewritten: the error shows the entry to add by hand. Locations and keys (checked against each
client's documentation, 2026-11, then run for real by tests/mcp/test_real_clients.py):

| client | user scope | project scope | key |
|---|---|---|---|
| claude | ~/.claude.json | .mcp.json | mcpServers.NAME {type: stdio, command, args, env} |
| codex | $CODEX_HOME/config.toml | .codex/config.toml (trusted projects) | [mcp_servers.NAME] command, args, env_vars |
| gemini | ~/.gemini/settings.json | .gemini/settings.json | mcpServers.NAME {command, args} |
| vscode | <VS Code user dir>/mcp.json | .vscode/mcp.json | servers.NAME {type: stdio, command, args} |
| cursor | ~/.cursor/mcp.json | .cursor/mcp.json | mcpServers.NAME {command, args} |

$CODEX_HOME is ~/.codex when unset.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CliError

CLIENTS = ("claude", "codex", "gemini", "vscode", "cursor")
SCOPES = ("user", "project")
# VS Code and Cursor expand ${workspaceFolder} in args: the server then finds the backend of the
# window's folder whatever directory the editor starts it in. The CLIs start servers in the
# project directory, where `oh mcp` looks by default.
_WORKSPACE_VAR = {"vscode": "${workspaceFolder}", "cursor": "${workspaceFolder}"}
# Codex starts a stdio server with only a few of its own variables (HOME, PATH, USER, LANG...), not
# its whole environment: `oh mcp` would then look for backends in the default oh directories while
# `oh start` (run with OH_HOME or XDG dirs set) registered them elsewhere, and answer NO_BACKEND.
# `env_vars` names the variables Codex forwards from its environment (unset ones are skipped).
CODEX_FORWARDED_ENV = ("OH_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME")


class InstallError(CliError):
    pass


@dataclass
class Plan:
    client: str
    scope: str
    path: Path
    before: str | None  # None: the file does not exist yet
    after: str
    entry: dict[str, Any]
    target: Path | None = None  # the file written: ``path`` itself, or a user config's symlink target

    @property
    def written(self) -> Path:
        return self.target or self.path

    @property
    def changed(self) -> bool:
        return self.before != self.after


def oh_executable() -> str:
    """Absolute path of the running `oh`, so the client can start it from its own environment (no PATH needed)."""
    argv0 = sys.argv[0] if sys.argv else ""
    candidates = []
    if argv0 and os.path.basename(argv0) in ("oh", "oh.exe"):
        candidates.append(argv0 if os.sep in argv0 else shutil.which(argv0))
    scripts = os.path.dirname(sys.executable)  # venv bin/ (Scripts\\ on Windows), where pip puts `oh`
    candidates += [os.path.join(scripts, "oh"), os.path.join(scripts, "oh.exe")]
    candidates.append(shutil.which("oh"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise InstallError(
        "cannot find the `oh` executable (installed with pip/pipx, it sits next to its Python). "
        "Reinstall oh, or add the server by hand with the command `python -m oh mcp`."
    )


def server_args(client: str, extra: list[str] | None = None) -> list[str]:
    args = ["mcp"]
    if client in _WORKSPACE_VAR:
        args += ["--workspace", _WORKSPACE_VAR[client]]
    return args + list(extra or [])


def entry_for(client: str, command: str, args: list[str]) -> dict[str, Any]:
    if client == "claude":
        return {"type": "stdio", "command": command, "args": args, "env": {}}
    if client == "vscode":
        return {"type": "stdio", "command": command, "args": args}
    if client == "codex":
        return {"command": command, "args": args, "env_vars": list(CODEX_FORWARDED_ENV)}
    return {"command": command, "args": args}


def vscode_user_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    if env.get("VSCODE_APPDATA"):
        base = Path(env["VSCODE_APPDATA"])
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    elif os.name == "nt":
        base = Path(env.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        base = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    return base / "Code" / "User"


def config_path(client: str, scope: str, *, project: Path, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    if client == "claude":
        return home / ".claude.json" if scope == "user" else project / ".mcp.json"
    if client == "codex":
        return (
            Path(env.get("CODEX_HOME") or home / ".codex") / "config.toml"
            if scope == "user"
            else project / ".codex" / "config.toml"
        )
    if client == "gemini":
        return (home if scope == "user" else project) / ".gemini" / "settings.json"
    if client == "vscode":
        return vscode_user_dir(env) / "mcp.json" if scope == "user" else project / ".vscode" / "mcp.json"
    if client == "cursor":
        return (home if scope == "user" else project) / ".cursor" / "mcp.json"
    raise InstallError(f"unknown client {client!r}: one of {', '.join(CLIENTS)}.")


def _merge_json(text: str | None, path: Path, key: str, name: str, entry: dict[str, Any]) -> str:
    data: Any = {}
    if text is not None and text.strip():
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InstallError(
                f"{path} is not plain JSON ({exc.msg}, line {exc.lineno}); it may hold comments. Not touching it: "
                f'add this under "{key}" by hand:\n' + json.dumps({name: entry}, indent=2)
            ) from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; not touching it.")
    servers = data.get(key)
    if servers is None:
        servers = data[key] = {}
    if not isinstance(servers, dict):
        raise InstallError(f'{path}: "{key}" is not an object; not touching it.')
    if servers.get(name) == entry and text is not None:
        return text  # already there, byte for byte untouched
    servers[name] = entry
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _merge_toml(text: str | None, path: Path, name: str, entry: dict[str, Any]) -> str:
    try:
        import tomlkit
    except ImportError:
        raise InstallError(
            f"editing Codex's TOML config needs tomlkit: {sys.executable} -m pip install tomlkit (the `mcp` extra)."
        ) from None
    try:
        doc = tomlkit.parse(text or "")
    except Exception as exc:  # noqa: BLE001 - tomlkit raises its own ParseError family
        raise InstallError(f"{path} is not valid TOML ({exc}); not touching it.") from None
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    if not isinstance(servers, dict):
        raise InstallError(f"{path}: mcp_servers is not a table; not touching it.")
    current = servers.get(name)
    if current is not None and isinstance(current, dict) and isinstance(current.get("env_vars"), list):
        # variables the user forwards on their own stay forwarded, after ours
        entry = dict(
            entry,
            env_vars=entry.get("env_vars", []) + [v for v in current["env_vars"] if v not in entry.get("env_vars", [])],
        )
    if current is not None and {k: current.get(k) for k in entry} == entry and text is not None:
        return text
    table = tomlkit.table()
    for k, v in entry.items():
        table[k] = v
    if current is not None and isinstance(current, dict):
        for k, v in current.items():  # keep the user's own keys (env, timeouts, enabled_tools...)
            if k not in entry:
                table[k] = v
    servers[name] = table
    return tomlkit.dumps(doc)


def plan(
    client: str,
    scope: str = "user",
    *,
    name: str = "oh",
    project: Path | None = None,
    command: str | None = None,
    extra_args: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> Plan:
    if client not in CLIENTS:
        raise InstallError(f"unknown client {client!r}: one of {', '.join(CLIENTS)}.")
    if scope not in SCOPES:
        raise InstallError(f"unknown scope {scope!r}: user or project.")
    project = (project or Path.cwd()).resolve()
    path = config_path(client, scope, project=project, env=env)
    entry = entry_for(client, command or oh_executable(), server_args(client, extra_args))
    target = _target(path, scope, project, _hand_entry(client, name, entry))
    try:
        before = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = None
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror or exc}") from None
    if client == "codex":
        after = _merge_toml(before, path, name, entry)
    else:
        after = _merge_json(before, path, "servers" if client == "vscode" else "mcpServers", name, entry)
    return Plan(client, scope, path, before, after, entry, None if target == path else target)


def _hand_entry(client: str, name: str, entry: dict[str, Any]) -> str:
    if client == "codex":
        return f"[mcp_servers.{name}]\n" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in entry.items())
    return json.dumps({name: entry}, indent=2)


def _target(path: Path, scope: str, project: Path, by_hand: str) -> Path:
    """The file to write for ``path``, or InstallError with the reason it is left alone.

    Project scope: a symlink anywhere below the project (the file, or a `.vscode` directory) is
    refused: writing through it would copy another file's content (say ``~/.claude.json``) into a
    file the project commits. User scope: a symlinked config (dotfiles) is written at its target,
    so the link stays. A read-only file is never overwritten, in either scope."""
    by_hand = f"\nAdd this by hand if you want it there:\n{by_hand}"
    if scope == "project":
        real = Path(os.path.realpath(path))
        if real != project / path.relative_to(project):
            link = next((p for p in [path, *path.parents] if p.is_symlink()), path)
            raise InstallError(
                f"{link} is a symlink to {os.path.realpath(link)}: not writing through it (the project's file would "
                f"take that file's content). Replace the link with a regular file, or use --scope user." + by_hand
            )
        target = path
    else:
        target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise InstallError(f"cannot read {target}: {exc.strerror or exc}") from None
    if not mode & 0o200 or not os.access(target, os.W_OK):
        raise InstallError(
            f"{target} is read-only (mode {mode & 0o777:04o}): not overwriting it. "
            f"Make it writable first (chmod u+w {shlex.quote(str(target))})." + by_hand
        )
    return target


def apply(p: Plan) -> None:
    """Write atomically, keeping the file's mode (new files: 0600, as they may later hold secrets).
    A user config that is a symlink is written at its target (``plan`` chose it): the link stays."""
    if not p.changed:
        return
    path = p.written
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    tmp = path.with_name(f".{path.name}.oh-{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(p.after)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def diff(p: Plan) -> str:
    import difflib

    before = (p.before or "").splitlines(keepends=True)
    after = p.after.splitlines(keepends=True)
    return "".join(
        difflib.unified_diff(
            before, after, fromfile=str(p.path) if p.before is not None else "/dev/null", tofile=str(p.path)
        )
    )


def one_liner(
    client: str,
    scope: str = "user",
    *,
    name: str = "oh",
    command: str | None = None,
    extra_args: list[str] | None = None,
) -> str:
    """The client's own command for the same thing (or, for Cursor, the entry to paste)."""
    command = command or oh_executable()
    args = server_args(client, extra_args)
    argv = " ".join(shlex.quote(a) for a in [command, *args])
    if client == "claude":
        return f"claude mcp add --scope {scope} {shlex.quote(name)} -- {argv}"
    if client == "codex":
        # `codex mcp add` has no env_vars: pass today's values of the variables install would forward
        env = "".join(f" --env {shlex.quote(f'{k}={os.environ[k]}')}" for k in CODEX_FORWARDED_ENV if os.environ.get(k))
        return f"codex mcp add {shlex.quote(name)}{env} -- {argv}"
    if client == "gemini":
        return f"gemini mcp add --scope {scope} {shlex.quote(name)} {argv}"
    if client == "vscode":
        spec = json.dumps({"name": name, **entry_for(client, command, args)}, separators=(",", ":"))
        return f"code --add-mcp {shlex.quote(spec)}"
    if client == "cursor":
        return json.dumps({"mcpServers": {name: entry_for(client, command, args)}}, indent=2)
    raise InstallError(f"unknown client {client!r}: one of {', '.join(CLIENTS)}.")
