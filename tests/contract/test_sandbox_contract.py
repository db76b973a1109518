"""One sandbox spec for both runtimes (issue 42.3, 38.4; docs/protocol.md §3.17), checked against
tests/contract/sandbox-spec.json: the backend resolves the settings once into the spec it sends in `registered`
(``wire``); the extension turns that spec into the engine host's argv (``engine_args``, checked by
extension/test/sandboxcontract.test.ts); and the engine host builds from that argv the very bubblewrap command
line the local runtime builds for the same settings, real directories and all (the caches under HOME writable:
under runtime vscode they were read-only)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from oh.backend import server
from oh.backend.options import BackendConfig
from oh.protocol import sandbox as rules
from oh.runtimes.local import LocalRuntime, enginehost, unixsocks
from oh.runtimes.local.sandbox import check

FIXTURE = Path(__file__).resolve().parent / "sandbox-spec.json"
CASES = json.loads(FIXTURE.read_text())["cases"]


def _backend_wire(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any] | None:
    monkeypatch.setenv("HOME", "/ROOT/home")
    config = BackendConfig("/ROOT/ws", sandbox=rules.spec_from(case["settings"]), sandbox_hidden=tuple(case["hidden"]))
    return server._sandbox_welcome(dataclasses.replace(config, sandbox=server._resolved_sandbox(config.sandbox)))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_backend_resolves_the_settings_into_the_spec_it_sends(case, monkeypatch):
    wire = _backend_wire(case, monkeypatch)
    assert wire == case["wire"]
    assert all(p.startswith("/") for p in wire["writable"])  # no ~/ left for an editor to drop


def _real(value: Any, root: Path) -> Any:
    return json.loads(json.dumps(value).replace("/ROOT", str(root)))


@pytest.mark.skipif(not check().ok, reason="bubblewrap cannot run here")
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_engine_host_builds_the_local_runtimes_bubblewrap_argv(case, tmp_path, monkeypatch):
    monkeypatch.setattr(unixsocks, "live", lambda: [])  # the same (no) sockets for both command lines
    for rel in ("home/.cache", "home/.npm", "abs-cache", "root2", "ws", "ohhome"):
        (tmp_path / rel).mkdir(parents=True)
    ws, home = str(tmp_path / "ws"), str(tmp_path / "home")
    env = {"HOME": home, "PATH": "/usr/bin:/bin", "OH_HOME": str(tmp_path / "ohhome")}
    wire, roots = _real(case["wire"], tmp_path), _real(case["roots"], tmp_path)
    spec, hidden = rules.from_wire(wire)  # what the backend hands its own runtime: the same resolved spec
    local = LocalRuntime(ws, roots, env=env, sandbox=spec, sandbox_hidden=hidden).sandbox_view()
    args = enginehost.parse(["--cwd", ws, *_real(case["engine_args"], tmp_path)])
    engine = enginehost._sandbox(args, ws)
    try:
        local_argv = local.wrap(["bash"], env, cwd=ws, scratch=())
        engine_argv = engine.wrap(["bash"], env, cwd=ws, scratch=())
    finally:
        local.close()
        engine.close()
    assert engine_argv == local_argv
    if spec.level == "workspace-write":
        assert _has(local_argv, "--bind", f"{home}/.cache", f"{home}/.cache"), local_argv
    if spec.on:
        assert local_argv[-1] == "bash" and ("--unshare-net" in local_argv) is not spec.network
    else:
        assert local_argv == ["bash"]


def _has(argv: list[str], *want: str) -> bool:
    return any(argv[i : i + len(want)] == list(want) for i in range(len(argv) - len(want) + 1))


def test_a_bad_spec_is_refused_by_the_engine_host_with_the_field(tmp_path, capsys):
    for bad, field in (({"level": "x"}, "sandbox must be one of"), ({"writable": ["rel"]}, "writable")):
        with pytest.raises(SystemExit):
            enginehost.parse(["--cwd", str(tmp_path), "--sandbox-spec", json.dumps(bad)])
        assert field in capsys.readouterr().err
