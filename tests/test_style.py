"""Style checked by tools, so `pytest tests` fails when they do (scripts/test runs them too):

- ruff, the linter, with the rule set of pyproject.toml's [tool.ruff] over src/, tests/, benchmarks/, scripts/;
- mypy over the whole package, strict for the pure protocol core ([tool.mypy]);
- eslint in the extension (`npm run lint`, extension/eslint.config.mjs): `vscode` stays out of the pure modules.

Each runs with this interpreter (or the extension's own node_modules), not with whatever is on PATH.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="the test extra installs ruff: pip install -e '.[test]'")
    proc = _run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "benchmarks", "scripts"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_over_the_whole_package_strict_for_the_protocol():
    pytest.importorskip("mypy", reason="the test extra installs mypy: pip install -e '.[test]'")
    import tomllib

    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy["files"] == ["src/oh"] and "ignore_errors" not in str(mypy)  # no module left out
    strict = [o for o in mypy["overrides"] if o["module"] == "oh.protocol.*"]
    assert strict and strict[0]["disallow_untyped_defs"] and strict[0]["disallow_any_generics"]
    relaxed = [o["module"] for o in mypy["overrides"] if "protocol" in str(o["module"]) and o is not strict[0]]
    assert relaxed == [], relaxed  # all of protocol/ strict, the consent decider included (issue 38)
    proc = _run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--cache-dir",
            "/dev/null",
            "--config-file",
            str(ROOT / "pyproject.toml"),
        ]
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_eslint_keeps_vscode_out_of_the_pure_modules():
    ext = ROOT / "extension"
    if not (ext / "node_modules" / ".bin" / "eslint").exists() or shutil.which("node") is None:
        pytest.skip("the extension's npm packages are not installed (scripts/test runs `npm ci` first)")
    proc = _run(["node", str(ext / "node_modules" / ".bin" / "eslint"), "src"], cwd=ext)
    assert proc.returncode == 0, proc.stdout + proc.stderr


MAX_FUNCTION_LINES = 80


def _sources():
    import ast

    for path in sorted((ROOT / "src").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        yield rel, ast.parse(path.read_text(encoding="utf-8"), rel)


def test_no_function_over_80_lines():
    """A function's whole extent (decorators and docstring included) is at most 80 lines."""
    import ast

    long = [
        f"{rel}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for rel, tree in _sources()
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == [], "split these functions:\n" + "\n".join(long)


def test_every_exception_derives_from_the_one_root():
    """oh.errors.OhBaseError is the root of every exception class src/oh defines (issue 26)."""
    import ast
    import importlib

    from oh.errors import OhBaseError

    strays = []
    for rel, tree in _sources():
        module = rel.removeprefix("src/").removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        for node in tree.body:
            if not isinstance(node, ast.ClassDef) or not node.bases:
                continue
            try:
                cls = getattr(importlib.import_module(module), node.name)
            except ImportError:  # an optional extra (mcp, openhands) that is not installed here
                break
            if isinstance(cls, type) and issubclass(cls, BaseException) and not issubclass(cls, OhBaseError):
                strays.append(f"{rel}: {node.name}")
    assert strays == [], "derive these from oh.errors (WireError / CliError / ClientError):\n" + "\n".join(strays)
