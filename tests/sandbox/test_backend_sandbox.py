"""The sandbox through real `oh` processes (issue 27): `oh start` backends whose agent shell is in real
bubblewrap. The backend's environment and pid, the session file and the decider credential out of reach;
`oh status` naming the level; escalation asked / allowed by rule / rejected / timed out, with marker files
outside the workspace as the effect; bubblewrap missing: the message, and nothing run unconfined unless the
settings say so."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from pathlib import Path

import pytest

from oh.client.aio import Client
from sandboxed import Listener, needs_bwrap, reach_and_write
from waiting import poll_until

from .helpers import AGENT_WAIT, connect_agent, watch

pytestmark = [needs_bwrap, pytest.mark.timeout(180)]


def _content(obs: dict) -> str:
    return json.dumps(obs)


def test_backend_state_out_of_reach_and_status_names_the_level(oh):
    info = oh.start()  # consent never: nothing is asked, the sandbox alone keeps these out of reach
    status = json.loads(oh("status", "--json").stdout)["sessions"][0]
    assert status["sandbox"]["level"] == "workspace-write" and status["sandbox"]["confined"] is True, status
    assert "sandbox    workspace-write" in oh("status").stdout
    session = json.loads((oh.home / "sessions" / f"{info['instance_id']}.json").read_text())
    tokens = [t for t in (session["token"], session.get("decider_token")) if t]
    assert len(tokens) == 2  # the sandbox puts a consent gate in front (for escalations): a decider exists
    marker = oh.env["OH_TEST_BACKEND_SECRET"]
    pid = info["pid"]
    # Every route docs/security.md lists as unguarded by consent, tried for real.
    attempts = [
        f"cat {oh.home}/sessions/*.json",
        f"python3 -c \"import glob; [print(open(p).read()) for p in glob.glob('{oh.home}/**/*', recursive=True)]\"",
        f"cat /proc/{pid}/environ; cat /proc/{pid}/cmdline; ls -l /proc/{pid}/fd",
        "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'",
        "env",
        "cat ~/.ssh/id_ed25519",
        f"test -e /proc/{pid} && echo BACKEND-VISIBLE; kill -0 {pid} 2>/dev/null && echo BACKEND-SIGNALLED",
    ]
    for command in attempts:
        obs = oh.run_json(command)
        text = _content(obs)
        for secret in [*tokens, marker, oh.secret]:
            assert secret not in text, (command, text[:500])
        assert "BACKEND-" not in obs["content"], obs
    # the first observation of this agent's shell said the level
    first = oh.run_json("echo hi")
    assert first["content"].strip() == "hi"


def _escalate(client: Client, command: str, reason: str = "needs to write outside the workspace"):
    return asyncio.ensure_future(client.run(command, blocking=True, timeout=30, unsandboxed=reason))


async def test_escalation_asked_allowed_rejected(oh):
    oh.start()  # consent level never: leaving the sandbox is still asked
    client = await connect_agent(oh)
    try:
        marker = oh.outside / "escalated"
        await client.run(f"touch {marker}", blocking=True, timeout=30)
        assert not marker.exists()
        task = _escalate(client, f"touch {marker} && echo done")
        [row] = await asyncio.to_thread(oh.pending)
        assert "OUTSIDE the sandbox" in row["reason"] and "needs to write outside" in row["reason"], row
        assert row["always"] == [f"unsandboxed: touch {marker}", "unsandboxed: echo done"], row
        assert not marker.exists()
        assert (await asyncio.to_thread(oh, "approve", row["id"])).returncode == 0
        obs = await asyncio.wait_for(task, AGENT_WAIT)
        assert marker.exists() and "done" in obs.content, obs
        assert "OUTSIDE the sandbox" in obs.extras["metadata"]["prefix"], obs

        rejected = oh.outside / "rejected"
        task = _escalate(client, f"touch {rejected}")
        [row] = await asyncio.to_thread(oh.pending)
        await asyncio.to_thread(oh, "reject", row["id"], "--reason", "no")
        obs = await asyncio.wait_for(task, AGENT_WAIT)
        assert obs.error_id == "REJECTED" and not rejected.exists(), obs
        # the agent's own shell stayed sandboxed after the escalation
        await client.run(f"touch {rejected}", blocking=True, timeout=30)
        assert not rejected.exists()
    finally:
        await client.close()


async def test_escalation_timeout_rule_and_bad_requests(oh):
    rule_marker = oh.outside / "by-rule"
    oh.start("--approval-timeout", "1", env={"OH_CONSENT_ALLOW": f"unsandboxed: touch {rule_marker}"})
    client = await connect_agent(oh)
    try:
        late = oh.outside / "late"
        obs = await asyncio.wait_for(_escalate(client, f"touch {late}"), AGENT_WAIT)
        assert obs.error_id == "REJECTED" and not late.exists(), obs
        obs = await asyncio.wait_for(_escalate(client, f"touch {rule_marker}"), AGENT_WAIT)
        assert rule_marker.exists(), obs
        # the rule names that exact command: another one is asked (and times out here)
        obs = await asyncio.wait_for(_escalate(client, f"touch {late} {rule_marker}"), AGENT_WAIT)
        assert obs.error_id == "REJECTED" and not late.exists(), obs
        # no reason: refused before anything is asked or run
        obs = await client.run(f"touch {late}", blocking=True, timeout=30, unsandboxed="")
        assert obs.error_id == "BAD_REQUEST" and "reason" in obs.content and not late.exists(), obs
    finally:
        await client.close()


def test_bwrap_missing_refuses_then_fallback_runs_unconfined(oh):
    missing = str(oh.tmp / "no-such-bwrap")
    marker = oh.outside / "unconfined"
    p = oh("start", "--detach", "--json", "--runtime", "local", "--no-open", env={"OH_SANDBOX_BWRAP": missing})
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    oh.pids.append(info["pid"])
    warning = next(w for w in info["warnings"] if w["id"] == "sandbox_unavailable")
    assert "bubblewrap is not installed" in warning["message"] and "apt install bubblewrap" in warning["message"]
    obs = oh.run_json(f"touch {marker}")
    assert obs["extras"]["error_id"] == "SANDBOX_UNAVAILABLE" and not marker.exists(), obs
    assert "sandbox_fallback unconfined" in obs["content"], obs
    status = json.loads(oh("status", "--json").stdout)["sessions"][0]
    assert status["sandbox"]["confined"] is False and "unavailable" in status["sandbox"]["summary"]
    oh.stop()

    env = {"OH_SANDBOX_BWRAP": missing, "OH_SANDBOX_FALLBACK": "unconfined"}
    info = oh.start(env=env)
    assert [w["id"] for w in info["warnings"]] == ["no_sandbox"], info
    obs = oh.run_json(f"touch {marker} && echo ran")
    assert marker.exists() and "ran" in obs["content"], obs
    assert "Sandbox: none" in obs["extras"]["metadata"]["prefix"], obs


def _python_project(ws: Path) -> Path:
    (ws / "requirements.txt").write_text("# nothing to fetch: the install creates .venv, the marker\n")
    return ws / ".venv"


async def test_ensure_install_refused_at_once_when_nobody_can_answer_asked_when_watched(oh):
    venv = _python_project(oh.workspace)
    oh.start()  # sandboxed, network off, approval_timeout the default 600 s: no answer may be waited for
    # Nobody watches: the install's request to leave is refused at once (the 60 s bound here, not 600 s).
    p = await asyncio.to_thread(oh, "ensure", "--only", "python", "--json", timeout=60)
    result = json.loads(p.stdout)
    text = json.dumps(result)
    assert "nobody can answer" in text and "sandbox_network" in text and "network: " in text, text
    assert not venv.exists(), text
    assert json.loads(oh("approvals", "--json").stdout)["approvals"] == []
    # Someone watches (a monitor, as the live view): the same install is asked, and runs once allowed.
    conn = await watch(oh)
    try:
        proc = oh.agent("ensure", "--only", "python", "--json")
        [row] = await asyncio.to_thread(oh.pending)
        assert "NETWORK on (still sandboxed" in row["reason"] and "needs the network" in row["reason"], row
        assert not venv.exists()
        assert (await asyncio.to_thread(oh, "approve", row["id"])).returncode == 0
        out, err = await asyncio.to_thread(proc.communicate, timeout=AGENT_WAIT * 2)
        assert (venv / "bin" / "python").exists(), (out, err)
    finally:
        await conn.close()


@pytest.mark.parametrize("path", ["fast path", "typer"])
def test_oh_run_unsandboxed_asked_approved_runs_outside_rejected_runs_nothing(oh, path):
    oh.start()  # consent never: leaving the sandbox is still asked
    if path == "typer":
        oh.env["OH_NO_FASTPATH"] = "1"
    marker, rejected = oh.outside / "approved", oh.outside / "rejected"
    proc = oh.agent("run", "--unsandboxed", "writes a marker outside the workspace", "--", "touch", str(marker))
    [row] = oh.pending()
    assert "writes a marker outside the workspace" in row["reason"] and not marker.exists(), row
    assert oh("approve", row["id"]).returncode == 0
    out, err = proc.communicate(timeout=AGENT_WAIT)
    assert proc.returncode == 0 and marker.exists(), (out, err)
    assert "oh approve" in err, err  # it said, while waiting, how to answer
    proc = oh.agent("run", "--unsandboxed", "a second marker", "--", "touch", str(rejected))
    [row] = oh.pending()
    oh("reject", row["id"], "--reason", "not now")
    out, err = proc.communicate(timeout=AGENT_WAIT)
    assert proc.returncode != 0 and not rejected.exists() and "not now" in out + err, (out, err)
    # usage errors, before anything is asked or sent
    for args, says in (
        (["--unsandboxed", " ", "--", "true"], "needs the reason"),
        (["--unsandboxed", "why", "--wait"], "not with --wait"),
    ):
        p = oh("run", *args)
        assert p.returncode == 2 and says in p.stderr, (args, p.stderr)
    assert json.loads(oh("approvals", "--json").stdout)["approvals"] == []


async def test_network_only_escalation_reaches_loopback_only_when_granted_and_stays_confined(oh):
    oh.start()  # network off; consent never: asking for the network is still asked
    server = Listener()
    client = await connect_agent(oh)
    wrote = oh.outside / "net-wrote"
    probe = reach_and_write(server.port, wrote)
    why = "fetches from a loopback index"
    try:
        obs = await client.run(probe, blocking=True, timeout=30)
        assert "REACHED" not in obs.content and server.got == [], obs
        task = asyncio.ensure_future(client.run(probe, blocking=True, timeout=30, network=why))
        [row] = await asyncio.to_thread(oh.pending)
        assert "NETWORK on (still sandboxed" in row["reason"] and why in row["reason"], row
        assert f"network: touch {wrote}" in row["always"], row
        assert all(r.startswith("network: ") for r in row["always"]), row
        assert (await asyncio.to_thread(oh, "approve", row["id"])).returncode == 0
        obs = await asyncio.wait_for(task, AGENT_WAIT)
        assert "REACHED" in obs.content and server.got == [b"hi"], obs
        assert "WITH THE NETWORK" in obs.extras["metadata"]["prefix"], obs
        assert not wrote.exists(), obs  # the network alone: writes outside the workspace still fail
        task = asyncio.ensure_future(client.run(probe, blocking=True, timeout=30, network=why))
        [row] = await asyncio.to_thread(oh.pending)
        await asyncio.to_thread(oh, "reject", row["id"])
        obs = await asyncio.wait_for(task, AGENT_WAIT)
        assert obs.error_id == "REJECTED" and server.got == [b"hi"], obs
        # the agent's own shell kept its network off
        obs = await client.run(probe, blocking=True, timeout=30)
        assert "REACHED" not in obs.content and server.got == [b"hi"], obs
    finally:
        await client.close()
        server.close()


@pytest.mark.parametrize("path", ["fast path", "typer"])
def test_oh_run_network_asked_reaches_loopback_when_approved_and_stays_confined(oh, path):
    oh.start()  # network off; consent never: asking for the network is still asked
    if path == "typer":
        oh.env["OH_NO_FASTPATH"] = "1"
    server = Listener()
    wrote = oh.outside / "net-wrote"
    probe = reach_and_write(server.port, wrote)
    try:
        proc = oh.agent("run", "--network", "fetches from a loopback index", "--", probe)
        [row] = oh.pending()
        assert "NETWORK on (still sandboxed" in row["reason"] and "loopback index" in row["reason"], row
        assert oh("approve", row["id"]).returncode == 0
        out, err = proc.communicate(timeout=AGENT_WAIT)
        assert "REACHED" in out and server.got == [b"hi"], (out, err)
        assert not wrote.exists(), (out, err)  # the network alone: writes outside the workspace still fail
        proc = oh.agent("run", "--network", "again", "--", probe)
        [row] = oh.pending()
        oh("reject", row["id"], "--reason", "not now")
        out, err = proc.communicate(timeout=AGENT_WAIT)
        assert proc.returncode != 0 and "REACHED" not in out and server.got == [b"hi"], (out, err)
    finally:
        server.close()
    for args, says in (
        (["--network", " ", "--", "true"], "needs the reason"),
        (["--network", "why", "--wait"], "not with --wait"),
        (["--network", "why", "--unsandboxed", "why", "--", "true"], "one of --unsandboxed and --network"),
    ):
        p = oh("run", *args)
        assert p.returncode == 2 and says in p.stderr, (args, p.stderr)
    assert json.loads(oh("approvals", "--json").stdout)["approvals"] == []


# pyenv-like (issue 30 item 4): a lock taken with noclobber, a temp file and a background child, all removed by an
# EXIT trap; then the rest of a slow rc. State in the workspace: HOME is read-only in the sandbox.
SLOW_RC = r"""set -C; echo $$ > "$RC_STATE/$$.lock"; set +C
tmp=$(mktemp "$RC_STATE/tmp.XXXXXX")
sleep {nap} &
trap 'rm -f "$RC_STATE/$$.lock" "$tmp"; echo "$$" >> "$RC_STATE/trap-ran"' EXIT
sleep 20
"""


def _rc_left(state: Path, nap: str) -> tuple[list[str], int, list[int]]:
    """(lock and temp files, traps run, children alive) of the shells that read SLOW_RC."""
    import psutil

    files = sorted(p.name for p in state.iterdir() if p.name != "trap-ran")
    ran = len((state / "trap-ran").read_text().split()) if (state / "trap-ran").exists() else 0
    alive = [p.pid for p in psutil.process_iter(["cmdline"]) if nap in " ".join(p.info["cmdline"] or ())]
    return files, ran, alive


@pytest.mark.parametrize("end", ["the agent leaves", "oh stop"])
def test_a_sandboxed_shell_still_reading_the_rc_is_hung_up_when_its_agent_leaves_or_oh_stops(oh, end):
    """A shell whose rc has not finished (within shell_startup_timeout) when its agent goes away or the backend
    stops is ended as a closed terminal does, in the sandbox too: its EXIT trap runs (lock and temp file gone),
    its child ends. It was left behind holding the lock (every new shell of the user then waits for it), and
    SIGKILLed with bubblewrap when the backend exited, the trap unrun: the lock stayed for good."""
    nap = f"1000.{secrets.randbelow(10**6)}"  # names this test's children among the machine's processes
    state = oh.workspace / "state"
    state.mkdir()
    (oh.user_home / ".bashrc").write_text(SLOW_RC.format(nap=nap))
    oh.start(env={"RC_STATE": str(state), "OH_USER_SHELL": "1", "OH_SHELL_STARTUP_TIMEOUT": "60"})
    agent = oh.agent("run", "--", "echo up")
    try:
        poll_until(lambda: len(_rc_left(state, nap)[0]) == 2, AGENT_WAIT, "the rc's lock and temp file")
        if end == "oh stop":
            assert oh("stop").returncode == 0
        else:
            agent.kill()
        agent.wait(AGENT_WAIT)
        with contextlib.suppress(AssertionError):  # bounded; what is left is shown by the assert below
            poll_until(lambda: _rc_left(state, nap) == ([], 1, []), 30, "the rc's trap", 0.1)
        assert _rc_left(state, nap) == ([], 1, [])
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait(AGENT_WAIT)
