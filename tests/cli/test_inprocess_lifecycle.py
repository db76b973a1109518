"""`oh status` and `oh stop` called in-process (their run functions) against real backends.

The real-process versions in test_lifecycle.py keep what needs a process: signals, the fast path,
the typer parsing and exit of `oh` itself.
"""

from __future__ import annotations

import json
import os
import signal

from oh.commands.status import run_status
from oh.commands.stop import run_stop

from .conftest import pid_alive, wait_for
from .inprocess import here, invoke  # noqa: F401 - `here` is a fixture


def test_status_without_backends_exits_3(here):
    r = invoke(run_status)
    assert r.code == 3
    assert "no backend is running" in r.out


def test_status_json_lists_a_running_backend_without_its_token(here):
    info = here.start("local")
    r = invoke(run_status, json_=True)
    assert r.code == 0, r
    rows = json.loads(r.out)["sessions"]
    assert [row["instance_id"] for row in rows] == [info["instance_id"]]
    assert rows[0]["reachable"] is True and rows[0]["runtime"] == "local"
    assert here.session(info["instance_id"])["token"] not in r.out


def test_status_reports_a_backend_that_died_and_removes_its_session(here):
    info = here.start("local")
    os.kill(info["pid"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(info["pid"]), what="the backend to die")
    r = invoke(run_status, json_=True)
    assert r.code == 3
    out = json.loads(r.out)
    assert out["sessions"] == [] and out["died"][0]["instance_id"] == info["instance_id"]
    assert "died without stopping cleanly" in r.err
    assert not here.session_file(info["instance_id"]).exists()


def test_status_watch_prints_one_ndjson_line_a_round_until_ctrl_c(here):
    here.start("local")
    rounds = []

    def sleep(_seconds: float) -> None:
        rounds.append(1)
        if len(rounds) == 2:
            raise KeyboardInterrupt

    r = invoke(run_status, json_=True, watch=True, sleep=sleep)
    assert r.code == 0
    lines = [json.loads(line) for line in r.out.splitlines()]
    assert len(lines) == 2 and all(len(line["sessions"]) == 1 for line in lines)


def test_stop_refuses_two_targets_with_a_usage_error(here):
    r = invoke(run_stop, instance="abc", all_=True)
    assert r.code == 2
    assert "INSTANCE (abc) and --all exclude each other: give only one of INSTANCE, --workspace or --all" in r.err
    r = invoke(run_stop, workspace="/x", all_=True)  # issue 18 item 17: not "give one of" when two were given
    assert r.code == 2 and r.err.startswith("oh: --workspace and --all exclude each other")


def test_stop_all_with_nothing_running(here):
    r = invoke(run_stop, all_=True, json_=True)
    assert (r.code, json.loads(r.out)) == (3, {"stopped": []})
    r = invoke(run_stop, all_=True)
    assert r.code == 3 and "no backend is running" in r.err


def test_stop_without_a_backend_for_the_workspace_says_nothing_is_running(here):
    r = invoke(run_stop)
    assert r.code == 3
    # issue 18 item 11: no advice to start a backend to someone who wants one stopped
    assert "nothing to stop: no running backend serves" in r.err and "oh start" not in r.err


def test_stop_stops_the_backend_of_the_workspace(here):
    info = here.start("local")
    r = invoke(run_stop, json_=True)
    assert r.code == 0, r
    stopped = json.loads(r.out)["stopped"]
    assert [(s["instance_id"], s["how"]) for s in stopped] == [(info["instance_id"], "shutdown")]
    wait_for(lambda: not pid_alive(info["pid"]), what="the backend to exit")
    assert not here.session_file(info["instance_id"]).exists()


def test_stop_uses_the_injected_service_for_every_backend(here):
    first = here.start("local")
    other = here.tmp / "other"
    other.mkdir()
    second = here.start("local", other)
    seen = []

    def fake_stop(session, timeout):  # records the call; the real backends are stopped by the fixture
        seen.append((session.instance_id, timeout))
        return "sigterm"

    r = invoke(run_stop, all_=True, timeout=2.5, stop_backend=fake_stop)
    assert r.code == 0
    assert sorted(seen) == sorted([(first["instance_id"], 2.5), (second["instance_id"], 2.5)])
    assert r.out.count("stopped with SIGTERM") == 2
