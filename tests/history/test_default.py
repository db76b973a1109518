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


def test_a_run_that_changed_files_says_plus_minus_in_k_files(oh):
    # Issue 39 item 3: `sed -i` over two files (3 lines), a new file (2), a deleted one (3), a binary one (a file,
    # no lines): +5 −6 in 5 files, said by `oh run` after the output, to the agent (the run's suffix,
    # extras.changed), and on the live view's line.
    ws = oh.workspace
    (ws / "a.txt").write_text("one\ntwo\none\n")
    (ws / "b.txt").write_text("one\n")
    (ws / "del.txt").write_text("d1\nd2\nd3\n")
    (ws / "bin.dat").write_bytes(b"\0\1\2\3")
    oh.start("local", None, "--history")
    command = "sed -i s/one/ONE/ a.txt b.txt && printf 'x\\ny\\n' > new.txt && rm del.txt && printf '\\0\\1' >> bin.dat"
    p = oh("run", "--", command, check=0)
    assert "changed +5 \u22126 in 5 files; `oh undo 1` reverts" in p.stderr, p.stderr
    obs = json.loads(oh("run", "--json", "--", "echo three >> b.txt", check=0).stdout)
    assert obs["extras"]["changed"] == {"files": 1, "added": 1, "removed": 0, "entry": 2}
    assert "[oh: changed +1 \u22120 in 1 file; `oh undo 2` reverts]" in obs["extras"]["metadata"]["suffix"]
    quiet = json.loads(oh("run", "--json", "--", "true", check=0).stdout)
    assert "changed" not in quiet["extras"] and "oh: changed" not in (quiet["extras"]["metadata"].get("suffix") or "")

    from oh.ui.live import LiveState

    view = LiveState(backend={})
    frame = {"action_id": "x", "agent_id": "a", "kind": "run", "summary": "sed", "outcome": "ok", "exit_code": 0}
    [line] = view._on_action_finished({**frame, "duration_ms": 5, "changed": obs["extras"]["changed"]})
    assert line.endswith(", +1 \u22120 in 1 file")
