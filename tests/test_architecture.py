"""The layer table of docs/architecture.md, checked: `.importlinter` expresses it, `lint-imports` runs it.

Until the moves of issue 10 land, the table is broken in known places (KNOWN below). Two tests:
- the contract as a whole is xfail (strict=False) while KNOWN is not empty: it turns green by itself
  once the moves are done, and then KNOWN should be emptied and the xfail removed;
- no NEW violation may appear meanwhile (a ratchet): any import across the table that is not in
  KNOWN fails at once. Pairs are (importer, imported) without line numbers, so edits elsewhere in
  those files do not break the test.
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
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"]

# Each: importer -> imported, the rule it breaks, and the move that fixes it (issue 10 item 1).
KNOWN = {
    ("oh.ui.live", "oh.commands._common"): "ui below commands: fmt_duration belongs in ui/",
    ("oh.runtimes.vscode", "oh.backend.registry"): "runtimes below backend: the editor registry moves into the vscode runtime",
    ("oh.runtimes.vscode", "oh.backend.transport"): "runtimes below backend: send_bounded moves to a neutral networking module",
    ("oh.client.aio", "oh.protocol.events"): "client is protocol-free: the JSON codec (decode/encode)",
    ("oh.client.sync", "oh.protocol.events"): "client is protocol-free: the JSON codec (decode/encode)",
    ("oh.config.settings", "oh.protocol.addresses"): "config is stdlib + deps: is_loopback_host",
    ("oh.backend.__main__", "oh.config.secrets"): "backend may import config.paths only",
    ("oh.editor.peer", "oh.client.aio"): "editor may import client errors only: the private _handshake_error",
    ("oh.editor.peer", "oh.launcher.sessions"): "editor may not import launcher: session files move to a neutral module",
}

PAIR = re.compile(r"(oh(?:\.\w+)*) -> (\w+(?:\.\w+)*)")


def lint() -> subprocess.CompletedProcess:
    return subprocess.run(
        [*LINT, "--config", str(ROOT / ".importlinter"), "--no-cache"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
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


@pytest.mark.xfail(bool(KNOWN), reason="known layer violations until issue 10's moves land: " + "; ".join(
    f"{a} -> {b}" for a, b in KNOWN), strict=False)
def test_import_contracts_hold():
    r = lint()
    assert r.returncode == 0, r.stdout


def test_the_report_parser_sees_violations():
    """The ratchet can fail: the parser finds the pairs in lint-imports' report format."""
    sample = "Broken contracts\n----\n\noh.ui is not allowed to import oh.commands:\n\n- oh.ui.live -> oh.commands._common (l.171)\n"
    assert broken_pairs(sample) == {("oh.ui.live", "oh.commands._common")}
