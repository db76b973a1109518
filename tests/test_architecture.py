"""The layer table of docs/architecture.md, checked: `.importlinter` expresses it, `lint-imports` runs it,
and the table in the doc lists the same packages in the same layers as the contract.

The moves of issue 10 are done: no import crosses the table (KNOWN is empty and stays so; an entry
there would name an importer -> imported pair without line numbers, with the move that removes it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parent.parent
# The console script's own code, run with this interpreter: no dependence on where pip put `lint-imports`.
LINT = [
    sys.executable,
    "-c",
    "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())",
]

# Each: importer -> imported, the rule it breaks, and the move that fixes it. Empty: keep it so.
KNOWN: dict[tuple[str, str], str] = {}

PAIR = re.compile(r"(oh(?:\.\w+)*) -> (\w+(?:\.\w+)*)")


def lint() -> subprocess.CompletedProcess:
    return subprocess.run(
        [*LINT, "--config", str(ROOT / ".importlinter"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def broken_pairs(report: str) -> set[tuple[str, str]]:
    _, _, broken = report.partition("Broken contracts")
    return set(PAIR.findall(broken))


def test_no_new_layer_violations():
    r = lint()
    assert "Contracts:" in r.stdout, r.stdout + r.stderr  # the tool ran and read the contracts
    new = broken_pairs(r.stdout) - KNOWN.keys()
    assert not new, f"imports across the layer table of docs/architecture.md: {sorted(new)}\n{r.stdout}"
    # A new package under src/oh/ needs its row in the table and its layer in .importlinter.
    assert "not listed as layers" not in r.stdout, r.stdout


def test_import_contracts_hold():
    r = lint()
    assert r.returncode == 0, r.stdout


def test_the_report_parser_sees_violations():
    """The ratchet can fail: the parser finds the pairs in lint-imports' report format."""
    sample = (
        "Broken contracts\n----\n\noh.ui is not allowed to import oh.commands:\n\n- oh.ui.live -> "
        "oh.commands._common (l.171)\n"
    )
    assert broken_pairs(sample) == {("oh.ui.live", "oh.commands._common")}


def _contract_layers() -> list[list[str]]:
    """The layers of the layers contract, top to bottom, each a list of package names."""
    text = (ROOT / ".importlinter").read_text()
    block = text.split("layers =\n", 1)[1]
    rows = []
    for line in block.splitlines():
        if not line.startswith("    "):
            break
        rows.append([n.strip(" ()") for n in re.split(r"[|:]", line) if n.strip()])
    return rows


def _table_layers() -> list[list[str]]:
    """The layer table of docs/architecture.md: rows `| layer | `pkg/`, `mod.py` | role | may import |`."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("## Layers (src/oh/)", 1)[1].split("\n## ", 1)[0]
    by_layer: dict[int, list[str]] = {}
    for line in section.splitlines():
        m = re.match(r"\| (\d+) \| ([^|]+) \|", line)
        if m:
            names = [n.rstrip("/").removesuffix(".py") for n in re.findall(r"`([^`]+)`", m.group(2))]
            by_layer.setdefault(int(m.group(1)), []).extend(names)
    return [by_layer[k] for k in sorted(by_layer)]


def test_the_doc_table_matches_the_contract():
    contract = _contract_layers()
    assert len(contract) >= 8 and any({"protocol", "text"} <= set(layer) for layer in contract)  # the parser read it
    assert [sorted(layer) for layer in _table_layers()] == [sorted(layer) for layer in contract], (
        "docs/architecture.md's layer table and .importlinter's layers differ: change them together"
    )


def test_every_package_under_src_oh_has_a_layer():
    """Also a package that is not imported by anything yet (import-linter only sees the graph)."""
    named = {n for layer in _contract_layers() for n in layer}
    here = {
        p.name if p.is_dir() else p.stem
        for p in (ROOT / "src" / "oh").iterdir()
        if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__init__.py")
    }
    assert here <= named, f"packages without a layer in .importlinter and docs/architecture.md: {sorted(here - named)}"
