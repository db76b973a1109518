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


def test_the_launcher_resolves_the_whole_configuration_once_and_argv_names_only_the_workspace(tmp_path, monkeypatch):
    """Issue 38.3: one spelling per setting. The launcher's BackendConfig travels as JSON (stdin) and comes back
    whole, sandbox, consent and branch included; argv carries no setting and never the token."""
    from oh.config.settings import Settings
    from oh.launcher import backendconfig, consent
    from oh.launcher.process import backend_argv
    from oh.protocol.backendconfig import BackendConfig, dumps, from_wire

    monkeypatch.setenv("OH_HOME", str(tmp_path / "home"))
    s = Settings.load({"runtime": "vscode", "host": "::1", "editor_timeout": 2.5, "sandbox": "read-only"})
    plan = consent.plan(s, str(tmp_path), False)
    plan.level, plan.rules["deny"] = "commands", ["run: rm *"]
    config = backendconfig.resolve(
        s, str(tmp_path), allowed_roots=["/tmp"], consent=plan, branch={"branch": "on", "on_dirty": "commit"}
    )
    assert isinstance(config, BackendConfig) and config.runtime == "vscode" and config.host == "::1"
    assert config.editor_timeout == 2.5 and config.sandbox is not None and config.sandbox.level == "read-only"
    assert config.consent is not None and [r.text for r in config.consent.rules] == ["run: rm *"]
    assert config.branch is not None and config.branch.on_dirty == "commit" and config.allowed_roots == ["/tmp"]
    assert from_wire(json.loads(dumps(config))) == config  # every field survives the wire
    argv = backend_argv(config.workspace)
    assert argv[1:] == ["-m", "oh.backend", "--workspace", config.workspace, "--token-stdin", "--private-stdin"]
