"""Several agents, one workspace (issue 37, docs/protocol.md §3.18), against a real backend (local runtime).

The property: N agents do read-modify-write cycles on a few shared files through `write` and `edit`; each
update adds one unique token line. Whatever the interleaving, every accepted update's token is in its file
exactly once and no other token is (the files are a serial order of the accepted updates), and every refused
update was told STALE. The positive control runs the same cycles with arbitration bypassed (`force`) and
finds lost updates, so the property can fail."""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from oh.client import Client
from oh.protocol import actions
from oh.protocol.events import read_observation

from .conftest import TOKEN
from .peers import EchoEditor, control

OPS = ("write", "replace", "insert")


def _url(b) -> str:
    return f"ws://127.0.0.1:{b.port}"


def _tokens(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


async def _cycle_round(clients, files, rng, accepted, refused, force, round_no, ops) -> None:
    """Every agent reads a random file (all reads first), then every agent sends its change (all at once):
    with more agents than files, two agents always based a change on the same version (pigeonhole)."""
    picks = [(i, rng.choice(files), rng.choice(ops)) for i in range(len(clients))]
    reads = await asyncio.gather(*(clients[i].read(f) for i, f, _ in picks))

    async def change(i: int, f: str, op: str, seen: dict) -> None:
        token = f"<{i:02d}-{round_no:04d}>"
        text = seen.get("content") or ""
        lines = _tokens(text)
        c = clients[i]
        if op == "write" or not lines:
            obs = await c.write(f, "".join(t + "\n" for t in [*lines, token]), force=force)
        elif op == "replace":
            obs = await c.edit(f, "str_replace", old_str=lines[-1], new_str=f"{lines[-1]}\n{token}", force=force)
        else:
            obs = await c.edit(f, "insert", insert_line=len(lines), new_str=token, force=force)
        if obs.kind == "error":
            refused.append((token, obs.error_id, obs.content[:200]))
        else:
            accepted.setdefault(f, []).append(token)

    await asyncio.gather(*(change(i, f, op, seen) for (i, f, op), seen in zip(picks, reads)))


async def _run(make_backend, workspace: Path, agents: int, rounds: int, seed: int, force: bool, ops=OPS):
    b = await make_backend()
    files = [f"f{k}.txt" for k in range(max(1, agents // 2))]
    for f in files:
        (workspace / f).write_text("")
    clients = [await Client.connect(_url(b), TOKEN, name=f"agent{i}") for i in range(agents)]
    rng = random.Random(seed)
    accepted: dict[str, list[str]] = {}
    refused: list[tuple[str, str | None, str]] = []
    try:
        for r in range(rounds):
            await _cycle_round(clients, files, rng, accepted, refused, force, r, ops)
    finally:
        for c in clients:
            await c.close()
    finals = {f: _tokens((workspace / f).read_text()) for f in files}
    return files, accepted, refused, finals


def _lost(files, accepted, finals) -> int:
    return sum(len(set(accepted.get(f, [])) - set(finals[f])) for f in files)


@pytest.mark.parametrize(("agents", "rounds", "seed"), [(2, 12, 1), (4, 10, 2), (16, 3, 3)])
async def test_no_accepted_update_is_lost(make_backend, workspace, agents, rounds, seed):
    files, accepted, refused, finals = await _run(make_backend, workspace, agents, rounds, seed, force=False)
    for f in files:
        counts = Counter(finals[f])
        assert all(n == 1 for n in counts.values()), f"a token twice in {f}: {counts}"
        assert set(finals[f]) == set(accepted.get(f, [])), f"{f}: final tokens differ from the accepted updates"
    assert {e for _, e, _ in refused} <= {"STALE"}, refused[:3]
    assert sum(len(v) for v in accepted.values()) + len(refused) == agents * rounds


async def test_positive_control_force_loses_updates(make_backend, workspace):
    """The same cycles with the guard bypassed (`force`): updates are lost, so the property above can fail.
    Whole-file writes only: with 4 agents on 2 files two writes in a round are always based on one version."""
    files, accepted, refused, finals = await _run(make_backend, workspace, 4, 10, 2, force=True, ops=("write",))
    assert refused == []
    assert _lost(files, accepted, finals) > 0


# ---- the guard's answers, one by one --------------------------------------------------------------------------


async def _pair(make_backend):
    b = await make_backend()
    alice = await Client.connect(_url(b), TOKEN, name="alice")
    bob = await Client.connect(_url(b), TOKEN, name="bob")
    return b, alice, bob


async def test_stale_write_is_refused_naming_the_writer_with_the_diff(make_backend, workspace):
    f = workspace / "notes.txt"
    f.write_text("one\ntwo\n")
    b, alice, bob = await _pair(make_backend)
    async with alice, bob:
        seen = await alice.read("notes.txt")
        assert seen.extras["version"].startswith("b2:")
        await bob.read("notes.txt")
        assert (await bob.write("notes.txt", "one\ntwo\nbob\n")).ok
        obs = await alice.write("notes.txt", "one\ntwo\nalice\n")
        assert obs.error_id == "STALE"
        assert obs.extras["changed_by"] == "bob" and obs.extras["seen_version"] == seen.extras["version"]
        assert "agent bob" in obs.content and "+bob" in obs.content and "Nothing was written" in obs.content
        assert f.read_text() == "one\ntwo\nbob\n"  # bob's update kept
        again = await alice.read("notes.txt")  # read again, redo: accepted
        assert (await alice.write("notes.txt", again.content + "alice\n")).ok
        assert f.read_text() == "one\ntwo\nbob\nalice\n"


async def test_an_edit_whose_text_still_matches_applies_and_says_the_file_had_changed(make_backend, workspace):
    f = workspace / "m.py"
    f.write_text("a = 1\nb = 2\n")
    b, alice, bob = await _pair(make_backend)
    async with alice, bob:
        await alice.read("m.py")
        await bob.read("m.py")
        assert (await bob.edit("m.py", "str_replace", old_str="b = 2", new_str="b = 3")).ok
        obs = await alice.edit("m.py", "str_replace", old_str="a = 1", new_str="a = 10")
        assert obs.ok and obs.extras.get("stale_base") is True and "had changed since you last read it" in obs.content
        assert f.read_text() == "a = 10\nb = 3\n"
        # an edit whose old text is gone (bob changed it) is STALE with the diff, not a bare "not found"
        await bob.read("m.py")
        assert (await bob.edit("m.py", "str_replace", old_str="a = 10", new_str="a = 11")).ok
        gone = await alice.edit("m.py", "str_replace", old_str="a = 10", new_str="a = 12")
        assert gone.error_id == "STALE" and "-a = 10" in gone.content and "+a = 11" in gone.content
        assert f.read_text() == "a = 11\nb = 3\n"


async def test_a_command_or_the_user_changing_the_file_makes_the_write_stale(make_backend, workspace):
    f = workspace / "c.txt"
    f.write_text("base\n")
    b, alice, bob = await _pair(make_backend)
    async with alice, bob:
        await alice.read("c.txt")
        assert (await bob.run("echo from-bob-shell >> c.txt", timeout=30)).exit_code == 0
        obs = await alice.write("c.txt", "alice\n")
        assert obs.error_id == "STALE" and "outside oh's file actions" in obs.content
        assert f.read_text() == "base\nfrom-bob-shell\n"
        await alice.read("c.txt")
        f.write_text("the user's edit\n")  # the user's own edit (saved): never blocked, makes the next write stale
        assert (await alice.write("c.txt", "alice\n")).error_id == "STALE"
        assert f.read_text() == "the user's edit\n"
        forced = await alice.write("c.txt", "alice\n", force=True)  # the documented way past
        assert forced.ok and f.read_text() == "alice\n"


async def test_if_version_from_another_connection_and_blind_writes(make_backend, workspace):
    """`oh read --json` then `oh write --if-version` are two connections: the version travels with the agent."""
    f = workspace / "v.txt"
    f.write_text("v1\n")
    b, alice, bob = await _pair(make_backend)
    async with alice, bob:
        v1 = (await alice.read("v.txt")).extras["version"]
        assert (await alice.write("v.txt", "v2\n")).ok
        obs = await bob.write("v.txt", "bob\n", if_version=v1)  # bob never read it here, but names what he saw
        assert obs.error_id == "STALE" and "+v2" in obs.content and f.read_text() == "v2\n"
        v2 = (await alice.read("v.txt")).extras["version"]
        assert (await bob.write("v.txt", "bob\n", if_version=v2)).ok
        blind = await bob.write("w.txt", "new\n")  # a new file: accepted
        assert blind.ok and not blind.extras.get("blind")
        (workspace / "x.txt").write_text("x\n")
        blind = await bob.write("x.txt", "never read\n")  # never read: today's behaviour, marked blind
        assert blind.ok and blind.extras.get("blind") is True
        frame = actions.write("x.txt", "y")
        frame["args"]["if_version"] = 5
        bad = await bob.send(frame)
        assert bad.error_id == "BAD_REQUEST" and "if_version" in bad.content


# ---- claims ---------------------------------------------------------------------------------------------------


async def test_a_claim_refuses_another_agents_write_until_released(make_backend, workspace):
    (workspace / "src").mkdir()
    f = workspace / "src" / "a.py"
    f.write_text("x\n")
    b, alice, bob = await _pair(make_backend)
    async with alice, bob:
        made = await alice.claim(["src"], ttl=600)
        assert made.kind == "claim" and made.extras["claim_id"] == "k1"
        obs = await bob.write("src/a.py", "bob\n")
        assert obs.error_id == "CLAIMED" and "alice" in obs.content and obs.extras["claim"]["claim_id"] == "k1"
        assert f.read_text() == "x\n"
        assert (await bob.claim(["src/a.py"])).error_id == "CLAIMED"  # overlapping claims are refused too
        assert (await alice.write("src/a.py", "alice\n")).ok  # the holder writes
        listed = await control(b, TOKEN, {"type": "claims", "op": "list"})
        assert [c["claim_id"] for c in listed["claims"]] == ["k1"]
        # an agent cannot end another's claim through the control leg; the user (decider credential) can
        refused = await control(b, TOKEN, {"type": "claims", "op": "release", "claim_id": "k1"})
        assert refused["error_id"] == "FORBIDDEN"
        done = await control(b, b.credentials.decider, {"type": "claims", "op": "release", "claim_id": "k1"})
        assert done["released"] == ["k1"]
        await bob.read("src/a.py")
        assert (await bob.write("src/a.py", "bob\n")).ok and f.read_text() == "bob\n"


async def test_claims_end_with_their_ttl_and_with_their_agents_disconnect(make_backend, workspace):
    f = workspace / "t.txt"
    f.write_text("t\n")
    b, alice, bob = await _pair(make_backend)
    async with bob:
        assert (await alice.claim(["t.txt"], ttl=0.3)).ok
        # bob waits for the claim (wait_claim): it ends with its TTL and his write goes through
        obs = await bob.send(_write_waiting("t.txt", "after ttl\n", 30))
        assert obs.ok and f.read_text() == "after ttl\n"
        await alice.read("t.txt")
        assert (await alice.claim(["t.txt"], ttl=600)).ok
        pending = asyncio.ensure_future(bob.send(_write_waiting("t.txt", "after disconnect\n", 30)))
        await alice.close()  # the holder leaves: its claims end, the waiting write goes through
        obs = await pending
        assert obs.ok and f.read_text() == "after disconnect\n"
        assert (await control(b, TOKEN, {"type": "claims", "op": "list"}))["claims"] == []


def _write_waiting(path: str, content: str, wait: float) -> dict:
    return actions.write(path, content, wait_claim=wait)


async def test_the_guard_never_reads_outside_the_allowed_roots_for_an_agent(make_backend, workspace, tmp_path):
    """A STALE refusal carries a diff of the current file: for a path outside the roots (named directly or through
    a symlink in the workspace) that diff would be a secret read. The runtime refuses; the guard reads nothing."""
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOPSECRET-line\n")
    (workspace / "a.txt").write_text("mine\n")
    (workspace / "link.txt").symlink_to(secret)
    b, alice, bob = await _pair(make_backend)
    async with alice, bob:
        seen = (await alice.read("a.txt")).extras["version"]
        for target in (str(secret), "link.txt"):
            obs = await alice.write(target, "x\n", if_version=seen)
            assert obs.error_id == "PATH_DENIED", obs
            assert "TOPSECRET" not in obs.content and "version" not in obs.extras
            assert (await alice.edit(target, "view")).error_id == "PATH_DENIED"
    assert secret.read_text() == "TOPSECRET-line\n"


async def test_a_file_changed_while_it_was_read_gives_no_version_and_the_next_write_is_stale(make_backend, workspace):
    """Reads are not serialised: the version is taken before and after. An editor that answers after the file
    changed (the user saved meanwhile) may have sent either content, so the agent must read again."""
    f = workspace / "r.txt"
    f.write_text("old\n")
    b = await make_backend("vscode")
    async with EchoEditor(b.port, b.editor_token, [str(workspace)], hold=True) as ed:
        alice = await Client.connect(_url(b), TOKEN, name="alice")
        async with alice:
            pending = asyncio.ensure_future(alice.read("r.txt"))
            while not ed.received:  # the read reached the editor (it holds it)
                await asyncio.sleep(0.01)
            f.write_text("new\n")
            await ed.conn.send(json.dumps(read_observation(ed.received[0]["id"], str(f), "old\n")))
            obs = await pending
            assert obs.kind == "read" and obs.content == "old\n" and "version" not in obs.extras
            stale = await alice.write("r.txt", "old\nmine\n")  # decided by the backend: never reaches the editor
            assert stale.error_id == "STALE" and f.read_text() == "new\n" and len(ed.received) == 1


# ---- force under consent `changes` (issue 37: the way past STALE is the user's to allow) ----------------------


async def test_force_is_asked_under_consent_changes_and_rejecting_keeps_the_file(make_backend, workspace):
    from .peers import pending
    from .test_consent import policy

    f = workspace / "notes.txt"
    f.write_text("one\n")
    b = await make_backend(consent=policy(workspace, "changes"), review=True)
    async with await Client.connect(_url(b), TOKEN, name="alice") as alice:
        assert (await alice.read("notes.txt")).kind == "read"
        f.write_text("the user's change\n")  # the agent's base is stale now
        for op, expect in (("reject", "the user's change\n"), ("allow", "alice's\n")):
            sent = asyncio.ensure_future(alice.write("notes.txt", "alice's\n", force=True))
            (row,) = await pending(b)
            assert "force: true" in row["reason"] and "another agent" in row["reason"], row
            assert f.read_text() == "the user's change\n"  # nothing written while it is asked
            decided = await control(b, b.decider_token, {"type": "approvals", "op": op, "id": row["id"]})
            assert decided["results"][0]["outcome"] in ("allowed", "rejected"), decided
            obs = await asyncio.wait_for(sent, 20)
            assert (obs.kind == "write") == (op == "allow"), obs.content
            assert f.read_text() == expect


async def test_force_is_not_asked_under_consent_commands(make_backend, workspace):
    from .test_consent import policy

    f = workspace / "notes.txt"
    f.write_text("one\n")
    b = await make_backend(consent=policy(workspace, "commands"))
    async with await Client.connect(_url(b), TOKEN, name="alice") as alice:
        await alice.read("notes.txt")
        f.write_text("two\n")
        obs = await asyncio.wait_for(alice.write("notes.txt", "alice's\n", force=True), 20)
        assert obs.kind == "write" and f.read_text() == "alice's\n"
