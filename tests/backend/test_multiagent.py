"""Several agents, one workspace (issue 37, docs/protocol.md §3.17), against a real backend (local runtime).

The property: N agents do read-modify-write cycles on a few shared files through `write` and `edit`; each
update adds one unique token line. Whatever the interleaving, every accepted update's token is in its file
exactly once and no other token is (the files are a serial order of the accepted updates), and every refused
update was told STALE. The positive control runs the same cycles with arbitration bypassed (`force`) and
finds lost updates, so the property can fail."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path

import pytest

from oh.client import Client

from .conftest import TOKEN


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
    if agents > len(files):  # pigeonhole: some change was based on a version another agent had replaced
        assert any(e == "STALE" for _, e, _ in refused) or any(len(v) > 1 for v in accepted.values())


async def test_positive_control_force_loses_updates(make_backend, workspace):
    """The same cycles with the guard bypassed (`force`): updates are lost, so the property above can fail.
    Whole-file writes only: with 4 agents on 2 files two writes in a round are always based on one version."""
    files, accepted, refused, finals = await _run(make_backend, workspace, 4, 10, 2, force=True, ops=("write",))
    assert refused == []
    assert _lost(files, accepted, finals) > 0
