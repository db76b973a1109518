"""Background jobs that ask to leave the sandbox (issue 27, README "Sandbox"): `oh run -b --unsandboxed` /
`--network` through both CLI routes and `run` with `background` + `args.sandbox` through the protocol, on a
real `oh start` whose agent shell is in real bubblewrap. The job starts only once the user allowed it, in a
one-shot shell outside the sandbox (or with the network), and `oh jobs` follows it; rejected or unanswered,
nothing starts: no marker outside the workspace, nothing reaches the loopback server."""

from __future__ import annotations

import asyncio
import json

import pytest

from oh.protocol import actions
from sandboxed import Listener, needs_bwrap, reach_and_write

from .helpers import AGENT_WAIT, Oh, connect_agent

pytestmark = [needs_bwrap, pytest.mark.timeout(180)]


def _jobs(oh: Oh) -> list[dict]:
    p = oh("jobs", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _started(oh: Oh, proc, why: str, before: int) -> str:
    """Approve the pending request of ``proc`` (an `oh run -b ...`, ``before`` jobs listed); its job id."""
    [row] = oh.pending()
    assert why in row["reason"], row
    assert len(_jobs(oh)) == before  # asked first: nothing started before the answer
    assert oh("approve", row["id"]).returncode == 0
    out, err = proc.communicate(timeout=AGENT_WAIT)
    assert proc.returncode == 0, (out, err)
    jid = out.strip()
    assert jid.startswith("j"), (out, err)
    return jid


@pytest.mark.parametrize("path", ["fast path", "typer"])
def test_oh_run_background_escalation_runs_only_when_approved(oh, path):
    oh.start()  # network off; consent never: leaving the sandbox is still asked
    if path == "typer":
        oh.env["OH_NO_FASTPATH"] = "1"
    server = Listener()
    try:
        # --unsandboxed: approved, the job runs outside: it reaches the server and writes outside
        outside = oh.outside / "bg-unsandboxed"
        proc = oh.agent("run", "-b", "--unsandboxed", "a job outside", "--", reach_and_write(server.port, outside))
        jid = _started(oh, proc, "a job outside", 0)
        p = oh("jobs", "wait", jid, "--timeout", "60")
        assert p.returncode == 0 and "REACHED" in p.stdout and "WROTE" in p.stdout, (p.stdout, p.stderr)
        assert outside.exists() and server.got == [b"hi"]
        [rec] = [r for r in _jobs(oh) if r["job_id"] == jid]
        assert rec["sandbox"] == "off" and rec["state"] == "SUCCEEDED", rec
        assert "outside the sandbox" in oh("jobs").stdout
        # --network: approved, reaches the server but still cannot write outside the workspace
        net = oh.outside / "bg-network"
        proc = oh.agent("run", "-b", "--network", "a job with the network", "--", reach_and_write(server.port, net))
        jid = _started(oh, proc, "a job with the network", 1)
        p = oh("jobs", "wait", jid, "--timeout", "60")
        assert "REACHED" in p.stdout and "WROTE" not in p.stdout, (p.stdout, p.stderr)
        assert not net.exists() and server.got == [b"hi", b"hi"]
        # rejected: nothing starts, nothing reaches the server, nothing is written
        for flag in ("--unsandboxed", "--network"):
            rejected = oh.outside / f"bg-rejected{flag}"
            before = {r["job_id"] for r in _jobs(oh)}
            proc = oh.agent("run", "-b", flag, "rejected job", "--", reach_and_write(server.port, rejected))
            [row] = oh.pending()
            oh("reject", row["id"], "--reason", "not now")
            out, err = proc.communicate(timeout=AGENT_WAIT)
            assert proc.returncode != 0 and "not now" in err, (out, err)
            assert {r["job_id"] for r in _jobs(oh)} == before
            assert not rejected.exists() and server.got == [b"hi", b"hi"]
    finally:
        server.close()
    # usage errors still come before anything is asked
    p = oh("run", "-b", "--unsandboxed", " ", "--", "true")
    assert p.returncode == 2 and "needs the reason" in p.stderr, p.stderr
    assert json.loads(oh("approvals", "--json").stdout)["approvals"] == []


async def test_protocol_background_escalation_allowed_unanswered_and_shell_stays_confined(oh):
    oh.start("--approval-timeout", "2")
    client = await connect_agent(oh)
    server = Listener()
    try:
        late = oh.outside / "bg-late"
        # unanswered (the approval times out): never started
        obs = await asyncio.wait_for(
            client.send(actions.run(reach_and_write(server.port, late), background=True, unsandboxed="unanswered")),
            AGENT_WAIT,
        )
        assert obs.error_id == "REJECTED", obs
        assert not late.exists() and server.got == []
        assert (await client.send(actions.job("list"))).extras["jobs"] == []
        # allowed: a job outside the sandbox, followed with job ops
        marker = oh.outside / "bg-allowed"
        job = actions.run(reach_and_write(server.port, marker), background=True, unsandboxed="allowed")
        task = asyncio.ensure_future(client.send(job))
        [row] = await asyncio.to_thread(oh.pending)
        assert (await asyncio.to_thread(oh, "approve", row["id"])).returncode == 0
        obs = await asyncio.wait_for(task, AGENT_WAIT)
        jid = obs.extras["metadata"]["job_id"]
        assert "runs OUTSIDE the sandbox" in obs.extras["metadata"]["prefix"], obs
        done = await client.send(actions.job("wait", jid, timeout=60))
        assert done.extras["job"]["state"] == "SUCCEEDED" and done.extras["job"]["sandbox"] == "off", done
        assert marker.exists() and server.got == [b"hi"]
        # the agent's own shell is still confined after it
        again = oh.outside / "bg-after"
        obs = await client.run(reach_and_write(server.port, again), blocking=True, timeout=30)
        assert "REACHED" not in obs.content and not again.exists() and server.got == [b"hi"], obs
    finally:
        await client.close()
        server.close()
