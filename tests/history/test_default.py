"""History on by default (issue 39 item 1): real `oh start` (no --history), its line saying how to turn it off, and
an action that meets the first snapshot still settling (held at a FIFO, tests only) stays undoable."""

from __future__ import annotations

import json
import os
import subprocess

from cli.conftest import oh, wait_for  # noqa: F401 - `oh` is a fixture

WAIT = 60


def _git(ws, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True)


def _repo(ws) -> None:
    (ws / "sub").mkdir()
    (ws / "a.txt").write_text("one\n")
    (ws / "sub" / "b.txt").write_text("one two\n")
    (ws / "gone.txt").write_text("one\n")
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    (ws / "u.txt").write_text("one untracked\n")  # read by phase 1 (git lists it, not clean)


def _history_status(oh) -> dict:
    [row] = oh.json("status", "--json")["sessions"]
    return row["history"]


def test_an_action_right_after_start_is_undoable_while_the_snapshot_settles(oh, tmp_path):
    ws = oh.workspace
    _repo(ws)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    del oh.env["OH_HISTORY"]  # the default, as a user has it
    oh.env["OH_TEST_HISTORY_SETTLE_GATE"] = str(gate)
    p = oh("start", "--detach", "--runtime", "local", "--no-open", "--workspace", str(ws), timeout=40, check=0)
    assert "history: on (`oh config set history false`" in p.stdout
    hist = _history_status(oh)
    assert hist["on"] is True and hist["snapshot"] == "settling"
    try:
        oh("run", "--", "sed -i s/one/ONE/ a.txt sub/b.txt u.txt && rm gone.txt", check=0)
    finally:
        fd = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)  # the backend holds it open: never blocks
        os.write(fd, b"x")
        os.close(fd)
    assert (ws / "a.txt").read_text() == "ONE\n"

    wait_for(lambda: _history_status(oh)["snapshot"] == "done", timeout=WAIT, what="the first snapshot to settle")
    entries = json.loads(oh("history", "--json", check=0).stdout)["entries"]
    [run] = [e for e in entries if e["kind"] == "run"]
    oh("undo", str(run["id"]), check=0)
    assert (ws / "a.txt").read_text() == "one\n"
    assert (ws / "sub" / "b.txt").read_text() == "one two\n"
    assert (ws / "u.txt").read_text() == "one untracked\n"
    assert (ws / "gone.txt").read_text() == "one\n"


def test_no_history_turns_it_off_and_says_how_to_turn_it_on(oh):
    del oh.env["OH_HISTORY"]
    p = oh("start", "--detach", "--runtime", "local", "--no-open", "--workspace", str(oh.workspace), "--no-history")
    assert p.returncode == 0, p.stderr
    assert "history: off (`oh config set history true` to turn it on)" in p.stdout
    p = oh("history")
    assert p.returncode != 0 and "oh config set history true" in p.stdout + p.stderr


def test_the_inotify_watch_limit_is_said_and_every_action_rescans(oh):
    # The kernel's limit is per user: lowering /proc/sys/fs/inotify/max_user_watches here would starve every other
    # process of this user, so the watcher meets a limit of 2 set for tests (the same path as the kernel's ENOSPC).
    ws = oh.workspace
    for d in ("d1", "d2", "d3", "d4"):
        (ws / d).mkdir()
        (ws / d / "f.txt").write_text(f"{d}\n")
    del oh.env["OH_HISTORY"]
    oh.env["OH_TEST_HISTORY_MAX_WATCHES"] = "2"
    oh("start", "--detach", "--runtime", "local", "--no-open", "--workspace", str(ws), timeout=40, check=0)
    wait_for(lambda: _history_status(oh)["snapshot"] == "done", timeout=WAIT, what="the first snapshot to settle")
    note = _history_status(oh)["note"]
    assert "inotify watch limit reached" in note and "every action rescans" in note
    text = oh("status", check=0).stdout
    assert text.count("inotify watch limit reached") == 1
    oh("run", "--", "echo changed > d1/f.txt; echo changed > d4/f.txt; echo new > d3/g.txt", check=0)
    entries = json.loads(oh("history", "--json", check=0).stdout)["entries"]
    [run] = [e for e in entries if e["kind"] == "run"]
    assert run["files"] == 3 and run["created"] == 1
    oh("undo", str(run["id"]), check=0)
    assert (ws / "d4" / "f.txt").read_text() == "d4\n" and not (ws / "d3" / "g.txt").exists()
