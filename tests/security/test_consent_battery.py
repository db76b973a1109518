"""The consent battery (tests/security/consent_battery.py) against real effects: each case's action goes
through a real in-process backend (local runtime: real bash, real kernel) at each of its levels, and its
marker file exists afterwards exactly when the expected verdict is ``allow``. A case expected to be
allowed at ``never`` proves the attack is real (bash does run it); the same case asked or denied at the
other levels proves the gate stops it. Asked actions are left unanswered (approval_timeout 0.05 s), so
they end REJECTED by timeout and never run."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from oh.backend.server import Backend, BackendConfig
from oh.protocol.consent import Policy, parse_rules
from oh.protocol.sandbox import Spec

from .consent_battery import CASES, Case

TOKEN = "battery-token-0123456789abcdef"
PARAMS = [pytest.param(case, level, id=f"{case.name}@{level}") for case in CASES for level in case.levels]


def _fill(value, ws: Path, state: Path):
    if isinstance(value, str):
        return value.replace("{ws}", str(ws)).replace("{state}", str(state)).replace("{pid}", str(os.getpid()))
    if isinstance(value, dict):
        return {k: _fill(v, ws, state) for k, v in value.items()}
    return value


def _outcome(obs: dict) -> str:
    extras = obs.get("extras") or {}
    if obs.get("observation") == "error" and extras.get("error_id") == "REJECTED":
        return {"timeout": "ask", "rule": "deny"}.get(
            extras.get("decided_by"), f"rejected by {extras.get('decided_by')}"
        )
    if obs.get("observation") == "error" and extras.get("error_id") == "BAD_REQUEST":
        return "refused"
    return "allow"


async def _send(ag, action_id: int, action: dict) -> dict:
    await ag.send(json.dumps({"id": action_id, **action}))
    while True:
        obs = json.loads(await asyncio.wait_for(ag.recv(), 30))
        if obs.get("cause") == action_id:
            return obs


async def _marker_appears(path: Path) -> bool:
    for _ in range(100):  # a prompt hook runs just after the command's end marker: bounded wait
        if path.exists() or path.is_symlink():
            return True
        await asyncio.sleep(0.02)
    return False


async def _changes(path: Path, before: bytes) -> bool:
    for _ in range(100):  # bounded wait, as for a marker
        if path.read_bytes() != before:
            return True
        await asyncio.sleep(0.02)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("case, level", PARAMS)
async def test_battery(case: Case, level: str, tmp_path: Path, oh_home: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    state = (tmp_path / "ohstate").resolve()
    (state / "sessions").mkdir(parents=True)
    (state / "sessions" / "s.json").write_text('{"decider_token": "x"}')
    if case.setup:
        subprocess.run(["bash", "-ec", _fill(case.setup, ws, state)], cwd=ws, check=True, timeout=30)
    policy = Policy(level, parse_rules(case.allow, case.ask, case.deny), str(ws), str(tmp_path / "home"), (str(state),))
    # The door alone (consent), without the wall (the sandbox, tests/sandbox): at level `never` each case must
    # really do what it tries, or it proves nothing.
    cfg = BackendConfig(
        workspace=str(ws),
        runtime="local",
        trace_path=oh_home / "t.jsonl",
        consent=policy,
        approval_timeout=0.05,
        sandbox=Spec(level="off"),
    )
    b = Backend(cfg, TOKEN)
    await b.start()
    try:
        async with connect(
            f"ws://127.0.0.1:{b.port}/v1/agent", additional_headers={"Authorization": f"Bearer {TOKEN}"}
        ) as ag:
            for i, command in enumerate(case.pre):
                pre = command if isinstance(command, dict) else {"action": "run", "args": {"command": command}}
                obs = await _send(ag, 100 + i, _fill(pre, ws, state))
                assert _outcome(obs) == "allow", obs
            before = (ws / case.changed).read_bytes() if case.changed else b""
            obs = await _send(ag, 1, _fill(case.action, ws, state))
            expected = case.verdict(level)
            assert _outcome(obs) == expected, (case.name, level, obs.get("content"))
            if case.marker:  # checked while the shell lives: a prompt hook runs just after the command
                marker = ws / case.marker
                if expected == "allow":
                    assert await _marker_appears(marker), f"{case.name}: allowed but no effect: the case proves nothing"
                else:
                    assert not marker.exists(), f"{case.name} at {level}: {expected} yet it ran"
            if case.changed:
                if expected == "allow":
                    assert await _changes(ws / case.changed, before), f"{case.name}: allowed but nothing changed"
                else:
                    assert (ws / case.changed).read_bytes() == before, f"{case.name} at {level}: {expected} yet it ran"
    finally:
        await asyncio.wait_for(b.stop("test end"), 15)
    if case.name.startswith("symlink read"):
        assert "s3cret" not in json.dumps(obs)
