"""Build hook: the sdist and the wheel carry the VS Code extension (``oh/vsix/oh-vscode.vsix``).

Everything else about the package is declared in pyproject.toml; this file only adds one step to
setuptools' ``build_py`` (wheels, editable installs) and ``sdist``: make sure the packaged ``.vsix``
exists and is current, so ``pip install`` of either artifact never needs Node or npm.

- Building from the repository (``python -m build``, ``pip install .``): ``extension/`` is there, so the
  ``.vsix`` is packaged with npm (``npm ci`` when ``node_modules`` is missing, then ``npm run package``)
  whenever it is missing or older than a source file of the extension, then copied into the package.
- Building from the sdist (what ``python -m build`` does for the wheel, and what pip does with an
  sdist): there is no ``extension/``; the sdist already holds the ``.vsix``, so nothing runs.
- ``OH_VSIX=/path/to/oh-vscode.vsix``: use that file instead of building one (a CI job that packaged it
  elsewhere).

The built ``.vsix`` is never committed (.gitignore): it is a build product, like the wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
EXTENSION = ROOT / "extension"
BUILT = EXTENSION / "oh-vscode.vsix"  # where `npm run package` writes it (extension/package.json)
PACKAGED = ROOT / "src" / "oh" / "vsix" / "oh-vscode.vsix"  # read by oh.launcher.editorcli.bundled_vsix
SOURCES = ("src", "package.json", "package-lock.json", "scripts", "tsconfig.json", "README.md", "LICENSE")


def _newest_source() -> float:
    newest = 0.0
    for name in SOURCES:
        p = EXTENSION / name
        paths = p.rglob("*") if p.is_dir() else [p]
        for f in paths:
            try:
                if f.is_file():
                    newest = max(newest, f.stat().st_mtime)
            except OSError:
                pass
    return newest


def _npm(*args: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(
            "oh build: packaging the VS Code extension needs npm (Node 20) when building from the repository. "
            "Install Node 20, or set OH_VSIX=/path/to/oh-vscode.vsix, or build from the sdist (it carries the .vsix)."
        )
    print(f"oh build: npm {' '.join(args)} (in extension/)", flush=True)
    subprocess.run([npm, *args], cwd=EXTENSION, check=True)


def ensure_vsix() -> None:
    """Puts a current ``.vsix`` at ``PACKAGED`` (see the module docstring for where it comes from)."""
    given = os.environ.get("OH_VSIX")
    if given:
        src = Path(given)
        if not src.is_file():
            raise SystemExit(f"oh build: OH_VSIX={given} is not a file")
    elif (EXTENSION / "package.json").is_file():
        if not BUILT.is_file() or BUILT.stat().st_mtime < _newest_source():
            if not (EXTENSION / "node_modules").is_dir():
                _npm("ci", "--no-audit", "--no-fund", "--loglevel=error")
            _npm("run", "-s", "package")
        src = BUILT
    elif PACKAGED.is_file():
        return  # building from the sdist: it carries the .vsix
    else:
        raise SystemExit("oh build: no extension/ directory and no packaged .vsix: build from the repository or from the sdist.")
    PACKAGED.parent.mkdir(parents=True, exist_ok=True)
    if not PACKAGED.is_file() or PACKAGED.read_bytes() != src.read_bytes():
        shutil.copyfile(src, PACKAGED)


class BuildPyWithVsix(build_py):
    def run(self) -> None:
        # An editable install (`pip install -e .`, a developer's checkout) skips it: there `oh vscode
        # install` falls back to extension/oh-vscode.vsix (`npm run package`), so no npm run per install.
        if not getattr(self, "editable_mode", False):
            ensure_vsix()
        super().run()


class SdistWithVsix(sdist):
    def run(self) -> None:
        ensure_vsix()
        super().run()


setup(cmdclass={"build_py": BuildPyWithVsix, "sdist": SdistWithVsix})
