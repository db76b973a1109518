"""Git-branch mode with the local runtime (docs/protocol.md §3.12): real git repositories in tmp dirs,
real `oh start` / `oh write` / `oh run` / `oh status` processes."""

from __future__ import annotations

import json
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from .conftest import wait_for

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed for branch mode")


def git(ws: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main", *args],
        cwd=ws,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.strip()


def repo(ws: Path) -> None:
    git(ws, "init", "-q")
    (ws / "README").write_text("hello\n")
    git(ws, "add", "README")
    git(ws, "commit", "-q", "-m", "first")


def branches(ws: Path) -> set[str]:
    return set(git(ws, "for-each-ref", "--format=%(refname:short)", "refs/heads").split())


def only_row(oh, slow: bool = False) -> dict:
    (row,) = oh.json("status", "--json", env={"OH_NO_FASTPATH": "1"} if slow else None)["sessions"]
    return row


def agent(oh, info: dict, name: str = "coder"):
    from oh.client import SyncClient

    return SyncClient.connect(info["url"], oh.session(info["instance_id"])["token"], name=name)


def test_branch_is_created_before_the_first_write_and_not_before_a_read(oh) -> None:
    ws = oh.workspace
    repo(ws)
    oh.start("local", None, "--branch")
    oh("read", "README", check=0)
    assert git(ws, "branch", "--show-current") == "main"  # a read changes nothing: no branch yet
    assert only_row(oh)["branch"] == {"state": "pending", "name": None}
    assert "branch     pending: a new oh/<date>-<time>-<agent> before the first change" in oh("status", check=0).stdout

    oh("write", "notes.txt", "--content", "hi\n", check=0)
    current = git(ws, "branch", "--show-current")
    assert re.fullmatch(r"oh/\d{8}-\d{4}-oh-cli", current), current  # `oh write` connects as agent "oh-cli"
    assert (ws / "notes.txt").read_text() == "hi\n"
    # The write sits on the new branch, uncommitted: what VS Code's Source Control view lists.
    assert git(ws, "status", "--porcelain") == "?? notes.txt"

    oh("run", "--", "echo x > second.txt", check=0)  # later changes stay there: no second branch
    assert git(ws, "branch", "--show-current") == current
    assert [b for b in branches(ws) if b.startswith("oh/")] == [current]

    expected = {"state": "on", "name": current, "created": True, "previous": "main"}
    assert only_row(oh)["branch"] == expected
    assert only_row(oh, slow=True)["branch"] == expected  # the typer command shows the same
    line = f"branch     {current} (new, from main)"
    assert line in oh("status", check=0).stdout
    assert line in oh("status", check=0, env={"OH_NO_FASTPATH": "1"}).stdout


def test_the_first_change_observation_notes_the_switch(oh) -> None:
    ws = oh.workspace
    repo(ws)
    info = oh.start("local", None, "--branch")
    with agent(oh, info, "coder") as c:
        first = c.run("echo one > one.txt")
        branch = git(ws, "branch", "--show-current")
        assert re.fullmatch(r"oh/\d{8}-\d{4}-coder", branch), branch
        prefix = first.extras["metadata"]["prefix"]
        assert f"[oh] Branch mode: switched to the new git branch '{branch}' (from 'main')." in prefix
        second = c.write("two.txt", "2\n")
        assert "Branch mode" not in second.content  # only the first change carries the note


def test_existing_branch_names_are_never_clobbered(oh) -> None:
    ws = oh.workspace
    repo(ws)
    # Whatever minute the write lands in (this one or the next), its automatic name is taken.
    now = datetime.now(timezone.utc)
    taken = {f"oh/{t:%Y%m%d-%H%M}-oh-cli" for t in (now, now + timedelta(minutes=1))}
    for name in taken:
        git(ws, "branch", name)
    tips = {name: git(ws, "rev-parse", name) for name in taken}
    oh.start("local", None, "--branch")
    oh("write", "a.txt", "--content", "a", check=0)
    current = git(ws, "branch", "--show-current")
    assert current not in taken and current.endswith("-2") and current[:-2] in taken, current
    assert {name: git(ws, "rev-parse", name) for name in taken} == tips  # untouched


def test_a_named_existing_branch_is_used_not_recreated(oh) -> None:
    ws = oh.workspace
    repo(ws)
    git(ws, "checkout", "-q", "-b", "feature/x")
    (ws / "f.txt").write_text("on feature\n")
    git(ws, "add", "f.txt")
    git(ws, "commit", "-q", "-m", "feature work")
    git(ws, "checkout", "-q", "main")
    tip = git(ws, "rev-parse", "feature/x")
    info = oh.start("local", None, "--branch-name", "feature/x")
    with agent(oh, info) as c:
        obs = c.write("g.txt", "g\n")
    assert git(ws, "branch", "--show-current") == "feature/x"
    assert git(ws, "rev-parse", "feature/x") == tip and (ws / "f.txt").exists()
    assert "[oh] Branch mode: switched to the git branch 'feature/x' (from 'main')." in obs.content


def test_an_invalid_branch_name_is_refused_at_start(oh) -> None:
    repo(oh.workspace)
    proc = oh("start", "--detach", "--runtime", "local", "--branch-name", "bad..name")
    assert proc.returncode == 2 and "branch_name" in proc.stderr and "git branch name" in proc.stderr


@pytest.fixture
def dirty(oh) -> Path:
    ws = oh.workspace
    repo(ws)
    (ws / "README").write_text("changed by the user\n")
    return ws


def test_a_dirty_tree_without_a_choice_is_refused_naming_the_flag(oh, dirty) -> None:
    proc = oh("start", "--detach", "--runtime", "local", "--branch", "--workspace", str(dirty))
    assert proc.returncode == 2, proc.stderr
    assert (
        "uncommitted changes" in proc.stderr and "--on-dirty stash" in proc.stderr and "--on-dirty carry" in proc.stderr
    )
    assert not (oh.home / "sessions").is_dir() or not list((oh.home / "sessions").glob("*.json"))  # nothing started
    assert git(dirty, "branch", "--show-current") == "main"


def test_on_dirty_stash_stashes_then_switches(oh, dirty) -> None:
    info = oh.start("local", None, "--branch", "--on-dirty", "stash")
    with agent(oh, info) as c:
        obs = c.write("new.txt", "n\n")
    assert git(dirty, "branch", "--show-current").startswith("oh/")
    assert (dirty / "README").read_text() == "hello\n"  # the user's change is in the stash, not lost
    assert "before switching to oh/" in git(dirty, "stash", "list")
    assert "uncommitted changes stashed" in obs.content


def test_on_dirty_carry_takes_the_changes_along(oh, dirty) -> None:
    info = oh.start("local", None, "--branch", "--on-dirty", "carry")
    with agent(oh, info) as c:
        obs = c.write("new.txt", "n\n")
    assert git(dirty, "branch", "--show-current").startswith("oh/")
    assert (dirty / "README").read_text() == "changed by the user\n"
    assert git(dirty, "stash", "list") == ""
    assert "uncommitted changes carried over" in obs.content


def test_on_dirty_abort_refuses_at_start_and_at_the_first_change(oh, dirty) -> None:
    proc = oh("start", "--detach", "--runtime", "local", "--branch", "--on-dirty", "abort")
    assert proc.returncode == 2 and "uncommitted changes" in proc.stderr
    git(dirty, "checkout", "--", "README")  # clean: it starts; dirty again before the first change
    info = oh.start("local", None, "--branch", "--on-dirty", "abort")
    (dirty / "README").write_text("changed again\n")
    with agent(oh, info) as c:
        obs = c.write("new.txt", "n\n")
        assert obs.error_id == "BRANCH_FAILED" and "--on-dirty stash" in obs.content
        assert not (dirty / "new.txt").exists()  # the action was not executed on the wrong branch
        assert git(dirty, "branch", "--show-current") == "main"
        assert "last attempt failed" in oh("status", check=0).stdout
        git(dirty, "checkout", "--", "README")  # the user cleans up: the next change goes ahead
        assert c.write("new.txt", "n\n").kind == "write"
    assert git(dirty, "branch", "--show-current").startswith("oh/")


def test_a_non_git_folder_is_refused_without_git_init(oh) -> None:
    proc = oh("start", "--detach", "--runtime", "local", "--branch")
    assert proc.returncode == 2 and "not a git repository" in proc.stderr and "--git-init" in proc.stderr
    assert not (oh.workspace / ".git").exists()


def test_git_init_initialises_the_folder_at_the_first_change(oh) -> None:
    (oh.workspace / "existing.txt").write_text("x\n")
    info = oh.start("local", None, "--branch", "--git-init")
    assert not (oh.workspace / ".git").exists()  # nothing happens before a change
    with agent(oh, info) as c:
        obs = c.write("new.txt", "n\n")
    assert (oh.workspace / ".git").is_dir()
    branch = git(oh.workspace, "branch", "--show-current")
    assert branch.startswith("oh/")
    assert f"switched to the new git branch '{branch}'; after `git init`." in obs.content


def test_branch_mode_is_off_by_default_and_from_the_setting(oh) -> None:
    ws = oh.workspace
    repo(ws)
    oh.start("local")
    oh("write", "a.txt", "--content", "a", check=0)
    assert git(ws, "branch", "--show-current") == "main"
    assert "branch" not in only_row(oh)
    oh("stop", check=0)
    proc = oh(
        "start",
        "--detach",
        "--json",
        "--runtime",
        "local",
        env={"OH_BRANCH": "true", "OH_ON_DIRTY": "carry"},
        timeout=40,
    )
    assert proc.returncode == 0, proc.stderr  # a.txt is untracked: the on_dirty setting answers
    oh.started.append(json.loads(proc.stdout))
    oh("write", "b.txt", "--content", "b", check=0)
    assert git(ws, "branch", "--show-current").startswith("oh/")
    assert (ws / "a.txt").exists()


@pytest.fixture
def attached(oh):
    """`oh start --runtime vscode --branch` served by the headless editor (`oh attach`): the backend's
    `branch` frame crosses the real editor leg (the VS Code side: tests/e2e/test_vscode_branch.py)."""
    procs = []

    def start(*flags: str) -> dict:
        info = oh.start("vscode", None, *flags)
        proc = subprocess.Popen(
            [sys.executable, "-m", "oh", "attach"],
            cwd=oh.workspace,
            env=oh.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        procs.append(proc)
        wait_for(lambda: only_row(oh).get("editors"), timeout=30, what="the headless editor to register")
        return info

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_vscode_runtime_asks_the_editor_to_switch_before_the_first_change(oh, attached) -> None:
    ws = oh.workspace
    repo(ws)
    info = attached("--branch-name", "agent/work")
    with agent(oh, info) as c:
        assert c.read("README").content.endswith("hello\n")
        assert git(ws, "branch", "--show-current") == "main"
        obs = c.edit("README", "str_replace", old_str="hello", new_str="hello agent")
        assert "[oh] Branch mode: switched to the new git branch 'agent/work' (from 'main')." in obs.content
    assert git(ws, "branch", "--show-current") == "agent/work"
    assert git(ws, "status", "--porcelain") == "M README"
    assert only_row(oh)["branch"] == {"state": "on", "name": "agent/work", "created": True, "previous": "main"}


def test_vscode_runtime_dirty_tree_without_a_choice_is_a_typed_error_not_a_wrong_branch_write(oh, attached) -> None:
    ws = oh.workspace
    repo(ws)
    info = attached("--branch")  # started without a TTY: the editor is the one to ask; this one cannot
    (ws / "README").write_text("user edit\n")
    with agent(oh, info) as c:
        obs = c.write("agent.txt", "x\n")
    assert obs.error_id == "BRANCH_FAILED" and "--on-dirty stash" in obs.content
    assert not (ws / "agent.txt").exists() and git(ws, "branch", "--show-current") == "main"


def test_many_agents_changing_at_once_get_one_branch(oh) -> None:
    from concurrent.futures import ThreadPoolExecutor

    ws = oh.workspace
    repo(ws)
    info = oh.start("local", None, "--branch")
    clients = [agent(oh, info, f"agent{i}") for i in range(6)]
    try:
        with ThreadPoolExecutor(6) as pool:
            results = list(pool.map(lambda ic: ic[1].write(f"f{ic[0]}.txt", "x\n"), enumerate(clients)))
    finally:
        for c in clients:
            c.close()
    assert all(r.kind == "write" for r in results)
    made = [b for b in branches(ws) if b.startswith("oh/")]
    assert len(made) == 1 and git(ws, "branch", "--show-current") == made[0]
    assert sum("[oh] Branch mode" in r.content for r in results) == 1  # exactly one observation says so


def test_live_view_shows_the_branch(oh) -> None:
    from rich.console import Console

    from oh.ui.live import LiveState

    st = LiveState(backend={"instance_id": "abc", "runtime": "local", "workspace": "/w"})
    lines = st.apply(
        {
            "type": "snapshot",
            "runtime": "local",
            "workspace": "/w",
            "editors": [],
            "agents": [],
            "stats": {},
            "branch": {"state": "pending", "name": None},
        }
    )
    assert "branch mode: pending: a new oh/<date>-<time>-<agent> before the first change" in lines
    lines = st.apply(
        {
            "type": "event",
            "event": "branch",
            "time": "2026-11-25T08:00:00+00:00",
            "state": "on",
            "name": "oh/x\x1b[31m",
            "created": True,
            "previous": "main",
        }
    )
    assert lines == ["branch mode: oh/x\\x1b[31m (new, from main)"]  # escaped: the name is agent-influenced
    console = Console(width=160, record=True, color_system=None)
    console.print(st.render())
    assert "branch oh/x\\x1b[31m (new, from main)" in console.export_text()


def test_foreground_live_view_reports_the_switch(oh) -> None:
    ws = oh.workspace
    repo(ws)
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "local", "--branch-name", "feat/live"],
        cwd=ws,
        env=oh.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

    def wait_line(needle: str) -> str:
        deadline = time.monotonic() + 30  # bounded: a missing line fails the test, never hangs it
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            if needle in line:
                return line
        raise AssertionError(f"the live view never printed {needle!r}")

    try:
        assert "pending: feat/live before the first change" in wait_line("branch mode:")
        oh("write", "x.txt", "--content", "x", check=0)
        assert "branch mode: feat/live (new, from main)" in wait_line("branch mode:")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


@pytest.mark.parametrize(("answer", "expect"), [("2", "carry"), ("5", "cancel")])
def test_terminal_prompt_offers_the_choices_before_the_backend_starts(oh, dirty, answer, expect) -> None:
    import pexpect

    child = pexpect.spawn(
        sys.executable,
        ["-m", "oh", "start", "--runtime", "local", "--branch"],
        cwd=str(dirty),
        env=oh.env,
        dimensions=(40, 160),
        encoding="utf-8",
        timeout=30,
    )
    try:
        child.expect("has uncommitted changes")
        for line in (
            "1\\) Stash the changes",
            "2\\) Carry the changes",
            "3\\) Use review mode",
            "4\\) Don't use a branch",
            "5\\) Cancel",
        ):
            child.expect(line)
        child.expect("choose 1-5: ")
        assert not (oh.home / "sessions").is_dir() or not list(
            (oh.home / "sessions").glob("*.json")
        )  # nothing started yet
        child.sendline(answer)
        if expect == "cancel":
            child.expect("cancelled: the backend was not started")
            child.expect(pexpect.EOF)
            child.close()
            assert child.exitstatus == 1
            return
        wait_for(lambda: list((oh.home / "sessions").glob("*.json")), 20, what="the backend's session file")
        oh("write", "agent.txt", "--content", "x", check=0)
        assert git(dirty, "branch", "--show-current").startswith("oh/")
        assert (dirty / "README").read_text() == "changed by the user\n"  # carried along, not stashed
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.kill(signal.SIGKILL)


def test_an_editor_without_the_branch_capability_gets_nothing_and_the_agent_a_typed_error(oh) -> None:
    from .fake_editor import FakeEditor

    repo(oh.workspace)
    info = oh.start("vscode", None, "--branch")
    with FakeEditor(oh.session_file(info["instance_id"]), oh.workspace) as editor, agent(oh, info) as c:
        obs = c.write("a.txt", "a\n")
        assert obs.error_id == "BRANCH_FAILED" and "'branch' capability" in obs.content
        assert editor.actions == []  # neither a branch frame nor the write reached it
        c.read("README")
        assert [f["action"] for f in editor.actions] == ["read"]  # reads still go through


def test_an_editor_failure_during_the_switch_keeps_its_id_and_says_the_action_did_not_run(oh) -> None:
    from oh.protocol.events import error_observation

    from .fake_editor import FakeEditor

    repo(oh.workspace)
    info = oh.start("vscode", None, "--branch")

    def answer(frame: dict) -> dict:
        if frame["action"] == "branch":
            return error_observation(frame["id"], "UNTRUSTED_WORKSPACE", "not trusted")
        raise AssertionError(f"the {frame['action']} must not be forwarded after a failed switch")

    with (
        FakeEditor(
            oh.session_file(info["instance_id"]),
            oh.workspace,
            answer=answer,
            capabilities=["run", "read", "write", "edit", "branch"],
        ) as editor,
        agent(oh, info) as c,
    ):
        obs = c.write("a.txt", "a\n")
        assert obs.error_id == "UNTRUSTED_WORKSPACE"
        assert obs.content.startswith("Branch mode: the branch could not be prepared, so the action was not executed.")
        assert [f["action"] for f in editor.actions] == ["branch"]
        frame = editor.actions[0]
        assert frame["args"]["workspace"] == str(oh.workspace.resolve()) and frame["args"]["named"] is False
        assert frame["agent"]["name"] == "coder"
    assert not (oh.workspace / "a.txt").exists()


def test_doctor_checks_git_and_fails_only_when_branch_mode_needs_it(oh, tmp_path) -> None:
    found = {c["check"]: c for c in oh.json("doctor", "--json")["checks"]}
    assert found["git"]["status"] == "ok" and "git" in found["git"]["detail"]
    no_git = {"PATH": str(tmp_path / "empty-bin")}  # python is started by path; git is nowhere on PATH
    (tmp_path / "empty-bin").mkdir()
    found = {c["check"]: c for c in oh.json("doctor", "--json", env=no_git)["checks"]}
    assert found["git"]["status"] == "ok" and "only needed for branch mode" in found["git"]["detail"]
    found = {c["check"]: c for c in oh.json("doctor", "--json", env={**no_git, "OH_BRANCH": "true"})["checks"]}
    assert found["git"]["status"] == "fail" and "oh config set branch false" in found["git"]["fix"]
    proc = oh("start", "--detach", "--runtime", "local", "--branch", env=no_git)
    assert proc.returncode == 1 and "git is not installed" in proc.stderr


def _accept_the_proposal(oh, info: dict, path: str) -> object:
    """An agent writes ``path`` in review mode; the user accepts it with `oh review`; the observation."""
    result: dict = {}
    with agent(oh, info) as c:
        worker = threading.Thread(target=lambda: result.setdefault("obs", c.write(path, "agent\n")))
        worker.start()
        pending = wait_for(lambda: oh.json("review", "--json").get("proposals"), 20, what="the proposal")
        assert oh("review", "accept", pending[0]["id"], check=0).returncode == 0
        worker.join(30)
    return result["obs"]


def test_on_dirty_review_falls_back_to_review_mode_without_a_branch(oh, dirty) -> None:
    proc = oh("start", "--detach", "--json", "--runtime", "local", "--branch", "--on-dirty", "review")
    assert proc.returncode == 0, proc.stderr
    assert "review mode instead" in proc.stderr
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    oh.started.append(info)  # stopped by the fixture
    row = only_row(oh)
    assert row.get("review") is True and "branch" not in row
    obs = _accept_the_proposal(oh, info, "agent.txt")
    assert obs.kind == "write" and "accepted" in obs.content
    assert git(dirty, "branch", "--show-current") == "main"  # no branch: the user reviewed the change instead
    assert (dirty / "agent.txt").read_text() == "agent\n" and (dirty / "README").read_text() == "changed by the user\n"


def test_on_not_git_review_from_the_setting(oh) -> None:
    proc = oh("start", "--detach", "--json", "--runtime", "local", "--branch", env={"OH_ON_NOT_GIT": "review"})
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    oh.started.append(info)
    assert only_row(oh).get("review") is True
    assert _accept_the_proposal(oh, info, "n.txt").kind == "write"
    assert not (oh.workspace / ".git").exists()  # nothing initialised: review mode, not a repository


def test_branch_mode_is_visible_in_text_output(oh) -> None:
    """Issue 18 item 12: `oh start --detach` says branch mode is on; the `oh write` / `oh run` that switched
    branches says so on stderr (a write prints nothing of its observation's content)."""
    ws = oh.workspace
    repo(ws)
    p = oh("start", "--detach", "--runtime", "local", "--branch", timeout=40)
    assert p.returncode == 0, p
    oh.started.append({"pid": int(p.stdout.split("pid ")[1].split(")")[0])})
    assert (
        "branch mode: before the agent's first change (write, edit, command) the workspace switches to a new "
        "git branch oh/<date>-<time>-<agent>"
    ) in p.stdout
    p = oh("write", "--append", "notes.txt", "--content", "hi\n", check=0)
    branch = git(ws, "branch", "--show-current")
    assert p.stdout == "appended 3 bytes to " + str(ws / "notes.txt") + "\n"
    assert f"oh: branch mode: switched to the new git branch '{branch}' (from 'main')." in p.stderr, p
    p = oh("write", "more.txt", "--content", "x", check=0)
    assert "branch mode" not in p.stderr  # once
    oh("stop", check=0)
    repo_two = oh.tmp / "two"
    repo_two.mkdir()
    repo(repo_two)
    p = oh("start", "--detach", "--runtime", "local", "--branch-name", "feature", "-C", str(repo_two), timeout=40)
    oh.started.append({"pid": int(p.stdout.split("pid ")[1].split(")")[0])})
    assert "switches to the git branch 'feature'" in p.stdout
    p = oh("run", "--", "echo hi", cwd=repo_two, check=0)
    assert (
        p.stdout == "hi\n" and "oh: branch mode: switched to the new git branch 'feature' (from 'main')." in p.stderr
    ), p
