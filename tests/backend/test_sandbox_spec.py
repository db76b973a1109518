"""The sandbox through the runtime interface (issue 38.4, 42.3): the backend resolves the settings' sandbox once
(absolute paths), asks the runtime for it (``Runtime.sandbox_view``, forwarded by every wrapper) and reads no
OH_SANDBOX* itself; under runtime vscode the same resolved spec is what `oh status` shows and what gates installs;
the runtimes' descriptions come from the sandbox level."""

from __future__ import annotations

import os
from pathlib import Path

from oh.commands._common import complete_runtimes
from oh.protocol import runtimenames
from oh.protocol.consent import Policy, parse_rules
from oh.protocol.sandbox import Spec


def _policy(workspace: Path) -> Policy:
    return Policy("never", parse_rules((), (), ()), str(workspace.resolve()), "/nonexistent-home", ())


async def test_vscode_the_resolved_spec_reaches_status_and_the_install_gate_and_no_env_is_read(
    make_backend, workspace, monkeypatch
):
    monkeypatch.setenv("OH_SANDBOX", "off")  # the backend reads no environment for its sandbox
    monkeypatch.setenv("OH_SANDBOX_NETWORK", "true")
    home = os.path.expanduser("~")
    b = await make_backend("vscode", consent=_policy(workspace), sandbox=Spec(writable=("~/.cache", "/abs", "rel")))
    assert b.runtime is not b.stack.inner  # through the wrappers (consent, ensure, history...)
    assert b.sandbox is b.stack.inner.sandbox_view()
    assert b.sandbox.spec.writable == (f"{home}/.cache", "/abs")  # absolute, once; a relative path dropped
    status = b.status()["sandbox"]
    assert status["level"] == "workspace-write" and status["network"] is False and status["confined"] is True
    assert b.stack.ensure.installs_leave_sandbox is True  # sandboxed without network: installs ask for it


async def test_local_the_runtimes_own_sandbox_is_the_one_shown(make_backend, workspace):
    b = await make_backend("local", consent=_policy(workspace), sandbox=Spec(level="read-only", network=True))
    assert b.sandbox is b.stack.inner.sandbox  # the local runtime's Sandbox object, through the wrappers
    assert b.status()["sandbox"]["level"] == "read-only"
    assert b.stack.ensure.installs_leave_sandbox is False  # the network is on: nothing to ask


def test_runtime_descriptions_come_from_the_sandbox_level(monkeypatch, tmp_path):
    assert (
        runtimenames.describe("local", "workspace-write")
        == "on this machine, the agent's shell sandboxed (workspace-write)"
    )
    assert runtimenames.describe("vscode", "off") == "in VS Code, no sandbox (sandbox = off)"
    monkeypatch.setenv("OH_HOME", str(tmp_path))
    monkeypatch.setenv("OH_SANDBOX", "read-only")
    assert dict(complete_runtimes(""))["local"] == "on this machine, the agent's shell sandboxed (read-only)"
    monkeypatch.setenv("OH_SANDBOX", "off")
    assert dict(complete_runtimes("lo")) == {"local": "on this machine, no sandbox (sandbox = off)"}


def test_the_backend_reads_no_sandbox_environment_nor_reaches_into_a_runtime():
    """docs/architecture.md's claim, kept: the sandbox reaches the backend through ``Runtime.sandbox_view`` and the
    launcher's flags only."""
    import oh.backend

    for path in Path(oh.backend.__file__).parent.glob("*.py"):
        text = path.read_text()
        assert "OH_SANDBOX" not in text and "inner.sandbox" not in text, path
