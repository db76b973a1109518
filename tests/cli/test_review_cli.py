"""Issue 12 item 1, local runtime: `oh start --review` turns `write`/`edit` into proposals that
`oh review` lists, shows, accepts and rejects. Real backend, real `oh` agent processes (their
`oh write`/`oh edit` block until the decision), real `oh review` processes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import wait_for
from .inprocess import here, invoke  # noqa: F401 - `here` is a fixture

AGENT_WAIT = 60  # generous: the machine is shared


@pytest.fixture
def review_backend(oh):
    return oh.start("local", None, "--review", "--review-timeout", "120")


def _agent(oh, *args: str) -> subprocess.Popen:
    """An agent verb (`oh write ...`, `oh edit ...`) running in the background: it waits for the review."""
    return subprocess.Popen(
        [sys.executable, "-m", "oh", *args, "--json"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen) -> tuple[int, dict]:
    out, err = proc.communicate(timeout=AGENT_WAIT)
    try:
        return proc.returncode, json.loads(out)
    except ValueError:
        raise AssertionError(f"agent printed no JSON (rc {proc.returncode}): {out!r} {err!r}") from None


def _pending(oh, n: int) -> list[dict]:
    def listed():
        rows = oh.json("review", "--json")["proposals"]
        return rows if len(rows) >= n else None

    return wait_for(listed, timeout=30, interval=0.2, what=f"{n} pending proposal(s)")


def test_accept_writes_the_change_and_the_agent_hears_it(oh, review_backend):
    target = oh.workspace / "f.py"
    target.write_text("x = 1\ny = 2\n")
    agent = _agent(oh, "edit", "f.py", "--replace", "y = 2", "y = 3")
    [row] = _pending(oh, 1)
    assert (
        row["kind"] == "edit"
        and row["command"] == "str_replace"
        and row["path"] == str(target)
        and row["id"].startswith("p")
    )
    assert target.read_text() == "x = 1\ny = 2\n"  # a proposal, not a change
    shown = oh("review", "show", row["id"], check=0).stdout
    assert "-y = 2" in shown and "+y = 3" in shown and "\x1b" not in shown  # no colour without a TTY
    table = oh("review", check=0).stdout
    assert row["id"] in table and "str_replace" in table and "f.py" in table
    res = oh.json("review", "accept", row["id"], "--json")
    assert res["results"][0]["outcome"] == "accepted"
    rc, obs = _finish(agent)
    assert rc == 0 and obs["observation"] == "edit" and "accepted" in obs["content"]
    assert obs["extras"]["new_content"] == "x = 1\ny = 3\n"
    assert target.read_text() == "x = 1\ny = 3\n"
    assert oh.json("review", "--json")["proposals"] == []
    # The accepted edit is in the undo history: undo is a proposal too, and accepting it restores the file.
    undo = _agent(oh, "edit", "f.py", "--undo")
    [row] = _pending(oh, 1)
    oh("review", "accept", row["id"], check=0)
    assert _finish(undo)[0] == 0 and target.read_text() == "x = 1\ny = 2\n"


def test_reject_with_reason_reaches_the_agent_and_nothing_is_written(oh, review_backend):
    agent = _agent(oh, "write", "new.txt", "--content", "hello\n")
    [row] = _pending(oh, 1)
    assert row["kind"] == "write" and row["creates"] is True
    res = oh.json("review", "reject", row["id"], "--reason", "use a README instead", "--json")
    assert res["results"][0]["outcome"] == "rejected"
    rc, obs = _finish(agent)
    assert rc == 6 and obs["observation"] == "error" and obs["extras"]["error_id"] == "REJECTED"
    assert obs["content"].endswith("Reason: use a README instead")
    assert not (oh.workspace / "new.txt").exists()


def test_accept_all_applies_every_pending_proposal(oh, review_backend):
    (oh.workspace / "a.txt").write_text("one\n")
    agents = [
        _agent(oh, "write", "a.txt", "--append", "--content", "two\n"),
        _agent(oh, "edit", "b.txt", "--create", "bee\n"),
    ]
    _pending(oh, 2)
    res = oh.json("review", "accept", "--all", "--json")
    assert sorted(r["outcome"] for r in res["results"]) == ["accepted", "accepted"]
    assert [_finish(a)[0] for a in agents] == [0, 0]
    assert (oh.workspace / "a.txt").read_text() == "one\ntwo\n"
    assert (oh.workspace / "b.txt").read_text() == "bee\n"


def test_a_file_changed_meanwhile_is_not_overwritten(oh, review_backend):
    target = oh.workspace / "c.txt"
    target.write_text("base\n")
    agent = _agent(oh, "write", "c.txt", "--content", "agent's\n")
    [row] = _pending(oh, 1)
    target.write_text("the user's edit\n")
    p = oh("review", "accept", row["id"])
    assert p.returncode == 1 and "stale" in p.stdout and "changed after the proposal" in p.stdout
    assert target.read_text() == "the user's edit\n"
    rc, obs = _finish(agent)
    assert rc == 6 and obs["extras"]["error_id"] == "REJECTED" and "file changed" in obs["content"]


def test_no_decision_within_review_timeout_is_a_timeout(oh):
    oh.start("local", None, "--review", "--review-timeout", "1")
    agent = _agent(oh, "write", "t.txt", "--content", "x")
    rc, obs = _finish(agent)
    assert rc == 124 and obs["extras"]["error_id"] == "TIMEOUT" and "nothing was written" in obs["content"]
    assert not (oh.workspace / "t.txt").exists()
    assert oh.json("review", "--json")["proposals"] == []


def test_bad_ids_and_review_off_get_clear_errors(oh, review_backend):
    p = oh("review", "accept", "p99")
    assert p.returncode == 1 and "No pending proposal p99" in p.stderr and "oh review" in p.stderr
    p = oh("review", "show", "../etc")
    assert p.returncode == 2 and "needs an id like p3" in p.stderr
    p = oh("review", "accept")
    assert p.returncode == 2 and "--all" in p.stderr
    err = oh.json("review", "reject", "p7", "--json")
    assert err["type"] == "error" and err["error_id"] == "NO_PROPOSAL"
    # `view` is never a proposal: it answers at once.
    (oh.workspace / "v.txt").write_text("seen\n")
    assert "seen" in oh("edit", "v.txt", "--view", check=0).stdout


def test_review_off_says_how_to_turn_it_on(oh):
    oh.start("local")
    p = oh("review")
    assert p.returncode == 1 and "Review mode is off" in p.stderr and "--review" in p.stderr
    oh("write", "plain.txt", "--content", "direct", check=0)  # no review: written at once
    assert (oh.workspace / "plain.txt").read_text() == "direct"


def test_agent_controlled_text_is_shown_escaped(oh, review_backend):
    name = "evil\x1b[2Jname.txt"
    agent = _agent(oh, "write", name, "--content", "line\x1b]0;pwned\x07\n")
    [row] = _pending(oh, 1)
    table = oh("review", check=0).stdout
    assert "\x1b" not in table and "evil\\x1b[2Jname.txt" in table
    shown = oh("review", "show", row["id"], check=0).stdout
    assert "\x1b" not in shown and "\x07" not in shown and "+line\\x1b]0;pwned\\x07" in shown
    oh("review", "reject", row["id"], check=0)
    assert _finish(agent)[0] == 6


def test_live_view_shows_what_awaits_review(oh):
    """`oh start --review` in the foreground (plain lines, no TTY): the proposal, then the decision."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "local", "--review"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    agent = None
    try:
        assert "listening on" in proc.stdout.readline()
        agent = _agent(oh, "write", "live.txt", "--content", "x\n")
        lines: list[str] = []
        while not any("awaiting review" in ln for ln in lines):
            line = proc.stdout.readline()
            assert line, f"the view ended early: {lines}"
            lines.append(line)
        opened = next(ln for ln in lines if "awaiting review" in ln)
        assert "proposes write" in opened and "live.txt" in opened and "oh review show p1" in opened
        oh("review", "reject", "p1", "--reason", "not now", check=0)
        while not any("proposal p1" in ln for ln in lines):
            line = proc.stdout.readline()
            assert line, f"the view ended early: {lines}"
            lines.append(line)
        assert "rejected" in next(ln for ln in lines if "proposal p1" in ln)
        assert _finish(agent)[0] == 6
    finally:
        if agent is not None and agent.poll() is None:
            agent.kill()
        proc.terminate()
        proc.communicate(timeout=20)


def test_live_state_marks_rows_awaiting_review():
    from oh.ui.live import LiveState

    st = LiveState(backend={"runtime": "local"})
    st.apply(
        {
            "type": "event",
            "event": "action_started",
            "action_id": 4,
            "agent_id": "a1",
            "kind": "edit",
            "summary": "str_replace f.py",
        }
    )
    st.apply(
        {
            "type": "event",
            "event": "proposal_opened",
            "action_id": 4,
            "proposal_id": "p1",
            "agent_id": "a1",
            "kind": "edit",
            "path": "/w/f\x1b[2J.py",
        }
    )
    assert st.actions[4].outcome_text() == "awaiting review"
    assert "1 proposal awaiting review" in st.stats_line()
    [line] = st.apply(
        {
            "type": "event",
            "event": "proposal_closed",
            "action_id": 4,
            "proposal_id": "p1",
            "path": "/w/f\x1b[2J.py",
            "decision": "accepted",
        }
    )
    assert "\x1b" not in line and "accepted" in line
    assert st.actions[4].outcome_text() == "running…" and "awaiting" not in st.stats_line()


def test_diff_colours_on_a_terminal_and_escapes_what_the_agent_wrote():
    from oh.commands.review import _colour

    assert _colour("+added", True) == "\x1b[32m+added\x1b[0m"
    assert _colour("-removed", True) == "\x1b[31m-removed\x1b[0m"
    assert _colour("@@ -1 +1 @@", True).startswith("\x1b[36m")
    assert _colour("+x\x1b[2J\ty", True) == "\x1b[32m+x\\x1b[2J\ty\x1b[0m"  # tabs kept, escapes shown
    assert _colour("+x\x1b[2J", False) == "+x\\x1b[2J"


def test_refusals_stay_the_usual_tool_errors_and_a_hard_linked_file_can_be_rewritten(oh, review_backend):
    """The computation is the normal one: what it refuses is refused at once (no proposal); what it
    allows (a whole-file write replacing a hard-linked file, docs/security.md) becomes a proposal."""
    (oh.workspace / "adir").mkdir()
    p = oh("write", "adir", "--content", "x")
    assert p.returncode == 6 and "TOOL_ERROR" in p.stderr
    (oh.workspace / "g.txt").write_text("a\n")
    p = oh("edit", "g.txt", "--replace", "zzz", "y")
    assert p.returncode == 6 and "did not appear verbatim" in p.stderr
    p = oh("edit", "g.txt/inner.txt", "--create", "x")
    assert p.returncode == 6 and "not a directory" in p.stderr
    linked = oh.workspace / "linked.txt"
    linked.write_text("shared\n")
    (oh.workspace / "other-name.txt").hardlink_to(linked)
    agent = _agent(oh, "write", "linked.txt", "--content", "mine\n")
    [row] = _pending(oh, 1)
    oh("review", "accept", row["id"], check=0)
    assert _finish(agent)[0] == 0
    assert linked.read_text() == "mine\n" and (oh.workspace / "other-name.txt").read_text() == "shared\n"


def test_review_commands_run_in_process(here):
    """`run_review` / `run_show` / `run_accept` / `run_reject` write to the streams they are given and
    return the exit code, against a real backend in review mode (tests/cli/inprocess.py)."""
    from oh.commands.review import run_accept, run_reject, run_review, run_show

    here.start("local", None, "--review", "--review-timeout", "120")
    target = here.workspace / "f.py"
    target.write_text("a\n")
    agent = _agent(here, "write", "f.py", "--content", "b\n")
    [row] = _pending(here, 1)
    listed = invoke(run_review)
    assert listed.code == 0 and row["id"] in listed.out and "oh review show ID" in listed.out
    shown = invoke(run_show, proposal_id=row["id"])
    assert shown.code == 0 and "-a" in shown.out and "+b" in shown.out and "\x1b" not in shown.out
    assert invoke(run_accept).code == 2  # neither ID nor --all
    refused = invoke(run_reject, proposal_id="p99", json_=True)
    assert refused.code == 1 and json.loads(refused.out)["error_id"] == "NO_PROPOSAL" and refused.err == ""
    decided = invoke(run_accept, proposal_id=row["id"])
    assert decided.code == 0 and "accepted" in decided.out
    assert _finish(agent)[0] == 0 and target.read_text() == "b\n"
    assert "No pending proposals." in invoke(run_review).out
