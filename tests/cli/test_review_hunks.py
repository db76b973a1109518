"""Issue 39 item 2, local runtime: a proposal is accepted or rejected hunk by hunk. Real backend, real `oh`
agent processes waiting for the decision, real `oh review` processes; the file's bytes are checked after."""

from __future__ import annotations

import json

import pytest

from .test_review_cli import _agent, _finish, _pending

OLD = "".join(f"line {i}\n" for i in range(1, 41))


def _four_hunks() -> str:
    lines = OLD.splitlines(keepends=True)
    for at in (1, 11, 21, 31):  # far apart: four hunks
        lines[at] = f"CHANGED {at}\n"
    return "".join(lines)


def _with(changed: set[int]) -> str:
    lines = OLD.splitlines(keepends=True)
    for n, at in enumerate((1, 11, 21, 31), start=1):
        if n in changed:
            lines[at] = f"CHANGED {at}\n"
    return "".join(lines)


@pytest.fixture
def review_backend(oh):
    return oh.start("local", None, "--review", "--review-timeout", "120")


@pytest.fixture
def proposal(oh, review_backend):
    target = oh.workspace / "f.txt"
    target.write_text(OLD)
    agent = _agent(oh, "write", "f.txt", "--content", _four_hunks())
    [row] = _pending(oh, 1)
    return target, agent, row["id"]


def test_show_numbers_the_hunks_and_accept_some_writes_only_those(oh, proposal):
    target, agent, pid = proposal
    shown = oh("review", "show", pid, check=0).stdout
    assert [f"[hunk {n}/4]" in shown for n in (1, 2, 3, 4)] == [True] * 4 and "\x1b" not in shown
    hunks = oh.json("review", "show", pid, "--json")["proposal"]["hunks"]
    assert [(h["n"], h["kind"], h["added"], h["removed"]) for h in hunks] == [(n, "text", 1, 1) for n in (1, 2, 3, 4)]
    assert hunks[0]["header"].startswith("@@ -1,5 +1,5 @@")
    done = oh("review", "accept", pid, "--hunks", "1,3", check=0)
    assert "hunks 1, 3 of 4" in done.stdout
    assert target.read_bytes() == _with({1, 3}).encode()
    rc, obs = _finish(agent)
    assert rc == 0 and obs["content"].endswith(
        f"[Review mode: the user accepted part of this change to {target}: hunks 1, 3 of 4 were written; hunks 2, 4 "
        "were rejected and not written. Read the file again before building on it.]"
    )


def test_reject_some_writes_the_rest_and_files_select_every_hunk(oh, proposal):
    target, agent, pid = proposal
    oh("review", "reject", pid, "--hunks", "2-3", check=0)
    assert target.read_bytes() == _with({1, 4}).encode()
    rc, obs = _finish(agent)
    assert rc == 0 and "hunks 1, 4 of 4 were written; hunks 2, 3 were rejected" in obs["content"]
    # a second proposal: --files names the whole file, so accepting it is the whole change
    agent = _agent(oh, "write", "f.txt", "--content", OLD)
    [row] = _pending(oh, 1)
    oh("review", "accept", row["id"], "--files", str(target), check=0)
    assert target.read_bytes() == OLD.encode() and _finish(agent)[0] == 0


def test_bad_hunk_numbers_are_refused_listing_the_valid_ones_and_nothing_changes(oh, proposal):
    target, agent, pid = proposal
    bad = oh("review", "accept", pid, "--hunks", "2,7")
    assert bad.returncode == 2 and "No hunk 7 in this change: its hunks are 1-4." in bad.stderr + bad.stdout
    nonsense = oh("review", "reject", pid, "--hunks", "x")
    assert nonsense.returncode == 2 and "not a hunk number" in nonsense.stderr + nonsense.stdout
    unknown = oh("review", "accept", pid, "--files", "nope.txt")
    assert unknown.returncode == 2 and "its files are" in unknown.stderr + unknown.stdout
    assert target.read_bytes() == OLD.encode()
    assert [r["id"] for r in oh.json("review", "--json")["proposals"]] == [pid]  # still pending
    oh("review", "reject", pid, "--hunks", "1-4", check=0)  # every hunk rejected: the whole proposal
    rc, obs = _finish(agent)
    assert rc == 6 and obs["extras"]["error_id"] == "REJECTED" and target.read_bytes() == OLD.encode()


def test_the_agent_token_may_not_decide_hunks(oh, review_backend):
    from websockets.sync.client import connect

    target = oh.workspace / "f.txt"
    target.write_text(OLD)
    agent = _agent(oh, "write", "f.txt", "--content", _four_hunks())
    [row] = _pending(oh, 1)
    sess = oh.session(review_backend["instance_id"])
    url = review_backend["url"] + "/v1/control"
    with connect(url, additional_headers={"Authorization": f"Bearer {sess['token']}"}) as ws:
        for op in ("accept", "reject"):
            ws.send(json.dumps({"type": "review", "op": op, "id": row["id"], "hunks": [1]}))
            assert json.loads(ws.recv(timeout=10))["error_id"] == "FORBIDDEN"
    assert target.read_bytes() == OLD.encode()
    oh("review", "reject", row["id"], check=0)
    assert _finish(agent)[0] == 6 and target.read_bytes() == OLD.encode()


def test_patch_walks_the_hunks_at_a_terminal_and_writes_the_answers(oh, proposal):
    from .terminal import Term

    target, agent, pid = proposal
    term = Term(oh, argv=["-m", "oh", "review", "-p", pid])
    try:
        term.see("[1/4] [y,n,a,d,q,?]?")
        assert "\x1b[32m+CHANGED 1" in term.raw  # colour at a terminal
        term.child.send("?\r")
        term.see("d - reject this hunk and every later one")
        term.child.send("y\r")
        term.see("[2/4]")
        term.child.send("n\r")
        term.see("[3/4]")
        term.child.send("a\r")
        assert term.finish() == 0
    finally:
        term.kill()
    assert target.read_bytes() == _with({1, 3, 4}).encode()
    rc, obs = _finish(agent)
    assert rc == 0 and "hunks 1, 3, 4 of 4 were written; hunk 2 was rejected" in obs["content"]


def test_patch_refuses_a_stdin_that_is_no_terminal_and_says_what_to_type(oh, proposal):
    target, agent, pid = proposal
    p = oh("review", "patch", pid)
    assert p.returncode == 2 and f"oh review accept {pid} --hunks 1,3" in p.stderr + p.stdout
    assert target.read_bytes() == OLD.encode()
    oh("review", "reject", pid, check=0)
    assert _finish(agent)[0] == 6
