"""`oh start` called in-process (run_start) starting real backend processes: --detach, refusals, and
the foreground view in NDJSON mode until the backend is stopped from elsewhere.

test_live_view.py and test_terminal_safety.py keep what needs a real `oh` process: signals (Ctrl-C,
SIGHUP), a pseudo-terminal for the rich view, a terminal that goes away.
"""

from __future__ import annotations

import json
import threading

from oh.commands.start import run_start

from .conftest import pid_alive, wait_for
from .inprocess import here, invoke  # noqa: F401 - `here` is a fixture


def test_detach_json_starts_a_backend_and_warns_in_the_json(here):
    r = invoke(
        run_start, runtime="local", workspace=str(here.workspace), detach=True, json_=True, open_=False, sandbox="off"
    )
    assert r.code == 0, r
    info = json.loads(r.out)
    here.started.append(info)
    assert info["runtime"] == "local" and info["workspace"] == str(here.workspace)
    assert [w["id"] for w in info["warnings"]] == ["no_sandbox"] and r.err == ""
    assert pid_alive(info["pid"]) and here.session_file(info["instance_id"]).exists()
    again = invoke(run_start, runtime="local", workspace=str(here.workspace), detach=True, open_=False)
    assert again.code == 3 and info["instance_id"] in again.err


def test_detach_text_says_how_to_stop_it(here):
    r = invoke(run_start, runtime="local", workspace=str(here.workspace), detach=True, sandbox="off")
    here.started.append({"pid": int(r.out.split("pid ")[1].split(")")[0])})
    assert r.code == 0, r
    assert "listening on ws://127.0.0.1:" in r.out and "stop it with `oh stop " in r.out
    assert "runtime local has NO sandbox" in r.err


def test_refusals_before_anything_starts(here):
    r = invoke(run_start, workspace=str(here.tmp / "missing"), detach=True)
    assert r.code == 2 and "is not a directory" in r.err
    r = invoke(run_start, workspace=str(here.workspace), detach=True, port=70000)
    assert r.code == 2 and "port" in r.err
    sessions_dir = here.home / "sessions"
    assert not (sessions_dir.exists() and list(sessions_dir.glob("*.json")))  # nothing was started


def test_foreground_ndjson_until_the_backend_is_stopped_elsewhere(here):
    started = threading.Event()

    def stop_it_from_another_process():
        sessions_dir = here.home / "sessions"
        wait_for(
            lambda: sessions_dir.is_dir() and list(sessions_dir.glob("*.json")), timeout=40, what="the session file"
        )
        started.set()
        here("stop", "--all", check=0, timeout=40)

    stopper = threading.Thread(target=stop_it_from_another_process, daemon=True)
    stopper.start()
    # --sandbox off: the unconfined backend's warning is the event this test reads second
    r = invoke(run_start, runtime="local", workspace=str(here.workspace), json_=True, open_=False, sandbox="off")
    stopper.join(60)
    assert started.is_set() and r.code == 0, r
    events = [json.loads(line) for line in r.out.splitlines()]
    names = [e.get("event") for e in events if e.get("type") == "event"]
    assert names[0] == "backend_started" and names[1] == "warning" and names[-1] == "backend_stopped"
    assert events[-1]["how"] == "external" and events[-1]["instance_id"] == events[0]["instance_id"]
    assert not here.session_file(events[0]["instance_id"]).exists()


def test_backend_argv_carries_every_setting_as_a_flag_and_never_the_token(tmp_path):
    from oh.launcher.process import backend_argv

    argv = backend_argv(
        str(tmp_path),
        "abc123",
        tmp_path / "b.log",
        runtime="vscode",
        host="::1",
        port=0,
        editor_timeout=2.5,
        action_timeout=300.0,
        trace=False,
        trace_max_bytes=1024,
        allowed_roots=["/tmp", "/srv"],
        jobs={"max_shells": 4, "job_retention": 60.0, "repeat_action": None},
    )
    assert argv[1:3] == ["-m", "oh.backend"] and "--token-stdin" in argv and "--no-trace" in argv
    pairs = {
        argv[i]: argv[i + 1]
        for i in range(3, len(argv) - 1)
        if argv[i].startswith("--") and not argv[i + 1].startswith("--")
    }
    assert pairs["--runtime"] == "vscode" and pairs["--host"] == "::1" and pairs["--editor-timeout"] == "2.5"
    assert pairs["--max-shells"] == "4" and pairs["--job-retention"] == "60" and "--repeat-action" not in argv
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--allow-root"] == ["/tmp", "/srv"]
