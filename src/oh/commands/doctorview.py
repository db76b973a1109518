"""``oh doctor``'s checks and report, without typer: everything `oh` depends on, each failed check with its fix.

``oh.commands.quick`` runs ``oh doctor [--json]`` from here and ``oh.commands.doctor`` is the typer part,
so both print the same. Startup matters for a command people type (issue 30 item 16, docs/benchmarks.md):
each check imports what it needs when it runs, and the costly imports are avoided where the answer is
known without them (dependency versions read from their ``.dist-info``, keyring not loaded when
``PYTHON_KEYRING_BACKEND`` names a backend that stores nothing, process start times from ``/proc``).
"""

from __future__ import annotations

import os
import stat
import sys

from ..fastpath.exits import ERROR  # not via ._common: its imports serve the typer commands
from ._io import Streams

TYPE_CHECKING = False  # typing costs ~20 ms to import; its names serve annotations (and mypy) only
if TYPE_CHECKING:
    from typing import Any, Callable

DEPS = ("typer", "rich", "websockets", "platformdirs", "tomli-w", "keyring", "psutil")


def _cannot_create(path) -> str:
    """Why ``path`` (absent) could not be made, from its nearest existing ancestor ("" when it could be): not a
    directory, or not writable (a read-only file system, a directory of another user)."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{parent} is not writable"
    return ""


def _check(name: str, status: str, detail: str, fix: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"check": name, "status": status, "detail": detail, "fix": fix, **extra}


def _dir_check(label: str, path) -> dict[str, Any]:
    if not path.exists():
        blocked = _cannot_create(path)
        if blocked:  # issue 41: doctor passed an OH_HOME that `oh start` then failed on
            return _check(
                f"dir {label}",
                "fail",
                f"{path} does not exist and cannot be created: {blocked}",
                "Point OH_HOME at a directory you can write (e.g. `export OH_HOME=~/.oh`), or fix that path.",
                path=str(path),
            )
        return _check(f"dir {label}", "ok", f"{path} (not created yet; oh creates it 0700 when needed)", path=str(path))
    st = path.stat()
    mode = stat.S_IMODE(st.st_mode)
    problems = []
    if not path.is_dir():
        return _check(
            f"dir {label}",
            "fail",
            f"{path} is not a directory",
            f"Move it away: `mv {path} {path}.bak`",
            path=str(path),
        )
    if os.name == "posix" and st.st_uid != os.getuid():
        problems.append(f"owned by uid {st.st_uid}, not you")
    if os.name == "posix" and mode & 0o077 and label in ("sessions", "state", "config", "logs", "traces"):
        problems.append(f"mode {mode:04o} lets other users in")
    if not os.access(path, os.W_OK):
        problems.append("not writable")
    from ..config.paths import UnsafePath, check_parents

    try:
        check_parents(path)
    except UnsafePath as exc:
        problems.append(exc.problem)
    if problems:
        return _check(
            f"dir {label}",
            "fail",
            f"{path}: {', '.join(problems)}",
            f"chmod 700 {path} (and make sure you own it)",
            path=str(path),
            mode=f"{mode:04o}",
        )
    return _check(f"dir {label}", "ok", f"{path} (mode {mode:04o})", path=str(path), mode=f"{mode:04o}")


def run_checks() -> list[dict[str, Any]]:
    # bwrap takes ~10 ms to make its namespaces, longer than the rest of doctor's work after reading the
    # settings (which imports pathlib): the probe of the default bwrap starts first, and the settings then
    # keep it, replace it (another `sandbox_bwrap`) or drop it (`sandbox = off`).
    early = _early_probe()
    from ..config import paths

    s, config_check = _config_check()
    probe = _sandbox_probe(s, early)
    checks = _python_checks()
    checks.append(config_check)
    checks.append(_token_check())
    checks.append(
        _check(
            "OH_HOME",
            "ok",
            os.environ["OH_HOME"] + " (every file oh keeps lives under it)"
            if os.environ.get("OH_HOME")
            else "unset (platform directories)",
        )
    )
    for label, p in (
        ("config", paths.config_dir()),
        ("state", paths.state_dir()),
        ("sessions", paths.sessions_dir()),
        ("traces", paths.traces_dir()),
        ("logs", paths.logs_dir()),
    ):
        checks.append(_dir_check(label, p))
    try:
        checks.extend(_session_checks())
    except paths.UnsafePath as exc:
        checks.append(_check("sessions", "fail", f"refusing to use {exc.path}: {exc.problem}", exc.fix))
    checks.extend(_vscode_checks())
    checks.append(_port_check(s))
    checks.append(_git_check(s))
    checks.append(_sandbox_check(s, probe))
    if _sandbox_level(s) == "workspace-write" and s is not None:
        checks.append(_writable_check(s))
    return checks


def _writable_check(s) -> dict[str, Any]:
    """``sandbox_writable`` holds no directory the user's shell searches for programs (docs/security.md §11.2)."""
    from ..protocol.sandbox_defaults import on_path, on_path_warning

    hits = on_path(list(getattr(s, "sandbox_writable", ()) or ()), os.environ.get("PATH", ""), os.path.expanduser("~"))
    if not hits:
        return _check("sandbox_writable", "ok", "no directory on PATH is writable in the sandbox")
    return _check(
        "sandbox_writable",
        "warn",
        on_path_warning(hits),
        "`oh config set sandbox_writable` without " + ", ".join(e for e, _ in hits),
    )


def _sandbox_level(s) -> str:
    return getattr(s, "sandbox", "workspace-write") if s is not None else "workspace-write"


def _early_probe():
    from ..runtimes.bwrapcheck import start

    return start("")


def _sandbox_probe(s, early):
    """The bubblewrap probe the settings ask for, answered by `_sandbox_check` (None when the sandbox is off):
    ``early`` (the default bwrap's, already under way) when it is that one, else a new one."""
    from ..runtimes.bwrapcheck import start

    wanted = getattr(s, "sandbox_bwrap", "") or ""
    if _sandbox_level(s) != "off" and not wanted:
        return early
    early.cancel()
    return None if _sandbox_level(s) == "off" else start(wanted)


def _sandbox_check(s, probe) -> dict[str, Any]:
    """bubblewrap for the agent shell's sandbox (README "Sandbox"): a failure when the settings would refuse."""
    level = _sandbox_level(s)
    if probe is None:
        return _check("sandbox", "ok", "off (`sandbox = off`): the agent's commands run as you, unconfined")
    from ..runtimes.bwrapcheck import PROBE_TIMEOUT  # loaded already: the probe came from it

    found = probe.result(timeout=PROBE_TIMEOUT)
    if found.ok:
        return _check("sandbox", "ok", f"{level} with {found.bwrap}")
    unconfined = s is not None and getattr(s, "sandbox_fallback", "refuse") == "unconfined"
    return _check(
        "sandbox",
        "warn" if unconfined else "fail",
        found.problem
        + ("; sandbox_fallback = unconfined: commands run as you" if unconfined else "; commands will be refused"),
        found.fix + ("" if unconfined else " (or `oh config set sandbox_fallback unconfined` to run unconfined)"),
    )


def _dist_versions(names: tuple[str, ...]) -> dict[str, str]:
    """The installed version of each of ``names`` that has a ``NAME-VERSION.dist-info`` on ``sys.path``
    (first entry wins, as ``importlib.metadata``, whose import alone costs ~4x the interpreter's start).
    A name not found this way is left out: the caller asks ``importlib.metadata`` (egg-info, odd layouts)."""
    want = {_normal(n): n for n in names}
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:  # a zip, a missing directory
            continue
        for item in listing:
            if not item.endswith(".dist-info"):  # most of a site-packages listing: skipped before any parsing
                continue
            name = _normal(item[: -len(".dist-info")].partition("-")[0])
            if name not in want or want[name] in found:
                continue
            version = _metadata_version(os.path.join(entry or ".", item, "METADATA"))
            if version:
                found[want[name]] = version
    return found


def _normal(name: str) -> str:
    """PEP 503 normalisation (``tomli-w``, ``tomli_w`` and ``Tomli.W`` are one project)."""
    out = []
    for ch in name.lower():
        out.append("-" if ch in "-_." else ch)
    return "-".join(part for part in "".join(out).split("-") if part)


def _metadata_version(path: str) -> str | None:
    """The ``Version:`` header of a METADATA file (the headers end at the first empty line)."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line in ("\n", "\r\n"):
                    return None
                if line.startswith("Version:"):
                    return line[len("Version:") :].strip() or None
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _python_checks() -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = []
    py = sys.version_info
    checks.append(
        _check(
            "python",
            "ok" if py >= (3, 11) else "fail",
            f"{sys.version.split()[0]} ({sys.executable})",
            None if py >= (3, 11) else "Install Python 3.11 or newer.",
        )
    )
    fast = _dist_versions(DEPS)
    for dep in DEPS:
        if dep in fast:
            checks.append(_check(f"dependency {dep}", "ok", fast[dep]))
            continue
        from importlib import metadata

        try:
            checks.append(_check(f"dependency {dep}", "ok", metadata.version(dep)))
        except metadata.PackageNotFoundError:
            checks.append(
                _check(f"dependency {dep}", "fail", "not installed", f"pip install '{dep}' (or reinstall oh)")
            )
    return checks


def _config_check() -> tuple[Any, dict[str, Any]]:
    """(the settings or None, the check)."""
    from ..config import paths
    from ..config.settings import SettingError, Settings

    try:
        s = Settings.load()
    except SettingError as exc:
        said = "oh config edit" in str(exc)  # the error names the fix already: add only the other way
        fix = f"Or edit {paths.config_file()} in any editor." if said else "Fix it with `oh config edit`."
        return None, _check("config", "fail", str(exc), fix)
    where = f"{paths.config_file()} ({'present' if paths.config_file().exists() else 'absent: defaults'})"
    return s, _check("config", "ok", f"{where}; runtime {s.runtime}, port {s.port}")


def _token_check() -> dict[str, Any]:
    from ..config import paths, secrets

    try:
        token, where = secrets.get_token()
        status = "ok" if token else "warn"
        detail = f"{where.describe()}; " + (f"fingerprint {secrets.fingerprint(token)}" if token else "no token yet")
        fix = None if token else "`oh start` or `oh token rotate` creates one."
        if where.kind == "keyring" and not where.secure:
            status, fix = (
                "warn",
                (
                    "This keyring keeps the token unencrypted; install a secure keyring backend (Secret Service, "
                    "macOS Keychain) or accept the risk."
                ),
            )
        if where.kind == "file":
            p = paths.token_file()
            if p.exists():
                mode = stat.S_IMODE(p.stat().st_mode)
                if mode & 0o077:
                    status, fix = "fail", f"chmod 600 {p}"
                detail += f"; file mode {mode:04o}"
        return _check("token", status, detail, fix, storage=where.kind, backend=where.backend)
    except paths.UnsafePath as exc:
        return _check("token", "fail", f"refusing to use {exc.path}: {exc.problem}", exc.fix)
    except Exception as exc:  # noqa: BLE001
        return _check(
            "token",
            "fail",
            f"{type(exc).__name__}: {exc}",
            "Check your keyring (`keyring --list-backends`) or set "
            "PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring to use the 0600 file.",
        )


def _git_check(s) -> dict[str, Any]:
    """git for branch mode (docs/protocol.md §3.12): a failure only when the `branch` setting is on."""
    from ..pathsearch import which

    exe = which("git")
    if exe:
        return _check("git", "ok", f"{exe} (branch mode: `oh start --branch`)")
    on = s is not None and s.branch
    return _check(
        "git",
        "fail" if on else "ok",
        "git is not on PATH"
        + (
            "; the `branch` setting is on, so `oh start` will refuse"
            if on
            else " (only needed for branch mode, `oh start --branch`)"
        ),
        "Install git (e.g. `apt-get install git`), or `oh config set branch false`." if on else None,
    )


def _session_checks() -> list[dict[str, Any]]:
    from .. import sessions

    d = sessions.paths.sessions_dir()
    out = []
    files = sorted(d.glob("*.json")) if d.is_dir() else []
    cwd = os.path.realpath(os.getcwd())
    chosen = sessions.for_workspace(cwd)
    for p in files:
        s = sessions.read(p)
        if s is None:
            out.append(_check(f"session {p.name}", "warn", "unreadable or partial", f"Remove it: rm {p}"))
            continue
        mode = stat.S_IMODE(p.stat().st_mode)
        alive = sessions.is_alive(s)
        if not alive:
            out.append(
                _check(
                    f"session {s.instance_id}",
                    "warn",
                    f"stale (pid {s.pid} is gone or reused); `oh status` removes it",
                    "Run `oh status` (cleans stale files).",
                    alive=False,
                )
            )
            continue
        reach, ok, st = _reach(s)
        why = ""
        if chosen is not None and chosen.instance_id == s.instance_id:
            why = (
                f"; commands run in {cwd} pick this one: its workspace contains the current directory (deepest "
                "match wins)"
            )
        status = "ok" if ok and not mode & 0o077 else "fail"
        fix = (
            None
            if status == "ok"
            else (
                f"chmod 600 {p}"
                if mode & 0o077
                else f"Stop it (`oh stop {s.instance_id}`) and start again; log: `oh logs {s.instance_id}`"
            )
        )
        out.append(
            _check(
                f"session {s.instance_id}",
                status,
                f"alive, pid {s.pid}, runtime {s.runtime}, workspace {s.workspace}, {reach}, mode {mode:04o}{why}",
                fix,
                alive=True,
                picked=bool(why),
            )
        )
        if ok:
            out.extend(_editor_version_checks(s, st))
    if not files:
        out.append(_check("sessions", "ok", "no backend is running"))
    elif chosen is None:
        out.append(
            _check(
                "sessions",
                "ok",
                f"no running backend's workspace contains {cwd}: agent verbs here need --instance or --workspace",
            )
        )
    return out


def _reach(s) -> tuple[str, bool, dict[str, Any] | None]:
    """(what the backend answered, whether it is up, its /v1/status or None). A backend that answers
    /v1/status with its token is up: one round trip instead of /v1/health and then /v1/status; /v1/health
    is asked only to word another answer (a 401 mid-rotation), never after the backend did not answer."""
    from ..fastpath.fastjson import loads
    from ..launcher.control import BackendUnreachable, http_get

    try:
        code, body = http_get(s, "/v1/status", token=s.token, timeout=2)
        if code == 200:
            try:
                return f"answers on {s.url}", True, loads(body)
            except ValueError:
                return f"answers on {s.url}", True, None
        code, _ = http_get(s, "/v1/health", timeout=2)
    except BackendUnreachable as exc:
        return str(exc), False, None
    return (f"answers on {s.url}", True, None) if code == 200 else (f"HTTP {code} on /v1/health", False, None)


def _editor_version_checks(s, st: dict[str, Any] | None) -> list[dict[str, Any]]:
    """oh and the extensions of the editors connected to a backend (protocol/versions.py verdicts); ``st`` its
    /v1/status (None: it did not give one)."""
    if st is None:
        return []
    out = []
    for e in st.get("editors") or []:
        vc = e.get("version_check")
        if isinstance(vc, dict) and vc.get("message"):
            out.append(
                _check(
                    f"session {s.instance_id} editor {e.get('editor_id')}",
                    "warn",
                    str(vc["message"]),
                    str(vc.get("fix") or ""),
                )
            )
    refused = st.get("editor_refused")
    if not st.get("editors") and isinstance(refused, dict) and refused.get("message"):
        out.append(
            _check(
                f"session {s.instance_id} editor",
                "fail",
                f"an editor was refused: {refused['message']}",
                "See the fix in the message.",
            )
        )
    return out


def _vscode_checks() -> list[dict[str, Any]]:
    """Each editor CLI oh can see and its oh extension version, against the one this oh ships."""
    from ..launcher import signal as editor_signal

    bundled = editor_signal.bundled_version()
    checks = [
        _check(
            "vscode bundled extension",
            "ok" if bundled else "warn",
            f"{editor_signal.EXTENSION_ID} {bundled} ships with this oh" if bundled else "this oh carries no .vsix",
            None
            if bundled
            else (
                "Reinstall oh from its wheel (`pipx install --force oh_editor_runtime-*.whl`); in a checkout: (cd "
                "extension && npm run package)."
            ),
        )
    ]
    states = editor_signal.extension_states()
    if not states:
        checks.append(
            _check(
                "vscode editors",
                "warn",
                "no VS Code CLI found (code, code-insiders, cursor, windsurf, codium, code-server); "
                "only needed for --runtime vscode",
                "In VS Code: Command Palette → 'Shell Command: Install code command in PATH', then `oh vscode install` "
                "(or `oh vscode install --editor /path/to/cli`).",
            )
        )
        return checks
    for st in states:
        name, cli, have = st["editor"], st["cli"], st["installed_version"]
        if st["error"]:
            checks.append(
                _check(
                    f"vscode {name}",
                    "warn",
                    f"{cli}: `--list-extensions` failed ({st['error']})",
                    f"Run `{cli} --list-extensions --show-versions` yourself to see why.",
                    cli=cli,
                )
            )
        elif have is None:
            checks.append(
                _check(
                    f"vscode {name}",
                    "warn",
                    f"{cli}: the oh extension is not installed",
                    "Run `oh vscode install`.",
                    cli=cli,
                )
            )
        elif bundled and have != bundled:
            checks.append(
                _check(
                    f"vscode {name}",
                    "warn",
                    f"{cli}: oh extension {have}, this oh ships {bundled} (different releases)",
                    "Run `oh vscode install`, then reload the editor's window.",
                    cli=cli,
                    installed_version=have,
                )
            )
        else:
            checks.append(
                _check(f"vscode {name}", "ok", f"{cli}: oh extension {have}", cli=cli, installed_version=have)
            )
    if not any(st["installed_version"] for st in states) and not all(st["error"] for st in states):
        checks.append(
            _check(
                "vscode extension",
                "fail",
                f"{editor_signal.EXTENSION_ID} is not installed in any editor oh can see",
                "Run `oh vscode install` (it installs the extension that ships with this oh).",
            )
        )
    return checks


def _port_check(s) -> dict[str, Any]:
    # The C module under `socket`: `socket` itself (enum, selectors) is a tenth of the interpreter's start.
    import _socket

    host = getattr(s, "host", "127.0.0.1") if s else "127.0.0.1"
    port = getattr(s, "port", 0) if s else 0
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    try:
        sock = _socket.socket(family, _socket.SOCK_STREAM)
        try:
            sock.bind((host, port))
            got = sock.getsockname()[1]
        finally:
            sock.close()
    except OSError as exc:
        return _check(
            "port",
            "fail",
            f"cannot bind {host}:{port}: {exc.strerror or exc}",
            "Choose another port: `oh config set port 0` (a free one) or `oh start --port N`.",
        )
    return _check("port", "ok", f"{host}:{port} is free" if port else f"{host}: ephemeral ports work (e.g. {got})")


def run_doctor(io: Streams, *, json_: bool = False, checks: Callable[[], list[dict[str, Any]]] = run_checks) -> int:
    """``oh doctor``'s behaviour: 1 when a check failed. ``checks`` runs the checks (default: all of them)."""
    results = checks()
    failed = [c for c in results if c["status"] == "fail"]
    if json_:
        io.json({"ok": not failed, "checks": results})
    else:
        marks = {"ok": "✓", "warn": "!", "fail": "✗"}
        for c in results:
            io.print(f"{marks[c['status']]} {c['check']}: {c['detail']}")
            if c["fix"] and c["status"] != "ok":
                io.print(f"    fix: {c['fix']}")
        io.print(
            f"\n{len(failed)} failed, {sum(c['status'] == 'warn' for c in results)} warning(s), {len(results)} checks"
        )
    return ERROR if failed else 0
