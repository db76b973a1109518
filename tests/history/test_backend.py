"""History through a real backend (`oh start --history`): real agents (SyncClient connections with
their own names) running real bash, the real `oh history` / `oh diff` / `oh undo` processes, a
background job, two agents at once, and a backend killed mid-action."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest

from cli.conftest import wait_for
from cli.inprocess import here, invoke  # noqa: F401 - `here` is a fixture
from oh import sessions
from oh.client import history
from oh.client.sync import SyncClient
from oh.commands.history import run_diff, run_history, run_undo
from oh.launcher.control import control
from oh.protocol import actions

WAIT = 60  # bounded waits, generous: the machine is shared


def _start(oh, *signals) -> dict:
    """A backend with history. ``signals``: directories outside the workspace the test's commands wait on: the
    agent's sandbox sees them only as allowed roots (its /tmp is private)."""
    return oh.start("local", None, "--history", *(a for d in signals for a in ("--allow", str(d))))


def _agent(oh, info: dict, name: str) -> SyncClient:
    return SyncClient.connect(info["url"], oh.session(info["instance_id"])["token"], name=name)


def _entries(oh) -> list[dict]:
    """`oh history --json`, in-process (real backend, real control leg; no interpreter start per poll)."""
    res = invoke(run_history, json_=True)
    assert res.code == 0, res
    return json.loads(res.out)["entries"]


def _diff(entry: int) -> dict:
    res = invoke(run_diff, entry=entry, json_=True)
    assert res.code == 0, res
    return json.loads(res.out)["entry"]


def _undo(entry: int, code: int = 0) -> str:
    res = invoke(run_undo, entry=entry)
    assert res.code == code, res
    return res.out + res.err


def test_history_diff_and_undo_from_the_cli(here):
    oh = here
    (oh.workspace / "app.py").write_text("DEBUG = True\nPORT = 80\n")
    info = _start(oh)
    with _agent(oh, info, "alice") as alice:
        ran = alice.run("sed -i 's/True/False/' app.py && mkdir -p gen && echo x > gen/out.txt", timeout=WAIT)
        assert ran.exit_code == 0
        # History without review mode: the changes are final, nothing is said about holding them.
        assert "changeset" not in ran.extras["metadata"] and "held" not in ran.extras["metadata"]["suffix"]
        assert alice.write(str(oh.workspace / "notes.md"), "hello\n").kind == "write"
    [run, write] = _entries(oh)
    assert (run["agent"], run["kind"], run["files"], run["created"]) == ("alice", "run", 2, 1)
    assert (write["kind"], write["files"], write["status"]) == ("write", 1, "done")
    shown = oh("diff", str(run["id"]), check=0).stdout
    assert "-DEBUG = True" in shown and "+DEBUG = False" in shown and "gen/out.txt" in shown
    table = oh("history", check=0).stdout
    assert "alice" in table and "sed -i" in table
    assert oh.json("history", "--agent", "nobody", "--json")["entries"] == []
    # An agent undoes its own entry through the SDK (agent token), never another's.
    token = oh.session(info["instance_id"])["token"]
    with pytest.raises(history.HistoryRefused, match="alice's, not yours"):
        history.undo(info["url"], token, write["id"], agent="bob")
    assert history.undo(info["url"], token, write["id"], agent="alice")["ok"]
    assert not (oh.workspace / "notes.md").exists()
    mine = history.entries(info["url"], token, agent="alice")
    assert [(e["id"], e["kind"]) for e in mine] == [
        (run["id"], "run"),
        (write["id"], "write"),
        (write["id"] + 1, "undo"),
    ]
    oh("undo", str(run["id"]), check=0)
    assert (oh.workspace / "app.py").read_text() == "DEBUG = True\nPORT = 80\n"
    assert not (oh.workspace / "gen" / "out.txt").exists()
    undo = _entries(oh)[-1]
    assert undo["kind"] == "undo" and undo["undoes"] == [run["id"]]
    assert oh("undo", "99", check=1).stderr.count("No entry 99") == 1


def test_a_conflicting_undo_changes_nothing_and_says_which_file(here):
    oh = here
    (oh.workspace / "f.txt").write_text("a\nb\n")
    info = _start(oh)
    with _agent(oh, info, "alice") as alice:
        alice.run("sed -i 's/b/B/' f.txt && echo n > new.txt", timeout=WAIT)
    (oh.workspace / "f.txt").write_text("a\nB, then the user\n")
    entry = _entries(oh)[0]["id"]
    said = _undo(entry, 1)
    assert "f.txt" in said and "Nothing was changed" in said
    assert (oh.workspace / "new.txt").exists() and (oh.workspace / "f.txt").read_text() == "a\nB, then the user\n"


def test_two_agents_at_once_share_only_the_overlap(here, tmp_path):
    oh = here
    sig = tmp_path / "signals"  # outside the workspace: not a change of the workspace
    sig.mkdir()
    info = _start(oh, sig)
    alice, bob = _agent(oh, info, "alice"), _agent(oh, info, "bob")
    # Alice's command spins (never sleeps) while bob's runs: her sandbox is running when bob's file appears, so
    # oh cannot tell which of the two made it (issue 36: who ran is what oh sees, not which process wrote).
    long = f"echo a > a; while [ ! -e {sig}/bob-done ]; do :; done; echo a2 > a2"
    done: list = []
    t = threading.Thread(target=lambda: done.append(alice.run(long, timeout=WAIT)))
    t.start()
    try:
        wait_for(lambda: (oh.workspace / "a").exists(), timeout=WAIT, what="alice's first file")
        assert bob.run("echo b > b", timeout=WAIT).exit_code == 0
    finally:
        (sig / "bob-done").touch()
        t.join(WAIT)
    assert done and done[0].exit_code == 0
    alice.close()
    bob.close()
    by_agent = {e["agent"]: e for e in _entries(oh)}
    shown = {name: _diff(e["id"]) for name, e in by_agent.items()}
    a_changes = {c["path"]: c.get("ambiguous", []) for c in shown["alice"]["changes"]}
    b_changes = {c["path"]: c.get("ambiguous", []) for c in shown["bob"]["changes"]}
    assert a_changes == {"a": [], "b": [by_agent["bob"]["id"]], "a2": []}
    assert b_changes == {"b": [by_agent["alice"]["id"]]}
    # With the agent token (the SDK, oh.client.history): never an entry whose change may be another's.
    session = sessions.read(oh.session_file(info["instance_id"]))
    with pytest.raises(history.HistoryRefused, match="another action") as refused:
        history.undo(info["url"], session.token, by_agent["bob"]["id"], agent="bob")
    assert refused.value.error_id == "FORBIDDEN"
    unnamed = control(session, {"type": "history", "op": "undo", "entry": 1}, token=session.token, timeout=WAIT)
    assert unnamed["error_id"] == "FORBIDDEN"
    assert (oh.workspace / "b").exists()
    # The user (decider credential) may, but an ambiguous change is never reverted silently: it is named and kept
    # unless the user includes it.
    said = _undo(by_agent["bob"]["id"])
    assert "Kept 1 ambiguous change" in said and "--include-ambiguous" in said
    assert (oh.workspace / "b").exists()
    res = invoke(run_undo, entry=by_agent["bob"]["id"], include_ambiguous=True, json_=True)
    assert res.code == 0 and json.loads(res.out)["files"] == ["b"]
    assert not (oh.workspace / "b").exists()


def test_a_background_jobs_changes_are_its_actions(here, tmp_path):
    oh = here
    (tmp_path / "signals").mkdir()
    sig = tmp_path / "signals" / "go"
    info = _start(oh, sig.parent)
    with _agent(oh, info, "alice") as alice:
        command = f"echo started > s; while [ ! -e {sig} ]; do sleep 0.05; done; echo bg > bg.txt"
        obs = alice.send(actions.run(command, background=True), timeout=WAIT)
        assert obs.exit_code == -1  # running
        wait_for(lambda: _entries(oh) and _entries(oh)[0]["status"] == "running", timeout=WAIT, what="a running entry")
        sig.touch()
        wait_for(lambda: _entries(oh)[0]["status"] == "done", timeout=WAIT, what="the job's entry to end")
    [entry] = [e for e in _entries(oh) if e["agent"] == "alice"]
    files = {c["path"] for c in _diff(entry["id"])["changes"]}
    assert files == {"s", "bg.txt"}


def test_the_timeline_survives_a_killed_backend(here, tmp_path):
    oh = here
    (tmp_path / "signals").mkdir()
    sig = tmp_path / "signals" / "release"
    (oh.workspace / "keep.txt").write_text("v1\n")
    info = _start(oh, sig.parent)
    alice = _agent(oh, info, "alice")
    alice.run("echo v2 > keep.txt", timeout=WAIT)
    hang = threading.Thread(
        target=lambda: _quietly(
            lambda: alice.run(
                f"echo half > half.txt; timeout 60 bash -c 'until [ -e {sig} ]; do sleep 0.1; done'", timeout=WAIT
            )
        )
    )
    hang.start()
    try:
        wait_for(lambda: (oh.workspace / "half.txt").exists(), timeout=WAIT, what="the action mid-way")
        os.kill(info["pid"], signal.SIGKILL)
        wait_for(lambda: not _alive(info["pid"]), timeout=WAIT, what="the backend to die")
    finally:
        sig.touch()  # the orphaned command ends by itself
        hang.join(WAIT)
        alice.close()
    _start(oh)
    entries = _entries(oh)
    assert [(e["status"], e["files"]) for e in entries[:1]] == [("done", 1)]
    # What the action wrote before the kill is recorded when history's thread drained it before the kill (it
    # drains as soon as inotify has news): half.txt or nothing, never more.
    assert entries[1]["status"] == "interrupted" and entries[1]["files"] in (0, 1)
    with _agent(oh, oh.started[-1], "alice") as again:
        again.run("echo v3 > keep.txt", timeout=WAIT)
    last = _entries(oh)[-1]
    assert (last["status"], last["files"], last["id"]) == ("done", 1, entries[1]["id"] + 1)
    assert "keep.txt" in _undo(entries[0]["id"], 1)  # v3 since: a conflict, named
    _undo(last["id"])
    _undo(entries[0]["id"])  # the content from before the crash is still there
    assert (oh.workspace / "keep.txt").read_text() == "v1\n"


def _quietly(fn):
    try:
        fn()
    except Exception:  # noqa: BLE001 - the backend is killed under this call on purpose
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
