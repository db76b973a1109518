"""The command-line tools of VS Code and its forks: find them, and install, remove or list the oh
extension with them (``oh vscode install|uninstall|status``, ``oh doctor``, ``oh start``'s hints).

Every editor of the VS Code family ships a CLI with the same extension flags (``--install-extension
VSIX --force``, ``--uninstall-extension ID``, ``--list-extensions --show-versions``,
``--extensions-dir DIR``); only its name and its URI scheme differ (``KINDS``). The argv builders and
the output parser are pure functions (tests/launcher/test_editorcli.py checks each fork's exact argv
with a fake CLI that records it); ``run_cli`` is the one place that runs one.

Remote windows: in a VS Code terminal connected to a remote (Remote-SSH, WSL, dev containers),
``code`` is the remote CLI, and ``code --install-extension`` installs into that remote's extension
host, which is where the extension (``extensionKind: workspace``) must run, next to ``oh``.
"""

from __future__ import annotations

import os
import sys
from collections import namedtuple
from pathlib import Path

from .. import programs
from ..errors import CliError
from ..pathsearch import which

TYPE_CHECKING = False  # typing costs ~20 ms to import; these names serve annotations (and mypy) only
if TYPE_CHECKING:
    from typing import Callable

EXTENSION_ID = "oh-dev.oh-vscode"
INSTALL_TIMEOUT = 180.0  # code-server unpacks and scans the .vsix: seconds on a loaded machine
LIST_TIMEOUT = 60.0


# Value records as namedtuples and plain classes, not dataclasses: `oh doctor` imports this module, and
# `dataclasses` (with the `inspect` it loads) is a third of the interpreter's start (docs/benchmarks.md).
class Kind(namedtuple("Kind", "cli name scheme")):
    """``cli``: the executable's name on PATH; ``name``: what the user calls the editor; ``scheme``: its URI
    scheme (`--open-url <scheme>://...`), None when it has none (code-server)."""

    __slots__ = ()


KINDS: tuple[Kind, ...] = (
    Kind("code", "VS Code", "vscode"),
    Kind("code-insiders", "VS Code Insiders", "vscode-insiders"),
    Kind("cursor", "Cursor", "cursor"),
    Kind("windsurf", "Windsurf", "windsurf"),
    Kind("codium", "VSCodium", "vscodium"),
    Kind("code-server", "code-server", None),
)

# Where installers put the CLIs when they are not on PATH (checked only when the name is not on PATH;
# each is one stat). `~` is expanded at call time.
KNOWN_LOCATIONS: dict[str, tuple[str, ...]] = {
    "code": (
        "/usr/share/code/bin/code",
        "/snap/bin/code",
        "/Applications/Visual Studio Code.app/Contents/Resources/app/bin/code",
        "~/AppData/Local/Programs/Microsoft VS Code/bin/code.cmd",
    ),
    "code-insiders": (
        "/usr/share/code-insiders/bin/code-insiders",
        "/snap/bin/code-insiders",
        "/Applications/Visual Studio Code - Insiders.app/Contents/Resources/app/bin/code-insiders",
    ),
    "cursor": ("/usr/share/cursor/bin/cursor", "/Applications/Cursor.app/Contents/Resources/app/bin/cursor"),
    "windsurf": ("/usr/share/windsurf/bin/windsurf", "/Applications/Windsurf.app/Contents/Resources/app/bin/windsurf"),
    "codium": (
        "/usr/share/codium/bin/codium",
        "/snap/bin/codium",
        "/Applications/VSCodium.app/Contents/Resources/app/bin/codium",
    ),
    "code-server": ("/usr/bin/code-server", "~/.local/bin/code-server"),
}


def kind_for(path: str) -> Kind:
    """The editor a CLI belongs to, by its file name (``--editor PATH``); an unknown name is treated as
    VS Code's CLI under another name (a wrapper script), with VS Code's URI scheme."""
    base = os.path.basename(path).lower()
    for suffix in (".cmd", ".exe", ".sh"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    for k in KINDS:
        if base == k.cli:
            return k
    return Kind(base or path, os.path.basename(path) or path, "vscode")


class Editor(namedtuple("Editor", "kind path")):
    """An editor CLI found: its ``kind`` and the ``path`` of its executable."""

    __slots__ = ()

    @property
    def label(self) -> str:
        return f"{self.kind.name} ({self.path})"


def find_editors(path_env: str | None = None, locations: dict[str, tuple[str, ...]] | None = None) -> list[Editor]:
    """Every known editor CLI on ``path_env`` (default: PATH), else at its usual install location; one
    entry per real file (``code`` and a symlink to it count once), in ``KINDS`` order."""
    locations = KNOWN_LOCATIONS if locations is None else locations
    found: list[Editor] = []
    seen: set[str] = set()
    for k in KINDS:
        exe = programs.find(k.cli, path=path_env)  # never one the agent's sandbox can write
        if exe is None:
            for loc in locations.get(k.cli, ()):
                p = os.path.expanduser(loc)
                if os.path.isfile(p) and os.access(p, os.X_OK):
                    exe = p
                    break
        if exe is None:
            continue
        real = os.path.realpath(exe)
        if real in seen:
            continue
        seen.add(real)
        found.append(Editor(k, exe))
    return found


def editor_at(path: str) -> Editor:
    """``--editor PATH``: a path, or a name looked up on PATH. Raises FileNotFoundError."""
    exe = path if os.sep in path or (os.altsep and os.altsep in path) else which(path)
    if exe is None or not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        raise FileNotFoundError(path)
    return Editor(kind_for(exe), os.path.abspath(exe))


# ---------------------------------------------------------------------------- argv (pure)
def _dirs(extensions_dir: str | None, user_data_dir: str | None) -> list[str]:
    out = []
    if extensions_dir:
        out += ["--extensions-dir", extensions_dir]
    if user_data_dir:
        out += ["--user-data-dir", user_data_dir]
    return out


def install_argv(
    editor: Editor, vsix: str, extensions_dir: str | None = None, user_data_dir: str | None = None
) -> list[str]:
    # --force: replace another version (an upgrade or a downgrade to this oh's own) without a question.
    return [editor.path, *_dirs(extensions_dir, user_data_dir), "--install-extension", vsix, "--force"]


def uninstall_argv(editor: Editor, extensions_dir: str | None = None, user_data_dir: str | None = None) -> list[str]:
    return [editor.path, *_dirs(extensions_dir, user_data_dir), "--uninstall-extension", EXTENSION_ID]


def list_argv(editor: Editor, extensions_dir: str | None = None, user_data_dir: str | None = None) -> list[str]:
    return [editor.path, *_dirs(extensions_dir, user_data_dir), "--list-extensions", "--show-versions"]


def parse_list(stdout: str) -> dict[str, str]:
    """``--list-extensions --show-versions`` output (``publisher.name@1.2.3`` per line) as {id: version};
    ids lower-cased (VS Code compares them case-insensitively); other lines (warnings) are skipped."""
    out: dict[str, str] = {}
    for line in stdout.splitlines():
        ident, at, version = line.strip().rpartition("@")
        if at and ident and "." in ident and " " not in ident:
            out[ident.lower()] = version
    return out


def open_argv(editor: Editor, workspace: str, connect_path: str, in_editor_terminal: bool = False) -> list[list[str]]:
    """``oh start --open``: open/focus the folder, then hand the extension the connect URI in the
    editor's own scheme (``cursor://oh-dev.oh-vscode/connect?...``). code-server has no URI scheme (a
    browser tab is its window): it can open the folder only when asked from its own terminal
    (``in_editor_terminal``: VSCODE_IPC_HOOK_CLI is set); elsewhere ``code-server DIR`` would start a
    second server, so nothing runs and the session file does the rest."""
    if editor.kind.cli == "code-server" and not in_editor_terminal:
        return []
    cmds = [[editor.path, workspace]]
    if editor.kind.scheme:
        cmds.append([editor.path, "--open-url", f"{editor.kind.scheme}://{EXTENSION_ID}/{connect_path}"])
    return cmds


# ---------------------------------------------------------------------------- the bundled .vsix
class NoVsix(CliError):
    """This installation of oh carries no .vsix (a developer checkout that never packaged one: ``checkout``
    is then its extension/ directory, where ``build_checkout_vsix`` can package it)."""

    def __init__(self, message: str, checkout: Path | None = None) -> None:
        super().__init__(message)
        self.checkout = checkout


def _step(argv: list[str]) -> str:
    """``npm ci`` / ``npm run package``: a build step as the user would type it (npm's flags left out)."""
    return " ".join(["npm", *(a for a in argv[1:] if not a.startswith("-"))])


def build_checkout_vsix(checkout: Path, say: Callable[[str], None]) -> Path:
    """Package the extension of a developer checkout with npm (what ``setup.py`` does for a wheel):
    ``npm ci`` when its packages are missing, then ``npm run package``. npm's output goes to stderr.
    Raises NoVsix (npm missing, or it failed) with what to do."""
    npm = which("npm")
    if npm is None:
        raise NoVsix(
            f"this checkout has no built extension ({checkout / 'oh-vscode.vsix'}), and building it needs "
            "Node 20 with npm, "
            "which is not on PATH: install them (e.g. `sudo apt install nodejs npm`, or https://nodejs.org), then run "
            '`oh vscode install` again; or install oh from a wheel, which carries the extension (README, "Install")',
            checkout,
        )
    steps = (
        [] if (checkout / "node_modules").is_dir() else [[npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]]
    ) + [[npm, "run", "-s", "package"]]
    what = " && ".join(_step(argv) for argv in steps)
    say(
        f"building the extension from this checkout ({what} in {checkout}; "
        + ("about a minute, most of it downloading its npm packages once" if len(steps) > 1 else "about 10 s")
        + ")…"
    )
    import subprocess

    for argv in steps:
        done = subprocess.run(argv, cwd=checkout, stdout=sys.stderr, stderr=sys.stderr, check=False)
        if done.returncode != 0:
            raise NoVsix(
                f"`{_step(argv)}` in {checkout} failed (exit {done.returncode}, its output is "
                "above): fix that, then run `oh vscode install` again",
                checkout,
            )
    built = checkout / "oh-vscode.vsix"
    if not built.is_file():
        raise NoVsix(f"npm run package did not write {built}", checkout)
    return built


def bundled_vsix() -> Path:
    """The extension that ships with this oh: in a developer checkout (editable install) the one ``npm run
    package`` writes (``extension/oh-vscode.vsix``: always the current sources' build), else the
    package's own ``oh/vsix/oh-vscode.vsix`` (wheel, sdist). Raises NoVsix."""
    pkg = Path(__file__).resolve().parents[1]
    packaged = pkg / "vsix" / "oh-vscode.vsix"
    checkout = pkg.parents[1] / "extension"
    if (
        (checkout / "package.json").is_file()
        and (pkg.parent / "oh" / "__init__.py").is_file()
        and pkg.parent.name == "src"
    ):
        built = checkout / "oh-vscode.vsix"
        if built.is_file():
            return built
        raise NoVsix(
            f"this is a developer checkout and {built} is not built yet: (cd {checkout} && npm ci && npm run package)",
            checkout,
        )
    if packaged.is_file():
        return packaged
    raise NoVsix(
        f'this oh has no bundled extension ({packaged} is missing): reinstall oh from its wheel (README, "Install")'
    )


def vsix_version(path: Path) -> str:
    """The extension version inside a .vsix (its ``extension/package.json``). Raises ValueError.

    Read with ``zipimport`` (the import system's own zip reader, loaded in every interpreter) rather than
    ``zipfile`` + ``json``: `oh doctor` asks on every run, and those imports cost a third of the interpreter's
    start (docs/benchmarks.md, "Commands people type"). A .vsix is a plain deflated zip, which it reads."""
    from zipimport import ZipImportError, zipimporter

    from ..fastpath.fastjson import loads

    try:
        archive = zipimporter(str(path))
        archive.invalidate_caches()  # its table of contents is cached per path: a .vsix rebuilt since is read anew
        manifest = loads(archive.get_data("extension/package.json"))
    except (OSError, ZipImportError, ValueError) as exc:
        raise ValueError(f"{path} is not a readable VS Code extension package: {exc}") from None
    version = manifest.get("version") if isinstance(manifest, dict) else None
    if not isinstance(version, str):
        raise ValueError(f"{path}: its package.json has no version")
    return version


# ---------------------------------------------------------------------------- running a CLI
class CliResult:
    def __init__(self, argv: list[str], code: int | None, out: str, err: str) -> None:
        self.argv, self.out, self.err = argv, out, err
        self.code = code  # None: did not start or timed out

    def __repr__(self) -> str:
        return f"CliResult(argv={self.argv!r}, code={self.code!r}, out={self.out!r}, err={self.err!r})"

    @property
    def ok(self) -> bool:
        return self.code == 0

    def why(self) -> str:
        """The failure in one line: the CLI's last stderr (or stdout) line."""
        if self.code is None:
            return self.err or "did not run"
        lines = [line.strip() for line in (self.err or self.out).splitlines() if line.strip()]
        return f"exit {self.code}" + (f": {lines[-1][:300]}" if lines else "")


def run_cli(argv: list[str], timeout: float) -> CliResult:
    """Runs one editor CLI: no terminal (stdin closed), its own session (a Ctrl-C aimed at oh does not
    leave it half-done), bounded by ``timeout``. Never raises for the CLI's own failures."""
    import subprocess

    env = dict(os.environ)
    # An Electron CLI started from inside an editor's terminal would otherwise talk to that editor.
    env.pop("ELECTRON_RUN_AS_NODE", None)
    try:
        p = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,
            env=env,
            errors="replace",
        )
    except subprocess.TimeoutExpired:
        return CliResult(argv, None, "", f"no answer within {timeout:.0f} s")
    except OSError as exc:
        return CliResult(argv, None, "", f"cannot run it: {exc.strerror or exc}")
    return CliResult(argv, p.returncode, p.stdout, p.stderr)


class EditorState:
    def __init__(self, editor: Editor, version: str | None, error: str | None = None) -> None:
        self.editor = editor
        self.version = version  # the oh extension's version in this editor; None: not installed
        self.error = error  # the list command failed (then version is unknown)

    def __repr__(self) -> str:
        return f"EditorState({self.editor!r}, {self.version!r}, {self.error!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EditorState) and (self.editor, self.version, self.error) == (
            other.editor,
            other.version,
            other.error,
        )

    def describe(self) -> dict:
        return {
            "editor": self.editor.kind.name,
            "cli": self.editor.path,
            "extension": EXTENSION_ID,
            "installed_version": self.version,
            "error": self.error,
        }


def query(
    editor: Editor, extensions_dir: str | None = None, user_data_dir: str | None = None, timeout: float = LIST_TIMEOUT
) -> EditorState:
    r = run_cli(list_argv(editor, extensions_dir, user_data_dir), timeout)
    if not r.ok:
        return EditorState(editor, None, r.why())
    return EditorState(editor, parse_list(r.out).get(EXTENSION_ID.lower()))


def query_all(
    editors: list[Editor],
    extensions_dir: str | None = None,
    user_data_dir: str | None = None,
    timeout: float = LIST_TIMEOUT,
    *,
    remembered: bool = False,
) -> list[EditorState]:
    """Each editor's state, asked in parallel (each CLI takes about a second to start). ``remembered``: an
    editor without the extension in its own directories is asked again in those ``oh vscode install
    --extensions-dir/--user-data-dir`` installed it to (``remembered_dirs``)."""

    def one(e: Editor) -> EditorState:
        st = query(e, extensions_dir, user_data_dir, timeout)
        for ext, data in remembered_dirs(e) if remembered and st.version is None and st.error is None else []:
            other = query(e, ext, data, timeout)
            if other.version:
                return other
        return st

    if len(editors) <= 1:
        return [one(e) for e in editors]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(len(editors), 6)) as pool:
        return list(pool.map(one, editors))


# ------------------------------------------------- where `oh vscode install --extensions-dir` put it
# An editor started with --extensions-dir (a portable install, code-server's own directory) has the
# extension where its plain `--list-extensions` does not look: without this record `oh start` and
# `oh doctor` would say it is missing while that editor's window connects (issue 30 item 15).
INSTALLS_FILE = "vscode-installs.json"


def _installs_path() -> Path:
    from ..config import paths

    return paths.state_dir() / INSTALLS_FILE


def _read_installs() -> list[dict]:
    import json

    try:
        data = json.loads(_installs_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # none yet, or unreadable: the editors' own directories are still asked
    return [r for r in data if isinstance(r, dict) and isinstance(r.get("cli"), str)] if isinstance(data, list) else []


def remembered_dirs(editor: Editor) -> list[tuple[str | None, str | None]]:
    """(extensions dir, user data dir) ``oh vscode install`` used for this editor CLI, newest first."""
    real = os.path.realpath(editor.path)
    out: list[tuple[str | None, str | None]] = []
    for r in reversed(_read_installs()):
        ext, data = r.get("extensions_dir"), r.get("user_data_dir")
        if r["cli"] == real and isinstance(ext, (str, type(None))) and isinstance(data, (str, type(None))):
            out.append((ext, data))
    return out


def remember_install(editor: Editor, extensions_dir: str | None, user_data_dir: str | None, *, keep: bool) -> None:
    """Record (``keep``) or forget an install into non-default directories (0600, in oh's state dir)."""
    if extensions_dir is None and user_data_dir is None:
        return
    entry = {
        "cli": os.path.realpath(editor.path),
        "extensions_dir": os.path.abspath(os.path.expanduser(extensions_dir)) if extensions_dir else None,
        "user_data_dir": os.path.abspath(os.path.expanduser(user_data_dir)) if user_data_dir else None,
    }
    rows = [r for r in _read_installs() if {k: r.get(k) for k in entry} != entry] + ([entry] if keep else [])
    import json

    from ..config import paths

    paths.write_private_file(_installs_path(), json.dumps(rows, indent=2) + "\n")


async def query_async(
    editor: Editor, timeout: float = LIST_TIMEOUT, extensions_dir: str | None = None, user_data_dir: str | None = None
) -> EditorState:
    """``query`` for an event loop (``oh start``'s live view): a cancelled call (Ctrl-C) kills the CLI at
    once instead of leaving a thread that the interpreter's exit would wait for."""
    import asyncio

    try:
        proc = await asyncio.create_subprocess_exec(
            *list_argv(editor, extensions_dir, user_data_dir),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return EditorState(editor, None, f"cannot run it: {exc.strerror or exc}")
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        if proc.returncode is None:
            proc.kill()
            await asyncio.shield(proc.wait())
        raise
    r = CliResult(list_argv(editor), proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
    if not r.ok:
        return EditorState(editor, None, r.why())
    return EditorState(editor, parse_list(r.out).get(EXTENSION_ID.lower()))
