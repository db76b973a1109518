"""Concurrent commands and background jobs in a real VS Code (docs/protocol.md §3.8, §4.1): several
`run`s sent at once on one agent connection each get a terminal (the agent's, then `oh · <agent> #N`
extra ones), all run, each answer carries its own output and exit code; extra terminals close when
their command ends. Background jobs through the real CLI (`oh run --background`, `oh jobs ...`), `stat`
and the write modes (§3.9), and encodings (latin-1, binary) through the extension.

The first test sends its burst before the agent's terminal exists: the burst that once made the main
terminal's first command come back empty.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from typing import Any

import pytest

from .conftest import VsCode, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def backend(vscode: VsCode):
    # 64 terminals per agent shell, so 50 concurrent commands fit; the backend tells the extension
    # (registered.max_shells).
    vscode.env["OH_MAX_SHELLS"] = "64"
    try:
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
    finally:
        vscode.env.pop("OH_MAX_SHELLS", None)
    assert proc.returncode == 0, f"oh start failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    info = json.loads(proc.stdout)

    def registered():
        return any(s.get("instance_id") == info["instance_id"] and s.get("editors") for s in vscode.sessions())

    wait_until(registered, 60, "the extension to register with the backend")
    info["session_file"] = json.loads((vscode.oh_home / "sessions" / f"{info['instance_id']}.json").read_text())
    yield info
    vscode.oh("stop", info["instance_id"], timeout=60)


async def _concurrent(info: dict[str, Any], n: int, tag: str) -> list[dict[str, Any]]:
    from oh.client import Client

    s = info["session_file"]
    async with await Client.connect(s["url"], s["token"], name=f"jobs-{tag}") as c:
        # Every command outlives the time it takes to send them all, so they really overlap.
        # `(exit K)`: each command has its own exit code without ending the agent's shell.
        obs = await asyncio.gather(
            *(c.run(f"sleep 2; echo {tag}-$(( {i} * 3 )); (exit {i % 4})", timeout=120) for i in range(n))
        )
        return list(obs)


def _check(obs: list[dict[str, Any]], n: int, tag: str) -> None:
    for i, o in enumerate(obs):
        assert o["observation"] == "run", (i, o)
        assert o["content"] == f"{tag}-{i * 3}\n", (i, o["content"])
        assert o["extras"]["metadata"]["exit_code"] == i % 4, (i, o)
    ids = [o["extras"]["metadata"].get("job_id") for o in obs]
    extra = [j for j in ids if j]
    assert len(extra) >= 1, "at least one command ran in an extra terminal"
    assert len(set(extra)) == len(extra), f"each extra-terminal command has its own id: {ids}"


def test_ten_concurrent_runs_all_execute(vscode: VsCode, backend: dict):
    obs = asyncio.run(_concurrent(backend, 10, "ten"))
    _check(obs, 10, "ten")


def test_fifty_concurrent_runs_all_execute(vscode: VsCode, backend: dict):
    obs = asyncio.run(_concurrent(backend, 50, "fifty"))
    _check(obs, 50, "fifty")


def test_extra_terminal_starts_in_the_main_terminals_directory(vscode: VsCode, backend: dict):
    from oh.client import Client

    sub = vscode.workspace / "jobsub"
    sub.mkdir(exist_ok=True)

    async def go():
        s = backend["session_file"]
        async with await Client.connect(s["url"], s["token"], name="jobs-cwd") as c:
            assert (await c.run(f"cd {sub}", timeout=60))["extras"]["metadata"]["exit_code"] == 0
            slow, fast = await asyncio.gather(c.run("sleep 2; pwd", timeout=120), c.run("pwd; cd /", timeout=120))
            after = await c.run("pwd", timeout=60)
            if "delivered none of this command's output" in after["extras"]["metadata"]["suffix"]:
                # VS Code's own race (docs/protocol.md §4.1): the answer says so, and to run it again.
                after = await c.run("pwd", timeout=60)
            return slow, fast, after

    slow, fast, after = asyncio.run(go())
    real = os.path.realpath(sub)
    assert slow["content"].strip() == real and fast["content"].strip() == real, (slow, fast)
    assert fast["extras"]["metadata"].get("job_id"), fast
    assert after["content"].strip() == real, ("the extra terminal's cd stayed there", after)


def test_stat_and_write_modes_through_the_extension(vscode: VsCode, backend: dict):
    from oh.client.sync import SyncClient

    s = backend["session_file"]
    p = vscode.workspace / "modes" / "log.txt"
    with SyncClient.connect(s["url"], s["token"], name="jobs-modes") as c:
        o = c.write_file(str(p), "one\n", mode="create")
        assert o["observation"] == "write" and o["content"] == "", o
        o = c.write_file(str(p), "two\n", mode="create")
        assert "already exists; it was not changed (mode create)" in o["content"], o
        o = c.write_file(str(p), "three\n", mode="append")
        assert o["observation"] == "write", o
        assert p.read_text() == "one\nthree\n"
        st = c.stat(str(p))
        assert st["observation"] == "stat", st
        assert st["extras"]["exists"] is True and st["extras"]["type"] == "file" and st["extras"]["size"] == 10, st
        assert st["extras"]["encoding"] == "utf-8" and st["extras"]["mime_type"] == "text/plain", st
        missing = c.stat(str(p) + ".nope")
        assert missing["extras"]["exists"] is False, missing


# ---------------------------------------------------------------------------------------------- jobs via the CLI


def _bg(vscode: VsCode, *cmd: str, force: bool = False) -> subprocess.CompletedProcess:
    return vscode.oh("run", "--background", *(["--force"] if force else []), "--", *cmd, timeout=90)


def test_background_job_lifecycle_through_the_cli(vscode: VsCode, backend: dict):
    p = _bg(vscode, "echo first; sleep 1; echo second; exit 5")
    jid = p.stdout.strip()
    assert p.returncode == 0 and jid.startswith("j"), (p.stdout, p.stderr)
    listed = vscode.oh_json("jobs", "--json")
    assert any(j["job_id"] == jid and j["background"] is True for j in listed), listed
    w = vscode.oh("jobs", "wait", jid, timeout=90)
    assert w.returncode == 5 and w.stdout == "first\nsecond\n", (w.returncode, w.stdout, w.stderr)
    out = vscode.oh("jobs", "output", jid, "--offset", "6", timeout=60)
    assert out.stdout == "second\n", out
    obs = vscode.oh_json("jobs", "output", jid, "--json")
    assert obs["extras"]["next_offset"] == 13 and obs["extras"]["eof"] is True, obs
    table = vscode.oh("jobs", timeout=60).stdout
    assert jid in table and "FAILED" in table and "exit 5" in table, table
    # The job ran in a terminal of its own, named after it, that the user can watch.
    names = vscode.drive("terminals")["names"]
    assert any(jid in n for n in names), names


def test_same_job_not_started_twice_unless_forced_and_cancel(vscode: VsCode, backend: dict):
    one = _bg(vscode, "sleep 60").stdout.strip()
    again = _bg(vscode, "sleep 60")
    assert again.stdout.strip() == one and "already running" in again.stderr, (again.stdout, again.stderr)
    forced = _bg(vscode, "sleep 60", force=True).stdout.strip()
    assert forced.startswith("j") and forced != one
    for jid in (one, forced):
        c = vscode.oh("jobs", "cancel", jid, timeout=60)
        assert "cancelled" in c.stdout, (c.stdout, c.stderr)
        assert vscode.oh("jobs", "wait", jid, timeout=60).returncode == 130
    missing = vscode.oh("jobs", "wait", "j99999", timeout=60)
    assert missing.returncode == 6, (missing.stdout, missing.stderr)


def test_write_modes_and_stat_through_the_cli(vscode: VsCode, backend: dict):
    ws = vscode.workspace
    p = vscode.oh("write", "cli/a.txt", "--create", "--content", "one\n")
    assert p.returncode == 0 and "created" in p.stdout, (p.stdout, p.stderr)
    p = vscode.oh("write", "cli/a.txt", "--create", "--content", "two\n")
    assert "already exists" in p.stdout, (p.stdout, p.stderr)
    vscode.oh("write", "cli/a.txt", "--append", "--content", "three\n")
    assert (ws / "cli/a.txt").read_text() == "one\nthree\n"
    info = vscode.oh_json("stat", "cli/a.txt", "--json")
    assert info["exists"] is True and info["type"] == "file" and info["size"] == 10 and info["encoding"] == "utf-8", (
        info
    )
    assert vscode.oh("stat", "cli/missing").returncode == 1


def test_latin1_and_binary_round_trips(vscode: VsCode, backend: dict):
    from oh.client import Client

    ws = vscode.workspace
    (ws / "latin.txt").write_bytes("naïve café\n".encode("latin-1"))
    p = vscode.oh("read", "latin.txt")
    assert p.stdout.startswith("naïve café\n"), p.stdout
    vscode.oh("write", "latin.txt", "--content", "déjà vu\n")
    assert (ws / "latin.txt").read_bytes() == "déjà vu\n".encode("latin-1"), "the file kept its encoding"
    blob = bytes(range(256)) * 3
    (ws / "blob.bin").write_bytes(blob)
    s = backend["session_file"]

    async def go():
        async with await Client.connect(s["url"], s["token"], name="jobs-bin") as c:
            return await c.read_bytes(str(ws / "blob.bin"))

    # The extension advertises "binary" and answers with one binary frame (extension/test: frame layout).
    obs = asyncio.run(go())
    assert bytes(obs["content"]) == blob and obs["extras"]["encoding"] == "binary", obs["extras"]
    assert obs["extras"]["mime_type"] == "application/octet-stream"
