"""`oh logs`, `oh doctor`, `oh completions`, `oh mcp install` and `oh attach` called in-process (their
run functions), against real backends where one is needed."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from oh.commands import agent, attach, completions, doctor, logs, mcp

from .conftest import wait_for
from .inprocess import here, invoke  # noqa: F401 - `here` is a fixture


def test_logs_render_raw_filter_and_follow_until_ctrl_c(here):
    info = here.start("local")
    assert invoke(agent.run_run, command=["echo one"]).code == 0
    jid = invoke(agent.run_run, command=["echo two"], background=True).out.strip()
    trace = here.home / "traces" / f"{info['instance_id']}.jsonl"
    wait_for(lambda: trace.exists() and f'"job_id":"{jid}"' in trace.read_text(), 20, what="the trace to be written")
    r = invoke(logs.run_logs)
    assert r.code == 0 and "echo one" in r.out and "exit 0" in r.out
    records = [json.loads(line) for line in invoke(logs.run_logs, json_=True, lines=0).out.splitlines()]
    assert any(rec.get("summary") == "echo one" for rec in records)
    only = [json.loads(line) for line in invoke(logs.run_logs, json_=True, lines=0, job=jid).out.splitlines()]
    assert only and all(rec.get("job_id") == jid for rec in only)
    rounds = []

    def sleep(_seconds):
        rounds.append(1)
        raise KeyboardInterrupt

    r = invoke(logs.run_logs, follow=True, lines=1, sleep=sleep)
    assert r.code == 0 and rounds == [1] and len(r.out.splitlines()) == 1


def test_logs_without_any_trace_exits_3(here):
    r = invoke(logs.run_logs)
    assert r.code == 3 and "no trace yet" in r.err and "oh start" in r.err
    r = invoke(logs.run_logs, instance="zz")
    assert r.code == 3 and "no trace for instance 'zz'" in r.err


def test_doctor_reports_every_check_and_fails_on_a_failed_one(here):
    r = invoke(doctor.run_doctor, json_=True)
    report = json.loads(r.out)
    names = [c["check"] for c in report["checks"]]
    assert "python" in names and "token" in names and "dir sessions" in names and "port" in names
    assert r.code == (0 if report["ok"] else 1)
    failing = [
        {"check": "port", "status": "fail", "detail": "cannot bind", "fix": "choose another"},
        {"check": "token", "status": "warn", "detail": "no token yet", "fix": "oh start"},
    ]
    r = invoke(doctor.run_doctor, checks=lambda: failing)
    assert r.code == 1
    assert r.out.splitlines() == [
        "✗ port: cannot bind",
        "    fix: choose another",
        "! token: no token yet",
        "    fix: oh start",
        "",
        "1 failed, 1 warning(s), 2 checks",
    ]


def test_completions_show_and_install(here, monkeypatch):
    assert invoke(completions.run_show, shell="pwsh").out == completions.script("powershell")
    r = invoke(completions.run_show, shell="tcsh")
    assert r.code == 2 and "unsupported shell 'tcsh'" in r.err
    monkeypatch.setenv("SHELL", "/usr/bin/fish")
    result = json.loads(invoke(completions.run_install, json_=True).out)
    target = here.tmp / "xdg-config" / "fish" / "completions" / "oh.fish"
    assert result["path"] == str(target) and target.read_text() == completions.script("fish")
    assert "already up to date" in invoke(completions.run_install).out
    monkeypatch.setenv("SHELL", "/bin/tcsh")
    r = invoke(completions.run_install)
    assert r.code == 2 and "cannot detect your shell" in r.err


def test_bash_completion_install_with_and_without_bash_completion(here, monkeypatch):
    """Issue 41: without the bash-completion package nothing loaded the installed script; now ~/.bashrc does, once,
    and a real interactive bash then completes `oh` (the rc's line sourced, `complete -p oh` set)."""
    import subprocess

    monkeypatch.setattr(completions, "BASH_COMPLETION", (str(here.tmp / "no-such-file"),))
    r = invoke(completions.run_install, shell="bash")
    rc = Path(os.environ["HOME"]) / ".bashrc"
    assert r.code == 0 and "bash-completion is not installed" in r.out and rc.read_text().count(completions.MARK) == 1
    invoke(completions.run_install, shell="bash")
    assert rc.read_text().count(completions.MARK) == 1  # idempotent
    env = {"HOME": os.environ["HOME"], "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    out = subprocess.run(["bash", "-ic", "complete -p oh"], capture_output=True, text=True, env=env, timeout=30)
    assert "_oh_completion" in out.stdout, out
    fake = here.tmp / "bash_completion"
    fake.write_text("")
    monkeypatch.setattr(completions, "BASH_COMPLETION", (str(fake),))
    assert "loads it automatically" in invoke(completions.run_install, shell="bash").out


def test_mcp_install_dry_run_then_write_then_nothing_to_change(here):
    project = here.tmp / "project"
    project.mkdir()
    r = invoke(mcp.run_install, client="cursor", scope="project", dry_run=True, project=project)
    assert r.code == 0 and r.out.startswith("--- /dev/null") and not (project / ".cursor").exists()
    r = invoke(mcp.run_install, client="cursor", scope="project", project=project)
    written = json.loads((project / ".cursor" / "mcp.json").read_text())
    assert r.code == 0 and written["mcpServers"]["oh"]["args"] == ["mcp", "--workspace", "${workspaceFolder}"]
    r = invoke(mcp.run_install, client="cursor", scope="project", project=project)
    assert "already configured; nothing changed" in r.out
    r = invoke(mcp.run_install, client="emacs")
    assert r.code == 2 and "emacs" in r.err


def test_attach_serves_as_the_editor_until_the_backend_stops(here):
    r = invoke(attach.run_attach)
    assert r.code == 3 and "no running backend serves" in r.err
    info = here.start("vscode")
    result = {}
    thread = threading.Thread(target=lambda: result.update(r=invoke(attach.run_attach)), daemon=True)
    thread.start()
    wait_for(lambda: here.json("status", "--json")["sessions"][0]["editors"], timeout=40, what="oh attach to register")
    ran = here("run", "--", "echo through the attached editor", timeout=40)
    assert ran.returncode == 0 and ran.stdout == "through the attached editor\n"
    here("stop", info["instance_id"], check=0, timeout=40)
    thread.join(60)
    assert result["r"].code == 0, result["r"]
    assert "attached as editor" in result["r"].err and "disconnected (1001 backend shutting down)" in result["r"].err


def test_doctor_and_status_name_the_fix_for_an_editor_of_another_release(here):
    """Issue 20: an editor whose extension is another release (real backend, fake editor registering 0.0.1):
    `oh doctor` warns with the fix and `oh status` shows it under the editor."""
    from oh.commands import status

    from .fake_editor import FakeEditor

    info = here.start("vscode")
    with FakeEditor(here.session_file(info["instance_id"]), here.workspace, extension_version="0.0.1"):
        r = invoke(doctor.run_doctor, json_=True, checks=lambda: doctor._session_checks())
        (warn,) = [
            c for c in json.loads(r.out)["checks"] if c["check"].startswith(f"session {info['instance_id']} editor")
        ]
        assert warn["status"] == "warn" and "and the oh extension 0.0.1 are from different releases" in warn["detail"]
        assert "oh vscode install" in warn["fix"]
        r = invoke(status.run_status)
        assert (
            "and the oh extension 0.0.1 are from different releases" in r.out
            and "Fix: Run `oh vscode install`" in r.out
        )
