"""Review after the fact (issue 29 item 3, docs/protocol.md §3.15.1): with `--review --history`, a command's file
changes are a change set in `oh review` the user keeps (accept) or reverts (reject) through the history's undo.
Real backend (`oh start`), a real agent running real bash, the real `oh review` commands (in-process) and a real
monitor connection (the live view's events)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from websockets.sync.client import connect

from cli.conftest import wait_for
from cli.inprocess import here, invoke  # noqa: F401 - `here` is a fixture
from oh.client.sync import SyncClient
from oh.commands.approvals import run_approvals, run_decide
from oh.commands.review import run_accept, run_reject, run_review, run_show
from oh.protocol import actions
from oh.ui.live import LiveState

WAIT = 60


def _start(oh) -> dict:
    return oh.start("local", None, "--history", "--review")


def _review() -> dict:
    res = invoke(run_review, json_=True)
    assert res.code == 0, res
    return json.loads(res.out)


def _run_approved(agent: SyncClient, command: str):
    """Run a command consent asks about (`--review` is consent level `changes`, and `rm` is risky): the user
    allows it with `oh approve`, then its changes land and become a change set."""
    done: list = []
    worker = threading.Thread(target=lambda: done.append(agent.run(command, timeout=WAIT)), daemon=True)
    worker.start()
    deadline = time.monotonic() + WAIT
    while not done and time.monotonic() < deadline:
        res = invoke(run_approvals, json_=True)
        pending = json.loads(res.out).get("approvals") or [] if res.code == 0 else []
        if pending:
            assert invoke(run_decide, approval_id=pending[0]["id"], allow=True).code == 0
            break
        time.sleep(0.1)
    worker.join(WAIT)
    assert done, "the command did not finish"
    return done[0]


def _changeset_events(mon, want: int) -> list[dict]:
    """The next ``want`` change-set events on a monitor connection (bounded: each recv waits at most WAIT s)."""
    got: list[dict] = []
    while len(got) < want:
        frame = json.loads(mon.recv(timeout=WAIT))
        if frame.get("type") == "event" and str(frame.get("event", "")).startswith("changeset_"):
            got.append(frame)
    return got


def test_a_commands_changes_are_kept_or_reverted_from_oh_review(here):
    oh = here
    ws: Path = oh.workspace
    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "gone.txt").write_text("bye\n")
    info = _start(oh)
    token = oh.session(info["instance_id"])["token"]
    with connect(info["url"] + "/v1/monitor", additional_headers={"Authorization": f"Bearer {token}"}) as mon:
        json.loads(mon.recv(timeout=WAIT))  # the snapshot
        with SyncClient.connect(info["url"], token, name="alice") as alice:
            ran = _run_approved(alice, "sed -i 's/one/ONE/' a.txt && touch new.txt && rm gone.txt")
            assert ran.exit_code == 0
            # The command ran: its changes are on disk while the change set waits.
            assert (ws / "a.txt").read_text() == "ONE\ntwo\n" and (ws / "new.txt").exists()
            assert not (ws / "gone.txt").exists()
            (opened,) = _changeset_events(mon, 1)
            [row] = _review()["changesets"]
            assert (row["agent"], row["files"], row["created"], row["deleted"]) == ("alice", 3, 1, 1)
            table = invoke(run_review)
            assert table.code == 0 and row["id"] in table.out and "COMMAND (already ran)" in table.out
            assert "the agent was told they are not final" in " ".join(table.out.split())
            cid = row["id"]
            # The agent is told its changes are held, not final: at the end of its output, and by id.
            md = ran.extras["metadata"]
            assert md["changeset"] == cid and md["exit_code"] == 0
            assert f"held for the user's review as change set {cid}" in md["suffix"]
            assert "3 files" in md["suffix"] and "do not assume they are final" in md["suffix"]
            # At a glance (issue 39 item 3): the sed's line, the deleted line, an empty new file; with the set's id.
            assert f"[oh: changed +1 \u22122 in 3 files (change set {cid});" in md["suffix"]
            assert opened["changeset"] == cid and opened["files"] == 3
            shown = invoke(run_show, proposal_id=cid)
            assert shown.code == 0 and "-one" in shown.out and "+ONE" in shown.out and "gone.txt" in shown.out
            assert invoke(run_reject, proposal_id=cid).code == 0
            # Reverted: every marker is back as it was before the command.
            assert (ws / "a.txt").read_text() == "one\ntwo\n" and (ws / "gone.txt").read_text() == "bye\n"
            assert not (ws / "new.txt").exists()
            (closed,) = _changeset_events(mon, 1)
            assert (closed["changeset"], closed["decision"], closed["by"]) == (cid, "reverted", "cli")
            assert _review()["changesets"] == []
            touched = alice.run("touch kept.txt", timeout=WAIT)
            assert touched.exit_code == 0
            (kept_row,) = _review()["changesets"]
            assert touched.extras["metadata"]["changeset"] == kept_row["id"] != cid
            assert "changes to 1 file are held" in touched.extras["metadata"]["suffix"]
            # A command that changed no file opens no change set: nothing said.
            quiet = alice.run("true", timeout=WAIT).extras["metadata"]
            assert "changeset" not in quiet and "held" not in (quiet.get("suffix") or "")
            # A live view that joins now still shows the pending change set (the snapshot replays it).
            with connect(info["url"] + "/v1/monitor", additional_headers={"Authorization": f"Bearer {token}"}) as late:
                joined = LiveState(backend={})
                joined.apply(json.loads(late.recv(timeout=WAIT)))
            assert joined.changesets == {kept_row["id"]: "touch kept.txt"}
            assert "1 change set awaiting review" in joined.stats_line()
            assert invoke(run_accept, proposal_id=kept_row["id"]).code == 0
            assert (ws / "kept.txt").exists() and _review()["changesets"] == []
            # Decided once: a second decision finds nothing pending (exit 1, said so).
            again = invoke(run_reject, proposal_id=kept_row["id"])
            assert again.code == 1 and "No pending change set" in again.out
            assert (ws / "kept.txt").exists()
            events = _changeset_events(mon, 2)
    # The live view's lines for these events.
    view = LiveState(backend={})
    said = view.apply(opened)
    assert cid in said[0] and "3 files" in said[0] and "awaits review" in said[0]
    assert "1 change set awaiting review" in view.stats_line()
    view.apply(closed)
    assert "change set" not in view.stats_line()
    assert [e["event"] for e in events] == ["changeset_opened", "changeset_closed"]
    # The timeline says which were kept and reverted.
    entries = {e["id"]: e for e in oh.json("history", "--json")["entries"]}
    assert entries[int(cid[1:])]["review"] == "reverted" and entries[int(kept_row["id"][1:])]["review"] == "kept"


def test_the_users_later_edit_is_merged_or_the_revert_changes_nothing(here):
    oh = here
    ws: Path = oh.workspace
    (ws / "f.txt").write_text("alpha\nbeta\ngamma\ndelta\n")
    info = _start(oh)
    token = oh.session(info["instance_id"])["token"]
    with SyncClient.connect(info["url"], token, name="alice") as alice:
        assert alice.run("sed -i 's/alpha/ALPHA/' f.txt", timeout=WAIT).exit_code == 0
        (first,) = _review()["changesets"]
        (ws / "f.txt").write_text("ALPHA\nbeta\ngamma\ndelta, the user's\n")  # the user's edit, after the command
        assert invoke(run_reject, proposal_id=first["id"]).code == 0
        assert (ws / "f.txt").read_text() == "alpha\nbeta\ngamma\ndelta, the user's\n"  # merged: both kept
        assert alice.run("sed -i 's/beta/BETA/' f.txt", timeout=WAIT).exit_code == 0
        (second,) = _review()["changesets"]
        (ws / "f.txt").write_text("alpha\nBETA, and the user\ngamma\ndelta, the user's\n")  # the same line
        res = invoke(run_reject, proposal_id=second["id"])
        assert res.code == 1 and "f.txt" in res.out and "Nothing was changed" in res.out
        assert (ws / "f.txt").read_text() == "alpha\nBETA, and the user\ngamma\ndelta, the user's\n"
        assert [c["id"] for c in _review()["changesets"]] == [second["id"]]  # still pending
        # The agent's own token may list, never decide.
        from oh import sessions
        from oh.launcher.control import control

        session = sessions.Session(**oh.session(info["instance_id"]))
        refused = control(session, {"type": "review", "op": "reject", "id": second["id"]}, token=token, timeout=10)
        assert refused["error_id"] == "FORBIDDEN"
        assert [c["id"] for c in _review()["changesets"]] == [second["id"]]


def test_without_history_a_changeset_id_says_how_to_turn_it_on(here):
    oh = here
    oh.start("local", None, "--review")
    res = invoke(run_reject, proposal_id="h3")
    assert res.code == 1 and "--history" in res.err


def test_a_background_jobs_changes_become_a_change_set_when_the_job_ends(here):
    oh = here
    (oh.workspace / "node_modules").mkdir()  # an ignored tree: the marker below is not a file history reverts
    info = _start(oh)
    token = oh.session(info["instance_id"])["token"]
    with SyncClient.connect(info["url"], token, name="alice") as alice:
        command = "while [ ! -e node_modules/go ]; do sleep 0.05; done; echo bg > bg.txt"
        obs = alice.send(actions.run(command, background=True))
        assert obs.exit_code == -1  # running: no change set while its entry is open
        # Told at once that what the job changes will be held (the change set's id is known already).
        held = obs.extras["metadata"]["changeset"]
        assert f"held for the user's review as change set {held} when it ends" in obs.extras["metadata"]["suffix"]
        assert _review()["changesets"] == []
        (oh.workspace / "node_modules" / "go").touch()
        wait_for(lambda: _review()["changesets"], timeout=WAIT, what="the job's change set")
    [row] = _review()["changesets"]
    assert row["agent"] == "alice" and row["files"] == 1 and row["id"] == held
    assert invoke(run_reject, proposal_id=row["id"]).code == 0
    assert not (oh.workspace / "bg.txt").exists() and (oh.workspace / "node_modules" / "go").exists()


def test_a_background_jobs_end_answer_names_its_change_set(here):
    """`job wait` (and a poll after the end) tells the agent what the job's changes became, while they are
    pending: `extras.changeset` and the held note in the content; once the user kept them, nothing."""
    oh = here
    info = _start(oh)
    token = oh.session(info["instance_id"])["token"]
    with SyncClient.connect(info["url"], token, name="alice") as alice:
        obs = alice.send(actions.run("sleep 0.3; echo one > one.txt; echo two > two.txt", background=True))
        held, jid = obs.extras["metadata"]["changeset"], obs.extras["metadata"]["job_id"]
        done = alice.send(actions.job("wait", jid, timeout=WAIT))
        assert done.extras["job"]["state"] == "SUCCEEDED", done
        assert done.extras.get("changeset") == held, done
        assert f"changes to 2 files are held for the user's review as change set {held}" in done.content
        again = alice.send(actions.job("poll", jid))
        assert again.extras.get("changeset") == held
        assert invoke(run_accept, proposal_id=held).code == 0
        kept = alice.send(actions.job("poll", jid))
        assert "changeset" not in kept.extras and "held for the user's review" not in kept.content
        # A job without review's change set (nothing changed) says nothing either.
        quiet = alice.send(actions.run("true", background=True))
        end = alice.send(actions.job("wait", quiet.extras["metadata"]["job_id"], timeout=WAIT))
        assert "changeset" not in end.extras and "held for" not in end.content
