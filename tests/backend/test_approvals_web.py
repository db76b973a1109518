"""The approvals page (issue 40) on real in-process backends, over real HTTP and WebSocket connections: a paired
device sees a pending command and decides it (the command's effect), and every attack -- a cross-origin
socket, a DNS-rebinding Host, framing, a replayed or guessed pairing code, the agent's or a share's credential,
a revoked device -- is decided by a marker file that must not appear."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys

import pytest
from websockets.exceptions import InvalidStatus

from oh.protocol import approvalweb as web
from oh.protocol.consent import Policy, parse_rules

from .peers import agent, control, pending
from .webpeers import TOKEN, http_get, live, next_state, pair_code, paired_cookie, result


def policy(workspace, level="commands"):
    return Policy(level, parse_rules((), (), ()), str(workspace.resolve()), "/nonexistent-home", ())


async def _ask(b, command: str, action_id: int = 1):
    ag = await agent(b)
    await ag.send(json.dumps({"id": action_id, "action": "run", "args": {"command": command}}))
    (row,) = await pending(b)
    return ag, row


async def test_a_paired_page_sees_the_whole_command_and_approving_runs_it(make_backend, workspace):
    b = await make_backend("local", consent=policy(workspace))
    cookie = await paired_cookie(b)
    ws = await live(b, cookie)
    await next_state(ws)
    long_tail = "x" * 3000
    ag, row = await _ask(b, f"echo {long_tail} > /dev/null; touch approved.txt")
    state = await next_state(ws, lambda s: s["pending"])
    (q,) = state["pending"]
    assert q["id"] == row["id"] and q["command"].endswith("touch approved.txt") and long_tail in q["command"]
    assert q["cwd"] == str(workspace.resolve()) and q["agent"] and q["reason"]
    assert set(state["protections"]) >= {"consent", "sandbox", "history", "review"}
    assert not (workspace / "approved.txt").exists()
    await ws.send(json.dumps({"op": "allow", "id": q["id"]}))
    assert (await result(ws))["ok"]
    obs = json.loads(await asyncio.wait_for(ag.recv(), 15))
    assert obs["observation"] == "run" and "allowed by web" in obs["extras"]["metadata"]["prefix"]
    assert (workspace / "approved.txt").exists()
    # idempotent: a second answer to the same question changes nothing and says so
    await ws.send(json.dumps({"op": "reject", "id": q["id"], "reason": "late"}))
    assert not (await result(ws))["ok"]
    await ws.close()
    ws = await live(b, cookie)  # a reconnect loses nothing: the first state has the decision
    state = await next_state(ws)
    assert not state["pending"] and state["recent"][0]["decision"] == "allowed" and state["recent"][0]["by"] == "web"
    await ag.close()
    await ws.close()


async def test_reject_with_a_reason_reaches_the_agent_and_always_saves_exactly_the_rule_shown(make_backend, workspace):
    b = await make_backend("local", consent=policy(workspace))
    ws = await live(b, await paired_cookie(b))
    ag, row = await _ask(b, "touch rejected.txt")
    q = (await next_state(ws, lambda s: s["pending"]))["pending"][0]
    await ws.send(json.dumps({"op": "reject", "id": q["id"], "reason": "not on a Friday"}))
    obs = json.loads(await asyncio.wait_for(ag.recv(), 15))
    assert obs["extras"]["error_id"] == "REJECTED" and "not on a Friday" in obs["content"]
    assert not (workspace / "rejected.txt").exists()
    await ag.send(json.dumps({"id": 2, "action": "run", "args": {"command": "echo hi > always.txt"}}))
    q = (await next_state(ws, lambda s: s["pending"]))["pending"][0]
    shown = q["always"]
    assert shown == ["run: echo *"]
    await ws.send(json.dumps({"op": "allow", "id": q["id"], "always": True}))
    await asyncio.wait_for(ag.recv(), 15)
    assert (workspace / "always.txt").exists()
    saved = [r.text for r in b.consent.policy.rules if r.verdict == "allow"]
    assert saved == shown
    await ag.close()
    await ws.close()


async def test_the_page_and_its_headers(make_backend, workspace):
    b = await make_backend("local", consent=policy(workspace))
    status, headers, body = await http_get(b.web.port, "/")
    assert status == 200 and body.startswith(b"<!doctype html>")
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "'unsafe-inline'" not in csp
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
    assert b"http://" not in body and b"https://" not in body  # no external asset
    assert headers["cache-control"] == "no-store"


async def test_attacks_on_the_page_are_refused_and_nothing_runs(make_backend, workspace, tmp_path):
    b = await make_backend("local", consent=policy(workspace))
    port = b.web.port
    cookie = await paired_cookie(b)
    ag, row = await _ask(b, f"touch {tmp_path}/marker")
    decide = json.dumps({"op": "allow", "id": row["id"]})
    # a cross-origin page, with the device's cookie (as if SameSite were not there)
    with pytest.raises(InvalidStatus) as refused:
        await live(b, cookie, origin_="http://evil.example")
    assert refused.value.response.status_code == 403
    # DNS rebinding: evil.example resolving to 127.0.0.1 reaches the port with its own Host
    for path in ("/", "/api/me", "/live", "/api/pair"):
        status, _, _ = await http_get(port, path, {"Cookie": cookie}, host=f"evil.example:{port}")
        assert status == 403, path
    # a cross-site fetch of the pairing endpoint
    code = await pair_code(b)
    status, _, _ = await http_get(port, "/api/pair", {"X-OH-Pair-Code": code, "Origin": "http://evil.example"})
    assert status == 403
    # the agent's token and a share's credential are no device credential
    share = await control(b, b.decider_token, {"type": "share", "op": "create", "name": "s"})
    for forged in (TOKEN, share["token"], f"d1.{TOKEN}"):
        status, _, body = await http_get(
            port, "/api/me", {"Cookie": f"{web.COOKIE}={forged}", "Authorization": f"Bearer {TOKEN}"}
        )
        assert status == 200 and json.loads(body) == {"paired": False}
        with pytest.raises(InvalidStatus):
            await live(b, f"{web.COOKIE}={forged}")
    # a revoked device: its open socket is closed and a new one refused
    ws = await live(b, cookie)
    devices = (await control(b, b.decider_token, {"type": "approvals", "op": "devices"}))["devices"]
    revoked = await control(b, b.decider_token, {"type": "approvals", "op": "revoke", "device": devices[0]["id"]})
    assert revoked["device"] == devices[0]["id"]
    try:
        for _ in range(10):
            await ws.send(decide)
            await asyncio.wait_for(ws.recv(), 5)
    except Exception:  # noqa: BLE001 - closed by the revocation (ConnectionClosed)
        pass
    with pytest.raises(InvalidStatus):
        await live(b, cookie)
    # the agent's credential cannot mint a pairing code either
    assert (await control(b, TOKEN, {"type": "approvals", "op": "pair"}))["error_id"] == "FORBIDDEN"
    assert (await pending(b))[0]["id"] == row["id"]  # still waiting: nobody decided
    assert not (tmp_path / "marker").exists()
    await ag.close()


async def test_pairing_codes_are_single_use_and_guessing_is_rate_limited(make_backend, workspace):
    b = await make_backend("local", consent=policy(workspace))
    port = b.web.port
    code = await pair_code(b)
    status, _, _ = await http_get(port, "/api/pair", {"X-OH-Pair-Code": code})
    assert status == 200
    status, _, _ = await http_get(port, "/api/pair", {"X-OH-Pair-Code": code})  # replayed
    assert status == 403
    fresh = await pair_code(b)
    statuses = []
    for i in range(web.MAX_FAILS + 2):
        statuses.append((await http_get(port, "/api/pair", {"X-OH-Pair-Code": f"GUESS{i:05d}"}))[0])
    assert statuses[: web.MAX_FAILS - 1].count(403) == web.MAX_FAILS - 1 and statuses[-1] == 429
    # while locked, even the right code is refused (a guesser cannot tell it from a wrong one)
    assert (await http_get(port, "/api/pair", {"X-OH-Pair-Code": fresh}))[0] == 429
    assert len(b.web.pairing.devices) == 1


async def test_agent_written_html_ansi_and_bidi_reach_the_page_inert(make_backend, workspace):
    b = await make_backend("local", consent=policy(workspace))
    ws = await live(b, await paired_cookie(b))
    evil = "echo '<img src=x onerror=alert(1)>' \x1b[2J\x1b]8;;http://e\x07 \u202eexe.txt\u2066"
    ag, _ = await _ask(b, evil)
    q = (await next_state(ws, lambda s: s["pending"]))["pending"][0]
    cmd = q["command"]
    assert "<img src=x onerror=alert(1)>" in cmd  # as text: the page sets textContent, never markup
    assert "\x1b" not in cmd and "\u202e" not in cmd and "\u2066" not in cmd and "\x07" not in cmd
    assert "<U+001B>[2J" in cmd and "<U+202E>exe.txt<U+2066>" in cmd
    await ag.close()


RECORDER = """import json, os, sys
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(dict(os.environ)) + "\\n")
"""


async def test_the_notifier_gets_each_question_once_and_no_secret(make_backend, workspace, tmp_path, monkeypatch):
    script = tmp_path / "record.py"
    script.write_text(RECORDER)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("OH_TOKEN", TOKEN)  # even if the backend's environment held one
    b = await make_backend("local", consent=policy(workspace), approval_notify=(sys.executable, str(script), str(log)))
    assert b.consent.can_answer()  # a notifier set: a headless question waits instead of being refused
    ag, row = await _ask(b, "echo one")
    await ag.send(json.dumps({"id": 2, "action": "run", "args": {"command": "echo two"}}))
    rows = await pending(b, 2)
    for _ in range(500):
        if log.exists() and len(log.read_text().splitlines()) >= 2:
            break
        await asyncio.sleep(0.02)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(c["OH_APPROVAL_ID"] for c in calls) == sorted(r["id"] for r in rows)
    secrets_ = (TOKEN, b.decider_token, b.credentials.editor)
    for env in calls:
        assert not any(s in v for v in env.values() for s in secrets_)
        assert not any(k.startswith("OH_") and not k.startswith("OH_APPROVAL_") for k in env)
        assert env["OH_APPROVAL_URL"].startswith(f"http://127.0.0.1:{b.web.port}/#c")
        assert "\n" not in env["OH_APPROVAL_SUMMARY"] and "echo" in env["OH_APPROVAL_SUMMARY"]
    await ag.close()
    assert stat.S_IMODE(os.stat(log).st_mode)  # the recorder ran as us


async def test_without_a_device_or_notifier_nobody_is_reachable_then_pairing_makes_someone(make_backend, workspace):
    b = await make_backend("local", consent=policy(workspace))
    assert not b.consent.can_answer()
    await paired_cookie(b)
    assert b.consent.can_answer()
    await control(b, b.decider_token, {"type": "rotate_token", "token": "new-" + TOKEN})
    assert not b.web.pairing.devices and not b.consent.can_answer()  # a rotation ends every device


async def test_a_question_whose_agent_left_is_withdrawn_from_the_page(make_backend, workspace):
    b = await make_backend("local", consent=policy(workspace))
    ws = await live(b, await paired_cookie(b))
    ag, row = await _ask(b, "touch withdrawn.txt")
    await next_state(ws, lambda s: s["pending"])
    await ag.close()
    state = await next_state(ws, lambda s: not s["pending"])
    assert state["recent"][0]["id"] == row["id"] and state["recent"][0]["decision"] == "rejected"
    await ws.send(json.dumps({"op": "allow", "id": row["id"]}))  # a late answer changes nothing
    assert not (await result(ws))["ok"]
    assert not (workspace / "withdrawn.txt").exists()
    await ws.close()
