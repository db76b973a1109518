"""Escalation under runtime vscode (issue 27, docs/protocol.md §3.18) on real parts: an in-process backend with
`--runtime vscode` and a consent gate, the real headless editor (`oh attach`'s, which lists "escalate") running
the agent's shell in real bubblewrap, a loopback TCP server and marker files as the effects. The gate's yes
reaches the editor as the backend's top-level `escalation`; nothing else does (an agent's own field is dropped,
an editor without the capability is refused before anything is sent, no gate: refused)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import uuid
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from ensure_projects import PackageIndex
from oh.protocol.consent import Policy, parse_rules
from oh.protocol.sandbox import Spec
from sandboxed import Listener, needs_bwrap, reach_and_write

from .conftest import TOKEN
from .peers import EchoEditor, agent, answer, pending, serve_headless

pytestmark = [needs_bwrap, pytest.mark.timeout(180)]

WAIT = 60


def _policy(workspace: Path, level: str = "never") -> Policy:
    return Policy(level, parse_rules((), (), ()), str(workspace.resolve()), "/nonexistent-home", ())


@pytest.fixture
def outside():
    """A path outside the workspace and outside /tmp (the sandbox's /tmp is private): the root directory, which
    this user could write unconfined."""
    path = Path("/") / f"oh-test-escalation-{uuid.uuid4().hex[:12]}"
    if not os.access("/", os.W_OK):
        pytest.skip("needs a writable / to tell a write outside the sandbox from one inside it")
    yield path
    path.unlink(missing_ok=True)


async def _run(ag, n: int, command: str, **args) -> dict:
    await ag.send(json.dumps({"id": n, "action": "run", "args": {"command": command, "timeout": 30, **args}}))
    return json.loads(await asyncio.wait_for(ag.recv(), WAIT))


async def test_network_escalation_in_the_editor_reaches_loopback_only_when_approved(make_backend, workspace, outside):
    b = await make_backend("vscode", consent=_policy(workspace), sandbox=Spec())
    _editor, task = await serve_headless(b, workspace)
    server = Listener()
    probe = reach_and_write(server.port, outside)
    why = {"sandbox": "network", "reason": "fetches from a loopback index"}
    ag = await agent(b)
    try:
        obs = await _run(ag, 1, probe)
        assert "REACHED" not in obs["content"] and server.got == [], obs  # the editor's shell: network off
        call = asyncio.ensure_future(_run(ag, 2, probe, **why))
        await answer(b, "allow")
        obs = await call
        assert "REACHED" in obs["content"] and server.got == [b"hi"], obs
        assert "WITH THE NETWORK" in obs["extras"]["metadata"]["prefix"], obs
        assert "WROTE" not in obs["content"] and not outside.exists(), obs  # still sandboxed otherwise
        call = asyncio.ensure_future(_run(ag, 3, probe, **why))
        await answer(b, "reject")
        obs = await call
        assert obs["extras"]["error_id"] == "REJECTED" and server.got == [b"hi"], obs
        obs = await _run(ag, 4, probe)  # the agent's own shell kept its network off
        assert "REACHED" not in obs["content"] and server.got == [b"hi"], obs
        # Leaving entirely: the write outside happens once approved, in a shell of its own.
        call = asyncio.ensure_future(
            _run(ag, 5, f"touch {outside} && echo WROTE", sandbox="off", reason="writes a marker outside")
        )
        await answer(b, "allow")
        obs = await call
        assert "WROTE" in obs["content"] and outside.exists(), obs
        assert "OUTSIDE the sandbox" in obs["extras"]["metadata"]["prefix"], obs
        outside.unlink()
        obs = await _run(ag, 6, f"touch {outside}")
        assert not outside.exists(), obs  # and the agent's shell is still confined
    finally:
        await ag.close()
        server.close()
        task.cancel()


async def test_only_the_gate_escalates_and_an_editor_without_the_capability_is_refused(make_backend, workspace):
    b = await make_backend("vscode", consent=_policy(workspace), sandbox=Spec())
    async with EchoEditor(b.port, b.editor_token, [str(workspace)]) as old:
        ag = await agent(b)
        try:
            # An agent's own top-level `escalation` (no args.sandbox: nothing is asked) never reaches the editor.
            forged = {"sandbox": "off", "reason": "forged"}
            await ag.send(json.dumps({"id": 1, "action": "run", "args": {"command": "x"}, "escalation": forged}))
            json.loads(await asyncio.wait_for(ag.recv(), WAIT))
            assert old.received and "escalation" not in old.received[-1], old.received
            # An approved escalation for an editor that did not list "escalate": refused, nothing sent.
            call = asyncio.ensure_future(_run(ag, 2, "true", sandbox="network", reason="needs the index"))
            await answer(b, "allow")
            obs = await call
            assert obs["extras"]["error_id"] == "TOOL_UNSUPPORTED", obs
            assert "escalate" in obs["content"] and "oh vscode install" in obs["content"], obs
            assert len(old.received) == 1, old.received
        finally:
            await ag.close()
    # Without a consent gate nobody can allow it: refused before any editor is asked.
    b2 = await make_backend("vscode", sandbox=Spec(), workspace=workspace)
    async with EchoEditor(b2.port, b2.editor_token, [str(workspace)]) as ed:
        ag = await agent(b2)
        try:
            obs = await _run(ag, 1, "true", sandbox="off", reason="why not")
            assert obs["extras"]["error_id"] == "REJECTED" and ed.received == [], obs
        finally:
            await ag.close()


@pytest.mark.parametrize(
    "spec, consent, leave",
    [(Spec(), True, True), (Spec(network=True), True, False), (Spec(level="off"), True, False), (Spec(), False, False)],
)
async def test_ensure_installs_leave_the_editor_sandbox_only_when_it_has_no_network_and_a_gate(
    make_backend, workspace, spec, consent, leave
):
    kw = {"consent": _policy(workspace)} if consent else {}
    b = await make_backend("vscode", sandbox=spec, **kw)
    assert b.stack.ensure.installs_leave_sandbox is leave


@pytest.mark.slow
async def test_ensure_under_runtime_vscode_installs_from_a_loopback_index_once_approved(
    make_backend, workspace, tmp_path
):
    index = PackageIndex(tmp_path / "index")
    index.project(workspace)
    b = await make_backend("vscode", consent=_policy(workspace), sandbox=Spec())
    b.runtime._which = lambda tool: None if tool == "uv" else shutil.which(tool)  # the venv + pip route anywhere
    _editor, task = await serve_headless(b, workspace)
    mon = await connect(f"ws://127.0.0.1:{b.port}/v1/monitor", additional_headers={"Authorization": f"Bearer {TOKEN}"})
    await asyncio.wait_for(mon.recv(), 10)  # someone watches (the live view): oh's own request is asked
    ag = await agent(b)
    try:
        await ag.send(json.dumps({"id": 1, "action": "ensure", "args": {}}))
        row = (await pending(b))[0]
        assert "NETWORK on (still sandboxed" in row["reason"] and "pip install" in row["what"], row
        assert not (workspace / ".venv").exists()  # waiting: nothing ran
        await answer(b, "allow")
        obs = json.loads(await asyncio.wait_for(ag.recv(), 300))
        assert obs["extras"]["state"] == "ready", obs["content"]
        assert list((workspace / ".venv" / "lib").glob("python3*/site-packages/ohtiny.py")), obs["content"]
        assert any(p.startswith("/files/ohtiny-") for p in index.requested), index.requested
    finally:
        await ag.close()
        await mon.close()
        task.cancel()
        index.close()
