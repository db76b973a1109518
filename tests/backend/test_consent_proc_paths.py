"""A command naming /proc paths gets a consent decision, never SERVER_ERROR (issue 36): the gate resolves every path
a command names, and a link it may not read (``/proc/1/root``, another process's ``cwd`` or ``fd``: EACCES) used to
escape its resolver as an exception. Where the link cannot be read the command is asked (fail closed at the path
level), never allowed on a guess and never a crash."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from oh.protocol.consent import Policy, parse_rules

from .conftest import TOKEN
from .peers import agent, control

PROC_COMMANDS = [
    "cat /proc/1/root/etc/passwd",
    "ls /proc/1/root/",
    "ls /proc/1/root",
    "cat /proc/1/cwd/x",
    "ls /proc/1/cwd",
    "cat /proc/1/fd/0",
    "ls /proc/*/fd/*",
    "cat /proc/1/root/../etc/hostname",
    "cat /proc/self/root/etc/hostname",
    "ls /proc/self/cwd/",
    "cat /proc/self/fd/0",
    "echo x > /proc/1/root/tmp/o.txt",
    "cat < /proc/1/root/etc/passwd",
]


def _unreadable(command: str) -> bool:
    """Whether a path of ``command`` is a link this process may not follow (where the crash was)."""
    for word in command.replace("<", " ").replace(">", " ").split()[1:]:
        if word.startswith("/proc/") and "*" not in word:
            try:
                os.path.realpath(word)
            except OSError:
                return True
    return False


async def _asked_or_answered(b, ag) -> tuple[bool, dict]:
    """(asked?, observation): a pending question is rejected as the decider; the observation that follows."""
    recv = asyncio.ensure_future(ag.recv())
    for _ in range(1000):
        if recv.done():
            return False, json.loads(recv.result())
        rows = (await control(b, TOKEN, {"type": "approvals", "op": "list"}))["approvals"]
        if rows:
            said = await control(b, b.decider_token, {"type": "approvals", "op": "reject", "id": rows[0]["id"]})
            assert said["results"][0]["outcome"] == "rejected", said
            return True, json.loads(await asyncio.wait_for(recv, 30))
        await asyncio.wait({recv}, timeout=0.02)
    recv.cancel()
    raise AssertionError("neither an observation nor a question")


@pytest.mark.parametrize("level", ["risky", "changes"])
async def test_proc_paths_are_decided_never_a_server_error(make_backend, workspace, level):
    rules = parse_rules(allow=["run: cat *", "run: ls *", "run: echo *"])
    b = await make_backend("local", consent=Policy(level, rules, str(workspace.resolve()), "/nonexistent-home", ()))
    ag = await agent(b)
    crashed, unasked = [], []
    for i, command in enumerate(PROC_COMMANDS, 1):
        await ag.send(json.dumps({"id": i, "action": "run", "args": {"command": command}, "security_risk": "LOW"}))
        asked, obs = await _asked_or_answered(b, ag)
        if obs.get("extras", {}).get("error_id") == "SERVER_ERROR" or "failed on this" in str(obs.get("content")):
            crashed.append((command, obs.get("content")))
        if _unreadable(command) and not asked:
            unasked.append(command)
    await ag.close()
    assert not crashed, crashed
    assert not unasked, unasked
