"""Editor knowledge (issue 12 #3, docs/protocol.md §3.6) in a real VS Code: code-server 1.99 with its
bundled TypeScript language features, real ``oh`` processes.

A small TypeScript project with a type error: ``oh diagnostics`` reports it (TS2322), an edit that
fixes it (sent with ``args.diagnostics: true``) clears it; ``oh symbols``/``definition``/
``references`` find a function; ``oh open`` shows a file at a line, which ``oh editors`` then sees.
The TypeScript server starts lazily in code-server, so the first answers are polled (bounded).
"""

from __future__ import annotations

import json
import os
import time

import pytest

from .conftest import VsCode, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

KNOWLEDGE = {"diagnostics", "open", "editors", "symbols", "definition", "references"}

GREET = """export function greet(name: string): string {
  return `hello ${name}`;
}

export function farewell(name: string): string {
  return `bye ${name}`;
}
"""

MAIN = """import { greet } from './greet';

const shout: string = greet('world').toUpperCase();
const count: number = greet('again');
console.log(shout, count);
"""


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
    src = vscode.workspace / "src"
    src.mkdir(exist_ok=True)
    (vscode.workspace / "tsconfig.json").write_text(
        json.dumps({"compilerOptions": {"strict": True, "target": "es2020", "module": "commonjs"}, "include": ["src"]})
    )
    (src / "greet.ts").write_text(GREET)
    (src / "main.ts").write_text(MAIN)
    proc = vscode.oh(
        "start",
        "--runtime",
        "vscode",
        "--workspace",
        str(vscode.workspace),
        "--detach",
        "--no-open",
        "--json",
        timeout=60,
    )
    assert proc.returncode == 0, f"oh start failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    info = json.loads(proc.stdout)

    def editor_registered():
        for s in vscode.sessions():
            if s.get("instance_id") == info["instance_id"] and s.get("editors"):
                return s
        return None

    info["session"] = wait_until(editor_registered, 60, "the extension to register with the backend")
    return info


def _json(vscode: VsCode, *args: str, timeout: float = 90) -> tuple[int, dict]:
    proc = vscode.oh(*args, "--json", timeout=timeout)
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(
            f"oh {' '.join(args)}: no JSON (rc {proc.returncode})\n{proc.stdout}\n{proc.stderr}"
        ) from None


def test_capabilities_advertised(backend: dict):
    caps = set(backend["session"]["editors"][0]["capabilities"])
    assert KNOWLEDGE <= caps, caps


def test_type_error_reported_then_cleared_by_the_fixing_edit(vscode: VsCode, backend: dict):
    main = os.path.realpath(vscode.workspace / "src" / "main.ts")
    started = time.monotonic()

    def type_error():
        # The TS server starts on the first TypeScript document: poll, each call bounded by --wait.
        rc, obs = _json(vscode, "diagnostics", "src/main.ts", "--wait", "15")
        assert obs["observation"] == "diagnostics", obs
        hits = [d for d in obs["extras"]["diagnostics"] if d["code"] == 2322]
        return (rc, obs, hits[0]) if hits else None

    rc, obs, diag = wait_until(type_error, 180, "TypeScript to report TS2322 in src/main.ts", interval=1)
    print(f"first TS2322 after {time.monotonic() - started:.1f} s (TS server cold start in code-server)")
    assert rc == 1, "oh diagnostics exits 1 when there are errors"
    assert diag["path"] == main
    assert (diag["line"], diag["column"], diag["severity"], diag["source"]) == (4, 7, "error", "ts"), diag
    assert "not assignable to type 'number'" in diag["message"]
    assert f"{main}:4:7: error: Type 'string' is not assignable" in obs["content"]
    assert obs["extras"]["settled"] is True

    # The workspace-wide answer includes it too.
    rc, ws = _json(vscode, "diagnostics", "--wait", "5")
    assert any(d["path"] == main and d["code"] == 2322 for d in ws["extras"]["diagnostics"]), ws["content"]

    # The fixing edit, asking for the file's diagnostics in the same observation.
    from oh.client import SyncClient

    session = json.loads((vscode.oh_home / "sessions" / f"{backend['instance_id']}.json").read_text())
    with SyncClient.connect(session["url"], session["token"], name="e2e-knowledge") as client:
        t0 = time.monotonic()
        obs = client.send(
            {
                "action": "edit",
                "args": {
                    "path": main,
                    "command": "str_replace",
                    "old_str": "const count: number",
                    "new_str": "const count: string",
                    "diagnostics": True,
                },
            },
            timeout=120,
        )
        print(f"edit + settled diagnostics: {time.monotonic() - t0:.2f} s")
    assert obs.kind == "edit", obs
    assert [d for d in obs.extras["diagnostics"] if d["severity"] == "error"] == [], obs.content
    assert "Diagnostics after this change:" in obs.content
    assert "const count: string" in (vscode.workspace / "src" / "main.ts").read_text()

    rc, obs = _json(vscode, "diagnostics", "src/main.ts")
    assert rc == 0, obs["content"]
    assert obs["extras"]["diagnostics"] == [], obs["content"]
    assert obs["content"].startswith("No problems")


def test_symbols_definition_references(vscode: VsCode, backend: dict):
    greet = os.path.realpath(vscode.workspace / "src" / "greet.ts")
    main = os.path.realpath(vscode.workspace / "src" / "main.ts")

    def found():
        _, obs = _json(vscode, "symbols", "greet")
        # TypeScript names functions "greet()" in workspace symbols (code-server 1.99)
        hits = [s for s in obs["extras"]["symbols"] if s["name"] in ("greet", "greet()") and s["path"] == greet]
        return hits[0] if hits else None

    sym = wait_until(found, 120, "workspace symbols to find greet", interval=1)
    assert (sym["kind"], sym["line"]) == ("function", 1), sym

    # `greet` used on line 3 of main.ts, column 23 ("const shout: string = greet(...)")
    assert MAIN.splitlines()[2][22:27] == "greet"
    rc, obs = _json(vscode, "definition", "src/main.ts:3:23")
    assert rc == 0, obs
    locs = obs["extras"]["locations"]
    assert any(loc["path"] == greet and loc["line"] == 1 for loc in locs), obs["content"]
    assert any("export function greet" in (loc.get("text") or "") for loc in locs), locs

    rc, obs = _json(vscode, "references", "src/greet.ts:1:17")
    assert rc == 0, obs
    where = {(loc["path"], loc["line"]) for loc in obs["extras"]["locations"]}
    assert {(greet, 1), (main, 1), (main, 3), (main, 4)} <= where, obs["content"]
    rc, obs = _json(vscode, "references", "src/greet.ts:1:17", "--no-declaration")
    assert (greet, 1) not in {(loc["path"], loc["line"]) for loc in obs["extras"]["locations"]}, obs["content"]

    # Plain-text output, as a person reads it
    proc = vscode.oh("definition", "src/main.ts:3:23")
    assert f"{greet}:1:17: export function greet(name: string): string {{" in proc.stdout, proc


def test_open_shows_the_file_at_the_line(vscode: VsCode, backend: dict):
    greet = os.path.realpath(vscode.workspace / "src" / "greet.ts")
    proc = vscode.oh("open", "src/greet.ts:5:17")
    assert proc.returncode == 0, proc
    assert proc.stdout.strip() == f"Showing {greet} at line 5 to the user in VS Code."

    def active():
        _, obs = _json(vscode, "editors")
        return obs if obs["extras"]["active"] == greet else None

    obs = wait_until(active, 30, "the opened file to be the active editor", interval=0.5)
    ed = next(e for e in obs["extras"]["editors"] if e["path"] == greet)
    assert ed["selection"]["line"] == 5 and ed["selection"]["column"] == 17, ed
    assert ed["visible"] is True and ed["dirty"] is False

    # a range: the selected text comes back through `editors`
    assert vscode.oh("open", "src/greet.ts:5:17", "--to", "5:25").returncode == 0
    obs = wait_until(
        lambda: (o := _json(vscode, "editors")[1])["extras"]["editors"][0]["selection"]["text"] == "farewell" and o,
        30,
        "the selection 'farewell'",
        interval=0.5,
    )
    assert "Selected text in" in obs["content"]


def test_outside_the_workspace_is_refused(vscode: VsCode, backend: dict):
    rc, obs = _json(vscode, "definition", "/etc/hostname:1:1")
    assert rc == 6 and obs["extras"]["error_id"] == "PATH_DENIED", obs
