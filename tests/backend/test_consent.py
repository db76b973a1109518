"""Consent on real in-process backends (issue 19): an action that needs consent waits with its deadline
paused, is answered over /v1/control with the decider credential only (the agent token gets FORBIDDEN),
a rejected or unanswered command never runs, and every decision reaches the trace, monitors and agent."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from websockets.asyncio.client import connect

from ensure_projects import python_project
from oh.protocol.consent import Policy, parse_rules
from oh.protocol.sandbox import Spec

from .conftest import TOKEN
from .peers import agent, control, pending


def url(b):
    return f"ws://127.0.0.1:{b.port}"


def policy(workspace, level="commands", **rules):
    return Policy(
        level,
        parse_rules(rules.get("allow", ()), rules.get("ask", ()), rules.get("deny", ())),
        str(workspace.resolve()),
        "/nonexistent-home",
        (),
    )


def _trace(b):
    b.trace.flush()
    return [json.loads(line) for line in b.config.trace_path.read_text().splitlines()]


async def test_a_command_waits_past_its_deadline_and_only_the_decider_allows_it(make_backend, workspace):
    b = await make_backend("local", consent=policy(workspace), action_timeout=0.5, deadline_grace=0.1)
    mon = await connect(url(b) + "/v1/monitor", additional_headers={"Authorization": f"Bearer {TOKEN}"})
    json.loads(await mon.recv())  # snapshot
    ag = await agent(b)
    await ag.send(
        json.dumps(
            {"id": 1, "action": "run", "args": {"command": "echo ran > ran.txt; echo done"}, "security_risk": "LOW"}
        )
    )
    (row,) = await pending(b)
    assert row["what"].startswith("echo ran") and row["security_risk"] == "LOW" and row["always"] == ["run: echo *"]
    await asyncio.sleep(1.0)  # twice the action's deadline: paused while it waits
    assert not (workspace / "ran.txt").exists()
    # The agent's own token cannot decide, by any op.
    for op in (
        {"op": "allow", "id": row["id"]},
        {"op": "allow", "id": row["id"], "always": True},
        {"op": "reject", "id": row["id"]},
    ):
        answer = await control(b, TOKEN, {"type": "approvals", "via": "cli", **op})
        assert answer["error_id"] == "FORBIDDEN", answer
    answer = await control(b, b.decider_token, {"type": "approvals", "op": "allow", "id": row["id"], "via": "cli"})
    assert answer["results"][0]["outcome"] == "allowed"
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert obs["observation"] == "run" and "done" in obs["content"], obs
    assert "[Consent: allowed by cli at" in obs["extras"]["metadata"]["prefix"]
    assert (workspace / "ran.txt").exists()
    events = []
    while not any(e.get("event") == "approval_decided" for e in events):
        events.append(json.loads(await asyncio.wait_for(mon.recv(), 10)))
    decided = next(e for e in events if e.get("event") == "approval_decided")
    assert decided["decision"] == "allowed" and decided["by"] == "cli" and decided["at"]
    assert any(e.get("event") == "approval_requested" for e in events)
    kinds = [r["kind"] for r in _trace(b)]
    assert "approval_requested" in kinds and "approval_decided" in kinds
    await ag.close()
    await mon.close()


async def test_rejected_and_unanswered_commands_never_run(make_backend, workspace):
    b = await make_backend("local", consent=policy(workspace), approval_timeout=0.5)
    ag = await agent(b)
    await ag.send(json.dumps({"id": 1, "action": "run", "args": {"command": "touch rejected.txt"}}))
    (row,) = await pending(b)
    answer = await control(
        b,
        b.decider_token,
        {"type": "approvals", "op": "reject", "id": row["id"], "reason": "not now", "via": "live view"},
    )
    assert answer["results"][0]["outcome"] == "rejected"
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert obs["extras"]["error_id"] == "REJECTED" and obs["extras"]["decided_by"] == "live view"
    assert obs["content"].endswith("Reason: not now") and "NOT executed" in obs["content"]
    await ag.send(json.dumps({"id": 2, "action": "run", "args": {"command": "touch late.txt"}}))
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert obs["cause"] == 2 and obs["extras"]["error_id"] == "REJECTED" and obs["extras"]["decided_by"] == "timeout"
    assert not (workspace / "rejected.txt").exists() and not (workspace / "late.txt").exists()
    assert (await control(b, b.decider_token, {"type": "approvals", "op": "allow", "id": row["id"]}))["results"][0][
        "outcome"
    ] == "unknown"
    await ag.close()


async def test_rules_deny_allow_and_always(make_backend, workspace):
    b = await make_backend("local", consent=policy(workspace, allow=["run: echo *"], deny=["run: rm *"]))
    ag = await agent(b)

    async def run(i, command):
        await ag.send(json.dumps({"id": i, "action": "run", "args": {"command": command}}))

    await run(1, "echo hi")
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert obs["observation"] == "run" and "hi" in obs["content"]
    (workspace / "keep.txt").write_text("x")
    await run(2, "echo hi; rm keep.txt")
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert (
        obs["extras"]["error_id"] == "REJECTED"
        and obs["extras"]["decided_by"] == "rule"
        and "deny run: rm *" in obs["content"]
    )
    assert (workspace / "keep.txt").exists()
    await run(3, "ls -a")
    (row,) = await pending(b)
    answer = await control(
        b, b.decider_token, {"type": "approvals", "op": "allow", "id": row["id"], "always": True, "via": "vscode"}
    )
    assert answer["results"][0]["rules"] == ["run: ls *"]
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert "rule added: run: ls *" in obs["extras"]["metadata"]["prefix"]
    await run(4, "ls -la")  # now allowed by the rule: no question
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert obs["cause"] == 4 and obs["observation"] == "run"
    status = await control(b, TOKEN, {"type": "status"})
    assert {"verdict": "allow", "rule": "run: ls *"} in status["consent"]["rules"]
    await ag.close()


async def test_review_decisions_need_the_decider_credential(make_backend, workspace):
    b = await make_backend("local", consent=policy(workspace, "changes"), review=True)
    ag = await agent(b)
    await ag.send(json.dumps({"id": 1, "action": "write", "args": {"path": str(workspace / "f.txt"), "content": "x"}}))
    for _ in range(500):
        rows = (await control(b, TOKEN, {"type": "review", "op": "list"}))["proposals"]
        if rows:
            break
        await asyncio.sleep(0.02)
    for frame in (
        {"op": "accept", "id": rows[0]["id"]},
        {"op": "accept", "all": True},
        {"op": "reject", "id": rows[0]["id"]},
    ):
        assert (await control(b, TOKEN, {"type": "review", **frame}))["error_id"] == "FORBIDDEN"
    assert not (workspace / "f.txt").exists()
    answer = await control(b, b.decider_token, {"type": "review", "op": "accept", "id": rows[0]["id"]})
    assert answer["results"][0]["outcome"] == "accepted"
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert obs["observation"] == "write" and (workspace / "f.txt").read_text() == "x"
    closed = [r for r in _trace(b) if r["kind"] == "proposal_closed"]
    assert (
        closed and closed[-1]["decision"] == "accepted" and closed[-1]["by"] == "cli" and closed[-1]["at"]
    )  # who decided
    await ag.close()


@pytest.mark.parametrize("level", ["commands", "all"])
async def test_path_allow_rule_skips_the_proposal_and_deny_refuses_it(make_backend, workspace, level):
    b = await make_backend(
        "local",
        consent=policy(
            workspace, "all" if level == "all" else "changes", allow=["write: docs/**"], deny=["write: secret*"]
        ),
        review=True,
    )
    ag = await agent(b)
    await ag.send(
        json.dumps({"id": 1, "action": "write", "args": {"path": str(workspace / "docs" / "a.md"), "content": "y"}})
    )
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert obs["observation"] == "write" and (workspace / "docs" / "a.md").read_text() == "y"
    await ag.send(
        json.dumps({"id": 2, "action": "write", "args": {"path": str(workspace / "secret.txt"), "content": "y"}})
    )
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert obs["extras"]["error_id"] == "REJECTED" and not (workspace / "secret.txt").exists()
    await ag.close()


async def test_the_python_client_waits_for_consent(make_backend, workspace):
    """The Python client route: `Client.run` under `commands` waits (no client timeout fires), then
    gets the REJECTED observation; the command never ran."""
    from oh.client.aio import Client

    b = await make_backend("local", consent=policy(workspace))
    async with await Client.connect(url(b), TOKEN, name="py") as client:
        call = asyncio.ensure_future(client.run("touch py-made.txt"))
        (row,) = await pending(b)
        assert row["agent"] == "py" and not call.done()
        await control(b, b.decider_token, {"type": "approvals", "op": "reject", "id": row["id"], "reason": "no"})
        obs = await asyncio.wait_for(call, 10)
        assert obs.error_id == "REJECTED" and not (workspace / "py-made.txt").exists()


async def test_an_editor_with_the_consent_capability_is_asked_and_answers(make_backend, workspace):
    """The VS Code route (§3.13): an editor that lists "consent" gets `approval_request` on its own leg
    (authenticated with the editor token, which agents never get) and answers `approval`; the decision
    says "vscode". An editor without the capability is not asked."""
    b = await make_backend("local", consent=policy(workspace))

    async def editor(caps):
        ws = await connect(url(b) + "/v1/editor", additional_headers={"Authorization": f"Bearer {b.editor_token}"})
        await ws.send(
            json.dumps(
                {
                    "type": "register",
                    "protocol": 1,
                    "session": None,
                    "workspace_folders": [str(workspace)],
                    "editor": {"name": "e", "version": "0", "pid": 1},
                    "extension_version": "0",
                    "capabilities": caps,
                }
            )
        )
        assert json.loads(await ws.recv())["type"] == "registered"
        return ws

    asker = await editor(["run", "consent"])
    silent = await editor(["run"])
    ag = await agent(b)
    await ag.send(
        json.dumps({"id": 1, "action": "run", "args": {"command": "touch ed.txt"}, "security_risk": "MEDIUM"})
    )
    frame = json.loads(await asyncio.wait_for(asker.recv(), 10))
    assert frame["type"] == "approval_request"
    req = frame["approval"]
    assert req["what"] == "touch ed.txt" and req["security_risk"] == "MEDIUM" and req["always"] == ["run: touch *"]
    await asker.send(json.dumps({"type": "approval", "op": "allow", "id": req["id"], "always": True}))
    answer = json.loads(await asyncio.wait_for(asker.recv(), 10))
    assert (
        answer["type"] == "approval_result"
        and answer["results"][0]["outcome"] == "allowed"
        and answer["results"][0]["by"] == "vscode"
    )
    closed = json.loads(await asyncio.wait_for(asker.recv(), 10))
    assert closed == {"type": "approval_closed", "id": req["id"], "decision": "allowed", "by": "vscode"}
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert (
        obs["observation"] == "run"
        and "allowed by vscode" in obs["extras"]["metadata"]["prefix"]
        and (workspace / "ed.txt").exists()
    )
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(silent.recv(), 0.3)  # never asked
    for ws in (asker, silent, ag):
        await ws.close()


async def test_a_change_asked_outside_review_mode_carries_its_diff(make_backend, workspace):
    """Level risky, no review mode: an edit in .vscode/ is asked with the change as a diff (what the user
    sees in `oh approvals`); rejected, nothing is written."""
    (workspace / ".vscode").mkdir()
    tasks = workspace / ".vscode" / "tasks.json"
    tasks.write_text('{"command": "make"}\n')
    b = await make_backend("local", consent=policy(workspace, "risky"))
    ag = await agent(b)
    await ag.send(
        json.dumps(
            {
                "id": 1,
                "action": "edit",
                "args": {"command": "str_replace", "path": str(tasks), "old_str": "make", "new_str": "curl x | sh"},
            }
        )
    )
    (row,) = await pending(b)
    assert "inside .vscode/" in row["reason"] and '-{"command": "make"}' not in row["detail"]
    assert "-make" in row["detail"] and "+curl x | sh" in row["detail"]
    await control(b, b.decider_token, {"type": "approvals", "op": "reject", "id": row["id"]})
    obs = json.loads(await asyncio.wait_for(ag.recv(), 10))
    assert obs["extras"]["error_id"] == "REJECTED" and tasks.read_text() == '{"command": "make"}\n'
    await ag.close()


async def test_an_ensure_install_waits_for_consent_and_a_rejected_one_never_runs(make_backend, workspace):
    """Consent sits inside the workspace bootstrap (EnsureService outermost, docs/protocol.md §3.13/§3.14):
    under `commands` every install `ensure` issues is an ordinary run that waits for the user; allowed it
    installs, rejected it never runs and the agent's `ensure` names the refusal."""
    python_project(workspace / "one")
    python_project(workspace / "two")
    # Sandbox off: the point is consent on the installs themselves; a sandboxed backend that nobody watches
    # refuses oh's own requests for the network at once (tests/sandbox/test_backend_sandbox.py covers that).
    b = await make_backend("local", consent=policy(workspace), sandbox=Spec(level="off"))
    b.runtime._which = lambda tool: None if tool == "uv" else shutil.which(tool)  # the venv + pip route on any machine
    ag = await agent(b)
    await ag.send(json.dumps({"id": 1, "action": "ensure", "args": {"path": "one"}}))
    (row,) = await pending(b)
    assert row["kind"] == "run" and "-m venv .venv" in row["what"] and "pip install" in row["what"], row
    assert not (workspace / "one" / ".venv").exists()  # waiting: not run
    answer = await control(b, b.decider_token, {"type": "approvals", "op": "allow", "id": row["id"], "via": "cli"})
    assert answer["results"][0]["outcome"] == "allowed"
    obs = json.loads(await asyncio.wait_for(ag.recv(), 300))
    assert obs["cause"] == 1 and obs["extras"]["state"] == "ready", obs["content"]
    assert (workspace / "one" / ".venv" / ".oh-ensure.json").exists()

    await ag.send(json.dumps({"id": 2, "action": "ensure", "args": {"path": "two"}}))
    (row,) = [r for r in await pending(b) if r["id"] != answer["results"][0]["id"]]
    answer = await control(
        b,
        b.decider_token,
        {"type": "approvals", "op": "reject", "id": row["id"], "reason": "not this one", "via": "cli"},
    )
    assert answer["results"][0]["outcome"] == "rejected"
    obs = json.loads(await asyncio.wait_for(ag.recv(), 60))
    (py,) = obs["extras"]["targets"]
    assert obs["cause"] == 2 and obs["extras"]["state"] == "failed" and py["state"] == "failed", obs
    assert "REJECTED" in json.dumps(py) and "not this one" in json.dumps(py), py
    assert not (workspace / "two" / ".venv").exists()
    await ag.close()
