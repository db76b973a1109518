"""Issue 18 (C7-C17) through real `oh` processes: what a new user saw at 80×24 (a real pty read through
pyte), plain output without a TTY, exit statuses of `oh` itself, signals. In-process parts:
test_inprocess_newuser.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from oh.client.sync import SyncClient

from .terminal import Term, ctrl_c, read_until

pytestmark = pytest.mark.slow


def _client(info: dict, oh, name: str) -> SyncClient:
    return SyncClient.connect(info["url"], oh.session(info["instance_id"])["token"], name=name)


def _row(text: str, needle: str) -> str:
    found = [line for line in text.splitlines() if needle in line]
    assert found, f"no row with {needle!r}:\n{text}"
    return found[-1]


# C7 (hard and soft timeouts) and C14 (`oh run --wait` rows)
def test_timeouts_and_follow_ups_in_the_rich_view_at_80x24_and_in_oh_logs(oh):
    t = Term(oh, "--runtime", "local", cols=80, rows=24)
    try:
        info = t.session()
        t.see("no actions yet")
        p = oh("run", "--timeout", "1", "--", "sleep 30")
        assert p.returncode == 124 and "timed out after 1 second and was killed" in p.stderr, p
        t.see("timed out, killed")
        row = _row(t.text(), "sleep 30")
        assert "timed out, killed" in row and " 124 " in row, row
        with _client(info, oh, "agent") as c:
            first = c.run("sleep 2; echo done", timeout=1)  # soft: the command goes on
            assert first.exit_code == -1
            t.see("timed out, running")
            later = c.run("")  # the follow-up waits until it ends
            assert later.exit_code == 0 and "done" in later.content
        t.see("finished later")
        text = t.text()
        assert "finished later" in _row(text, " sleep 2; echo done")
        follow = _row(text, "wait for output")
        assert "wait for output: sleep 2" in follow and "ok" in follow and " 0 " in follow, follow
        assert all(len(line) <= 80 for line in text.splitlines())
        logs = oh("logs", info["instance_id"], check=0).stdout
        (killed,) = [line for line in logs.splitlines() if "sleep 30" in line and "result" in line]
        assert "→ timed out, killed  exit 124" in killed and "exit -1" not in killed, killed
        (soft,) = [
            line
            for line in logs.splitlines()
            if "sleep 2; echo done" in line and "result" in line and "wait" not in line
        ]
        assert "→ timed out, running" in soft and "exit -1" not in soft, soft
        t.child.sendintr()
        assert t.finish() == 0
    finally:
        t.kill()


def test_a_killed_run_in_the_plain_view(oh):
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "local"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        read_until(proc, lambda line: "listening" in line or "backend" in line)
        p = oh("run", "--timeout", "1", "--", "sleep 30")
        assert p.returncode == 124, p
        lines = read_until(proc, lambda line: "sleep 30 →" in line)
        assert "→ timed out, killed exit 124 in" in lines[-1], lines[-1]
        assert ctrl_c(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# C8: a deleted session file
def test_a_backend_whose_session_file_was_deleted_is_found_again(oh):
    from .conftest import pid_alive, wait_for

    info = oh.start("local")
    sf = oh.session_file(info["instance_id"])
    sf.unlink()
    p = oh("start", "--detach", "--runtime", "local", timeout=40)  # at once: the session file may not be back yet
    assert p.returncode == 3 and f"instance {info['instance_id']} (pid {info['pid']}" in p.stderr, p
    wait_for(sf.exists, 10, what="the session file written again")
    status = oh.json("status", "--json")
    assert [b["instance_id"] for b in status["sessions"]] == [info["instance_id"]], status
    assert info["instance_id"] in oh("doctor").stdout
    p = oh("stop", "--all", check=0)
    assert info["instance_id"] in p.stdout and not pid_alive(info["pid"])
    assert not sf.exists()


# C17: exit codes and messages of `oh` itself
def test_bare_oh_is_a_usage_error_and_negative_values_are_values(oh):
    p = oh()
    assert p.returncode == 2 and p.stdout == "" and "Usage: oh [OPTIONS] COMMAND" in p.stderr and "Commands" in p.stderr
    p = oh("config", "set", "port", "-1")
    assert (
        p.returncode == 2
        and "port must be an integer from 0 to 65535 (got -1)" in p.stderr
        and "No such option" not in p.stderr
    ), p
    p = oh("stop", "--all", "--workspace", str(oh.workspace))
    assert p.returncode == 2 and "--workspace and --all exclude each other" in p.stderr, p


# C16: a backend killed with kill -9, then `oh run` first
def test_status_tells_a_killed_backend_once_even_after_oh_run_cleaned_it(oh):
    import json
    import os
    import signal

    from .conftest import pid_alive, wait_for

    info = oh.start("local")
    os.kill(info["pid"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(info["pid"]), 10, what="the backend to die")
    p = oh("run", "--", "echo hi")
    assert p.returncode == 3, p  # no backend: the stale session file is cleaned here
    assert not oh.session_file(info["instance_id"]).exists()
    p = oh("status", "--json", check=3)
    assert [d["instance_id"] for d in json.loads(p.stdout)["died"]] == [info["instance_id"]]
    assert f"backend {info['instance_id']} (pid {info['pid']}" in p.stderr and "died" in p.stderr
    assert f"logs/{info['instance_id']}.log" in p.stderr
    again = oh("status", "--json", check=3)  # once
    assert json.loads(again.stdout) == {"sessions": []} and again.stderr == ""
    notes = [n.name for n in (oh.home / "sessions").iterdir() if n.name.endswith(".died")]
    assert notes == []


# C10: 80 columns
def test_80_columns_hints_kinds_paths_and_uptime(oh, tmp_path):
    import re
    import time

    from .terminal import no_code_env

    t = Term(oh, "--runtime", "vscode", "--no-open", cols=80, rows=24, env=no_code_env(tmp_path))
    editor = None
    try:
        info = t.session()
        t.see("is on PATH", timeout=20)
        t.see("a VS Code window connects only when")
        flat = " ".join(t.text().split())  # the hints wrap: read them as one text
        # each hint ends with what to do, and that end is on screen, not cut
        assert f"open {oh.workspace} in it yourself." in flat, t.text()
        assert "start VS Code from this shell." in flat and "then `oh vscode install`)." in flat, t.text()
        assert not [line for line in t.text().splitlines() if line.startswith("  ") and "…" in line], t.text()
        editor = subprocess.Popen(
            [sys.executable, "-m", "oh", "attach"],
            cwd=oh.workspace,
            env=oh.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        t.see("editor connected")
        (oh.workspace / "src" / "pkg").mkdir(parents=True)
        oh("write", "src/pkg/module_with_a_long_name.py", "--content", "x = 1\n", check=0)
        for verb in (("diagnostics",), ("symbols", "x"), ("editors",)):
            oh(*verb)
        t.see("editors")
        time.sleep(1.2)  # the header's uptime ticks: read a fresh frame
        t.pump(0.5)
        text = t.text()
        assert all(len(line) <= 80 for line in text.splitlines())
        rows = [line for line in text.splitlines() if re.match(r"^\d\d:\d\d:\d\d ", line)]
        kinds = {k for line in rows for k in ("write", "diagnostics", "symbols", "editors") if f" {k} " in line}
        assert kinds == {"write", "diagnostics", "symbols", "editors"}, rows
        assert not any(re.search(r" (symbo|diagn|edito)… ", line) for line in rows), rows
        (write,) = [line for line in rows if " write " in line]
        # relative to the workspace; at 80 columns the path gives way from the left: the file name stays
        assert "_with_a_long_name.py " in write and str(oh.workspace) not in write, text
        (head,) = [line for line in text.splitlines() if info["instance_id"] in line and "pid" in line]
        assert re.search(r"up \d+(s|m\d\ds)$", head), head
        t.child.sendintr()
        assert t.finish() == 0
    finally:
        t.kill()
        if editor is not None and editor.poll() is None:
            editor.terminate()
            editor.wait(10)


def test_the_header_keeps_the_uptime_at_80_columns_with_a_long_pid():
    from rich.console import Console

    from oh.ui.live import LiveState

    st = LiveState(
        backend={
            "instance_id": "911dfd909e99",
            "runtime": "vscode",
            "url": "ws://127.0.0.1:40375",
            "pid": 4194303,
            "workspace": "/w",
        },
        uptime_base=3700,
    )
    console = Console(width=80, record=True, color_system=None)
    console.print(st.render(24, 80))
    head = console.export_text().splitlines()[0].rstrip()
    assert head.endswith("up 1h01m") and "40375" in head and "4194303" in head, head


def test_plain_lines_show_file_paths_relative_to_the_workspace():
    from oh.ui.live import LiveState

    st = LiveState(backend={"instance_id": "x", "runtime": "local", "workspace": "/w/proj"})
    ev = {
        "type": "event",
        "event": "action_finished",
        "time": "2026-01-01T10:00:00+00:00",
        "agent_id": "a",
        "outcome": "ok",
        "exit_code": None,
        "duration_ms": 2,
    }
    assert st.apply({**ev, "action_id": 1, "kind": "edit", "summary": "str_replace /w/proj/src/a.py"}) == [
        "a edit str_replace src/a.py → ok in 2 ms"
    ]
    assert st.apply({**ev, "action_id": 2, "kind": "read", "summary": "/w/other/b.py"}) == [
        "a read /w/other/b.py → ok in 2 ms"
    ]
    assert st.apply({**ev, "action_id": 3, "kind": "run", "summary": "cat /w/proj/a.py", "exit_code": 0}) == [
        "a run cat /w/proj/a.py → ok exit 0 in 2 ms"
    ]


def _ctrl_c_oh_run(oh, command: str) -> tuple[int, str]:
    """`oh run -- COMMAND` on a real terminal, Ctrl-C once COMMAND touched $MARKER: (exit status, its output)."""
    import pexpect

    from .conftest import wait_for

    oh.start("local")
    marker = oh.workspace / "started"
    child = pexpect.spawn(
        sys.executable,
        ["-m", "oh", "run", "--", command.replace("$MARKER", str(marker))],
        cwd=str(oh.workspace),
        env=oh.env,
        encoding="utf-8",
        timeout=20,
    )
    try:
        wait_for(marker.exists, 15, what="the command to start")
        child.sendintr()
        child.expect(pexpect.EOF)
        child.close()
        return child.exitstatus, child.before
    finally:
        if child.isalive():
            child.kill(9)


# C11: Ctrl-C in `oh run` says what happened to the command, and `oh run --wait` agrees
def test_ctrl_c_in_oh_run_says_the_command_got_ctrl_c(oh):
    code, said = _ctrl_c_oh_run(oh, "touch $MARKER; sleep 30; echo not-reached")
    assert code == 130
    assert "interrupted: the command got Ctrl-C in the `oh run` shell" in said, said
    assert "may still be running" not in said
    p = oh("run", "--wait")
    assert p.returncode == 6 and "nothing is running in the `oh run` shell" in p.stderr, p


def test_a_command_that_ignores_ctrl_c_goes_on_as_one_job(oh):
    """Issue 41: after Ctrl-C on a command that ignores SIGINT, `oh jobs` listed it twice (as the job and as the
    shell's foreground command)."""
    code, said = _ctrl_c_oh_run(oh, "trap '' INT; touch $MARKER; sleep 30")
    assert code == 130 and "goes on as" in " ".join(said.split()), said
    listed = oh.json("jobs", "--json")
    rows = listed if isinstance(listed, list) else listed["jobs"]
    ids = [r["job_id"] for r in rows if "sleep 30" in r["command"]]
    assert len(ids) == 1, rows
    assert oh("jobs", "cancel", ids[0]).returncode == 0


# C15: the README's settings table and --help texts match the behaviour
def test_readme_settings_table_lists_every_setting():
    import re
    from pathlib import Path

    from oh.config.settings import KEYS

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme.split("### Settings (`oh config`)", 1)[1].split("\n\n", 2)[1]
    listed = re.findall(r"^\| `([a-z_]+)` \|", table, re.M)
    assert sorted(listed) == sorted(KEYS), set(KEYS) ^ set(listed)
    for name, key in KEYS.items():
        assert f"`{key.env}`" in table, name


def test_help_texts_say_what_the_commands_do(oh):
    def help_of(*args):
        p = oh(*args, "--help", env={"COLUMNS": "100"}, check=0)
        return " ".join(p.stdout.replace("│", " ").split())

    status = help_of("status")
    assert "pydantic" not in status and "says once when a backend died" in status
    symbols = help_of("symbols")
    assert "need a backend started with `oh start --runtime vscode`" not in symbols
    assert "the local runtime answers with a text search" in symbols
    assert "job records" not in help_of("stat") and "Print the facts as one JSON object" in help_of("stat")
    token = oh("token", "--help", env={"COLUMNS": "100"}, check=0).stdout
    lines = [line.strip(" │") for line in token.splitlines()]
    # one sentence, wrapped by the terminal width only (a docstring line break made a short line here)
    assert not any(line.endswith("owner),") for line in lines), token
    assert "owner), its fingerprint" in " ".join(token.replace("│", " ").split()), token


def test_a_follow_up_without_job_ids_closes_the_agents_row_still_running():
    """VS Code's runtime gives no job ids: the agent's last command still running is the one waited for."""
    from oh.ui.live import LiveState

    st = LiveState(backend={"instance_id": "x", "runtime": "vscode", "workspace": "/w"})
    ev = {
        "type": "event",
        "event": "action_finished",
        "time": "2026-01-01T10:00:00+00:00",
        "agent_id": "a",
        "outcome": "ok",
        "duration_ms": 2,
    }
    st.apply({**ev, "action_id": 1, "kind": "run", "summary": "make test", "exit_code": -1, "timed_out": "running"})
    st.apply({**ev, "action_id": 2, "kind": "run", "summary": "wait for output", "exit_code": -1})
    assert (
        st.actions[1].outcome_text() == "timed out, running" and st.actions[2].summary == "wait for output: make test"
    )
    lines = st.apply({**ev, "action_id": 3, "kind": "run", "summary": "wait for output", "exit_code": 0})
    assert lines == ["a run wait for output: make test → ok exit 0 in 2 ms"]
    assert st.actions[1].outcome_text() == "finished later" and st.actions[1].exit_text() == ""
    assert st.actions[2].outcome_text() == "finished later"
