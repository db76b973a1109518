"""Review mode's edge cases, from outside: real backend, real `oh` agent and `oh review` processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .test_review_cli import _agent, _finish, _pending


@pytest.fixture
def review_backend(oh):
    return oh.start("local", None, "--review", "--review-timeout", "120")


def test_accept_when_the_file_grew_past_the_review_limit_is_stale_not_a_crash(oh, review_backend):
    target = oh.workspace / "big.txt"
    target.write_text("small\n")
    agent = _agent(oh, "write", "big.txt", "--content", "agent\n")
    [row] = _pending(oh, 1)
    with open(target, "r+b") as f:  # sparse: cheap on disk, but past the 64 MiB a proposal may hold
        f.truncate(65 * 1024 * 1024)
    p = oh("review", "accept", row["id"])
    assert p.returncode == 1 and "stale" in p.stdout, (p.stdout, p.stderr)
    assert os.path.getsize(target) == 65 * 1024 * 1024
    rc, obs = _finish(agent)
    assert rc == 6 and obs["extras"]["error_id"] == "REJECTED"


def test_outside_paths_are_refused_before_becoming_proposals(oh, review_backend, tmp_path):
    outside = tmp_path / "outside.txt"
    p = oh("write", str(outside), "--content", "x", "--json")
    obs = json.loads(p.stdout)
    assert p.returncode == 6 and obs["extras"]["error_id"] == "PATH_DENIED"
    assert oh.json("review", "--json")["proposals"] == []
    assert not outside.exists()


def test_binary_proposal_show_and_accept(oh, review_backend):
    import base64
    import threading

    from oh.client import SyncClient

    data = bytes(range(256))
    sess = oh.session(review_backend["instance_id"])
    got: dict = {}
    with SyncClient.connect(review_backend["url"], sess["token"], name="bin-agent") as c:
        t = threading.Thread(
            target=lambda: got.update(
                obs=c.write(str(oh.workspace / "b.bin"), base64.b64encode(data).decode(), encoding="base64")
            )
        )
        t.start()
        [row] = _pending(oh, 1)
        shown = oh.json("review", "show", row["id"], "--json")
        assert shown["proposal"]["binary"] is True and shown["proposal"]["bytes"] == 256
        assert "Binary content" in oh("review", "show", row["id"]).stdout
        oh("review", "accept", row["id"], check=0)
        t.join(60)
    assert not t.is_alive() and got["obs"].kind == "write"
    assert (oh.workspace / "b.bin").read_bytes() == data


def test_write_modes_print_json_and_exit_124_when_nobody_reviews(oh):
    oh.start("local", None, "--review", "--review-timeout", "1")
    p = oh("write", "t.txt", "--append", "--content", "x", "--json", timeout=60)
    obs = json.loads(p.stdout)  # --json prints the error observation, as plain `oh write --json` does
    assert p.returncode == 124 and obs["extras"]["error_id"] == "TIMEOUT", (p.returncode, p.stdout, p.stderr)
    assert not (oh.workspace / "t.txt").exists()


def test_append_and_create_modes_are_proposals(oh, review_backend):
    (oh.workspace / "log.txt").write_text("one\n")
    a = _agent(oh, "write", "log.txt", "--append", "--content", "two\n")
    [row] = _pending(oh, 1)
    assert row["command"] == "append"
    oh("review", "accept", row["id"], check=0)
    assert _finish(a)[0] == 0 and (oh.workspace / "log.txt").read_text() == "one\ntwo\n"
    # create on an existing file changes nothing: answered at once, no proposal
    p = oh("write", "log.txt", "--create", "--content", "zzz", "--json")
    assert p.returncode == 0 and "already exists" in json.loads(p.stdout)["content"]
    c = _agent(oh, "write", "fresh.txt", "--create", "--content", "new\n")
    [row] = _pending(oh, 1)
    assert row["command"] == "create" and row["creates"] is True
    (oh.workspace / "fresh.txt").write_text("raced\n")  # the name got taken meanwhile
    p = oh("review", "accept", row["id"])
    assert p.returncode == 1
    assert (oh.workspace / "fresh.txt").read_text() == "raced\n"
    assert _finish(c)[0] == 6


def test_concurrent_accepts_of_one_id_exactly_one_wins(oh, review_backend):
    agent = _agent(oh, "write", "race.txt", "--content", "x\n")
    [row] = _pending(oh, 1)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "oh", "review", "accept", row["id"], "--json"],
            cwd=oh.workspace,
            env=oh.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 1, 1, 1], outs
    assert _finish(agent)[0] == 0


def test_agent_disconnect_withdraws_the_proposal(oh, review_backend):
    agent = _agent(oh, "write", "gone.txt", "--content", "x\n")
    [row] = _pending(oh, 1)
    agent.kill()
    agent.wait(timeout=30)
    from .conftest import wait_for

    wait_for(
        lambda: oh.json("review", "--json")["proposals"] == [] or None,
        timeout=30,
        interval=0.2,
        what="withdrawn proposal",
    )
    p = oh("review", "accept", row["id"])
    assert p.returncode == 1 and "No pending proposal" in p.stderr
    assert not (oh.workspace / "gone.txt").exists()


def test_garbage_control_frames_get_clear_errors(oh, review_backend):
    from websockets.sync.client import connect

    sess = oh.session(review_backend["instance_id"])

    def control(_s, frame):
        with connect(
            review_backend["url"] + "/v1/control", additional_headers={"Authorization": f"Bearer {sess['token']}"}
        ) as ws:
            ws.send(json.dumps(frame))
            return json.loads(ws.recv(timeout=20))

    s = None
    for frame in (
        {"type": "review"},
        {"type": "review", "op": "accept", "id": 3},
        {"type": "review", "op": "accept", "id": "p1\n"},
        {"type": "review", "op": "accept", "all": True, "id": "p1"},
        {"type": "review", "op": "reject", "id": "p1", "reason": ["x"]},
        {"type": "review", "op": "show", "id": "p" + "9" * 40},
        {"type": "nope"},
        {"type": "review", "op": "list", "extra": {"a": 1}},
    ):
        ans = control(s, frame)
        assert ans["type"] in ("error", "review"), ans
        if ans["type"] == "error":
            assert ans["error_id"] in ("BAD_REQUEST", "NO_PROPOSAL") and ans["message"]


def test_a_parent_swapped_for_a_symlink_meanwhile_is_stale_and_nothing_leaves_the_workspace(
    oh, review_backend, tmp_path
):
    sub = oh.workspace / "sub"
    sub.mkdir()
    (sub / "f.txt").write_text("v1\n")
    agent = _agent(oh, "write", "sub/f.txt", "--content", "v2\n")
    [row] = _pending(oh, 1)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("v1\n")  # same bytes: only the path's target changed
    sub.rename(oh.workspace / "sub.old")
    sub.symlink_to(outside)
    p = oh("review", "accept", row["id"])
    assert p.returncode == 1 and "stale" in p.stdout, (p.stdout, p.stderr)
    assert (outside / "f.txt").read_text() == "v1\n"
    rc, obs = _finish(agent)
    assert rc == 6 and obs["extras"]["error_id"] == "REJECTED"


def test_a_directory_where_a_new_file_was_proposed_is_stale(oh, review_backend):
    agent = _agent(oh, "write", "made.txt", "--content", "x\n")
    [row] = _pending(oh, 1)
    (oh.workspace / "made.txt").mkdir()
    p = oh("review", "accept", row["id"])
    assert p.returncode == 1 and "stale" in p.stdout, (p.stdout, p.stderr)
    assert _finish(agent)[1]["extras"]["error_id"] == "REJECTED"


def test_many_proposals_from_one_socket_accept_all(oh, review_backend):
    import asyncio

    from oh.client import Client

    sess = oh.session(review_backend["instance_id"])
    n = 30

    async def main():
        async with await Client.connect(review_backend["url"], sess["token"], name="many") as c:
            writes = asyncio.gather(*(c.write(str(oh.workspace / f"m{i}.txt"), f"{i}\n") for i in range(n)))
            await asyncio.to_thread(_pending, oh, n)
            done = await asyncio.to_thread(oh.json, "review", "accept", "--all", "--json")
            return done, await asyncio.wait_for(writes, 60)

    done, obs = asyncio.run(main())
    assert [r["outcome"] for r in done["results"]] == ["accepted"] * n
    assert all(o.kind == "write" for o in obs)
    assert all((oh.workspace / f"m{i}.txt").read_text() == f"{i}\n" for i in range(n))


def test_refusals_are_answered_at_once_not_proposed(oh, review_backend):
    (oh.workspace / "e.txt").write_text("a\na\n")
    for args in (
        ("edit", "e.txt", "--undo"),
        ("edit", "e.txt", "--replace", "a", "b"),
        ("edit", "e.txt", "--insert", "99", "x"),
        ("edit", "e.txt", "--create", "x"),
        ("edit", "missing.txt", "--replace", "a", "b"),
    ):
        p = oh(*args, "--json", timeout=60)
        obs = json.loads(p.stdout)
        assert p.returncode == 6 and obs["extras"]["error_id"] == "TOOL_ERROR", (args, p.stdout)
    assert oh.json("review", "--json")["proposals"] == []
    assert (oh.workspace / "e.txt").read_text() == "a\na\n"


def test_an_id_with_a_trailing_newline_is_a_usage_error(oh, review_backend):
    agent = _agent(oh, "write", "nl.txt", "--content", "x\n")
    [row] = _pending(oh, 1)
    p = oh("review", "accept", row["id"] + "\n")
    assert p.returncode == 2 and "needs an id like p3" in p.stderr, (p.returncode, p.stderr)
    assert not (oh.workspace / "nl.txt").exists()
    oh("review", "reject", row["id"], check=0)
    assert _finish(agent)[0] == 6
