"""Issue 9 #19-#22 (terminal parts): the live view at 80 columns, the spinner, why no editor comes,
refused runs as errors, warnings in the right place, and `oh status` telling that a backend died."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from oh.client.sync import SyncClient

from .conftest import pid_alive, wait_for
from .terminal import Term, ctrl_c, fake_code, no_code_env, read_until

pytestmark = pytest.mark.slow

ROW = re.compile(r"^\d\d:\d\d:\d\d ")
BRAILLE = re.compile("[\u2800-\u28ff]")


def _client(info: dict, oh, name: str) -> SyncClient:
    token = oh.session(info["instance_id"])["token"]
    return SyncClient.connect(info["url"], token, name=name)


def test_80_columns_keeps_every_column_readable_and_counts_hidden_rows(oh):
    t = Term(oh, "--runtime", "local", cols=80, rows=24)
    try:
        info = t.session()
        t.see("no actions yet")
        long_cmd = "echo " + "a-long-argument " * 4
        with _client(info, oh, "agent-with-a-long-name") as c:
            for _ in range(20):
                assert c.run(long_cmd).exit_code == 0
            assert c.read("missing.txt").error_id is not None
        t.see("1 error ")
        t.see("earlier actions hidden")
        text = t.text()
        rows = [line for line in text.splitlines() if ROW.match(line)]
        assert len(rows) >= 5, text
        assert all(len(line) <= 80 for line in text.splitlines())
        for line in rows:
            assert re.search(r"\d+ ms$", line), f"duration cut or wrapped: {line!r}\n{text}"
            assert " run " in line or " read " in line, line
            assert "agent-with" in line and "…" in line  # the summary (and a long agent name) shrink, visibly
        assert "TOOL_ERROR" in rows[-1], rows[-1]
        assert not any(line.strip() in ("ms", "s") for line in text.splitlines()), text
        hidden = re.search(r"(\d+) earlier actions? hidden", text)
        assert hidden and int(hidden.group(1)) == 21 - len(rows), text
        assert "1 errors" not in text
        t.child.sendintr()
        assert t.finish() == 0
    finally:
        t.kill()


def test_waiting_spinner_turns_and_says_why_no_editor_comes(oh, tmp_path):
    t = Term(oh, "--runtime", "vscode", "--no-open", cols=160, rows=30, env=no_code_env(tmp_path))
    try:
        t.session()
        t.see("waiting for VS Code to connect")
        t.see("no VS Code CLI", timeout=20)
        t.see("OH_HOME is set here")
        frames = set(BRAILLE.findall(t.raw))
        assert len(frames) >= 2, f"the spinner never changed frame: {frames}"
        t.child.sendintr()
        assert t.finish() == 0
    finally:
        t.kill()


def test_plain_view_names_a_missing_extension(oh, tmp_path):
    env = dict(oh.env, **fake_code(tmp_path, ["ms-python.python"]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "vscode", "--no-open"],
        cwd=oh.workspace,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "listening on" in proc.stdout.readline()
        oh.started.append(json.loads(next((oh.home / "sessions").glob("*.json")).read_text()))
        lines = read_until(proc, lambda line: "connects only when" in line)
        text = "".join(lines)
        assert "oh-dev.oh-vscode) is not installed" in text, text
        assert "not on PATH" not in text
        assert ctrl_c(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_refused_run_is_an_error_in_the_live_view(oh):
    """A command sent while the previous one still runs is refused (BUSY): red, counted as an error."""
    # max_shells 1: no extra shell (issue 11), so the second command is refused rather than run beside it
    t = Term(oh, "--runtime", "local", cols=120, rows=30, env={"OH_MAX_SHELLS": "1"})
    try:
        info = t.session()
        t.see("no actions yet")
        with _client(info, oh, "agent") as c:
            first = c.run("sleep 30", timeout=1)
            assert first.exit_code == -1
            t.see("timed out, running")  # the soft-timed-out run goes on: not a yellow `ok -1`
            assert not re.search(r"\bok\s+-1\b", t.text())
            refused = c.run("echo second")
            if refused.error_id != "BUSY":
                pytest.skip("this backend does not refuse with BUSY yet (SPEC-wave2 C, core helper)")
            t.see("BUSY")
            t.see("1 error ")
            text = t.text()
            assert "timed out, running" in text  # the soft-timed-out run: not `ok -1`
            assert not re.search(r"\bok\s+-1\b", text)
        t.child.sendintr()
        assert t.finish() == 0
    finally:
        t.kill()


def test_warnings_after_start_only_and_not_on_stderr_with_json(oh):
    p = oh(  # --sandbox off: the unconfined backend's warning is one of those read here
        "start",
        "--detach",
        "--runtime",
        "local",
        "--no-open",
        "--sandbox",
        "off",
        "--workspace",
        str(oh.user_home),
        timeout=40,
    )
    assert p.returncode == 0, p.stderr
    info = json.loads(oh("status", "--json").stdout)["sessions"][0]
    oh.started.append(info)
    assert "your home directory" in p.stderr and "NO sandbox" in p.stderr
    # A second start for the same workspace fails: no sandbox warning before (or with) that error.
    again = oh("start", "--detach", "--runtime", "local", "--no-open", "--workspace", str(oh.user_home), timeout=40)
    assert again.returncode == 3 and "already serves" in again.stderr
    assert "sandbox" not in again.stderr.lower() and "home directory" not in again.stderr
    oh("stop", check=0, cwd=oh.user_home)
    p = oh(
        "start",
        "--detach",
        "--json",
        "--runtime",
        "local",
        "--no-open",
        "--sandbox",
        "off",  # the unconfined backend's warning, after the HOME one
        "--workspace",
        str(oh.user_home),
        timeout=40,
    )
    assert p.returncode == 0 and p.stderr == "", p.stderr
    started = json.loads(p.stdout)
    oh.started.append(started)
    assert [w["id"] for w in started["warnings"]] == ["workspace_home", "no_sandbox"]


def test_status_says_which_backend_died_and_where_its_log_is(oh):
    info = oh.start("local")
    os.kill(info["pid"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(info["pid"]), 10, what="the backend to die")
    p = oh("status", "--json", check=3)
    assert [d["instance_id"] for d in json.loads(p.stdout)["died"]] == [info["instance_id"]]
    assert f"backend {info['instance_id']}" in p.stderr and "died" in p.stderr
    assert f"logs/{info['instance_id']}.log" in p.stderr
    assert not oh.session_file(info["instance_id"]).exists()
    again = oh("status", "--json", check=3)
    assert json.loads(again.stdout) == {"sessions": []} and again.stderr == ""
