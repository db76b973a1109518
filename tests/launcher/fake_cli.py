"""A fake editor CLI (``code``, ``cursor``, ... by file name): records every argv it gets as one JSON line
and keeps an "installed extensions" state the way VS Code's CLI reports it, so tests see the exact
arguments oh passes to each fork and what oh makes of the answers. An existing ``--extensions-dir`` has its
own installed set, as a real editor's (a path that does not exist shares the default set)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCRIPT = r"""#!{python}
import json, os, sys, zipfile
log, state = {log!r}, {state!r}
argv = sys.argv[1:]
with open(log, "a") as f:
    f.write(json.dumps({{"cli": os.path.basename(sys.argv[0]), "argv": argv}}) + "\n")
if "--extensions-dir" in argv and os.path.isdir(argv[argv.index("--extensions-dir") + 1]):
    state = os.path.join(argv[argv.index("--extensions-dir") + 1], "fake-cli-state.json")  # its own extensions
installed = json.load(open(state)) if os.path.exists(state) else {{}}
if os.environ.get("FAKE_CLI_FAIL") == os.path.basename(sys.argv[0]):
    print("Error: something went wrong in the editor", file=sys.stderr); sys.exit(3)
if "--list-extensions" in argv:
    for ident, version in installed.items():
        print(ident + ("@" + version if "--show-versions" in argv else ""))
elif "--install-extension" in argv:
    vsix = argv[argv.index("--install-extension") + 1]
    manifest = json.load(zipfile.ZipFile(vsix).open("extension/package.json"))
    installed[manifest["publisher"] + "." + manifest["name"]] = manifest["version"]
    json.dump(installed, open(state, "w"))
    print("Extension 'oh-vscode.vsix' was successfully installed.")
elif "--uninstall-extension" in argv:
    installed.pop(argv[argv.index("--uninstall-extension") + 1], None)
    json.dump(installed, open(state, "w"))
"""


class FakeClis:
    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)
        self.log = root / "argv.jsonl"
        self.root = root

    def add(self, name: str, installed: dict[str, str] | None = None) -> Path:
        state = self.root / f"{name}.state.json"
        if installed is not None:
            state.write_text(json.dumps(installed))
        p = self.bin / name
        p.write_text(SCRIPT.format(python=sys.executable, log=str(self.log), state=str(state)))
        p.chmod(0o755)
        return p

    def calls(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def installed(self, name: str) -> dict[str, str]:
        p = self.root / f"{name}.state.json"
        return json.loads(p.read_text()) if p.exists() else {}


def make_vsix(path: Path, version: str) -> Path:
    """A minimal .vsix (a zip with extension/package.json): what oh reads from the bundled one."""
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        z.writestr(
            "extension/package.json", json.dumps({"name": "oh-vscode", "publisher": "oh-dev", "version": version})
        )
    return path
