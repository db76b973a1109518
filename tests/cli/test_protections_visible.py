"""Which protections are on, and settings changed while a backend runs (issue 41, major 2).

`oh status` (plain and --json) and `oh start -d` show consent, sandbox, review, history and branch mode. A
consent setting changed with `oh config set` applies to the running backend at once (tightening never waits
for a restart), proven by its effect: a command that ran unasked before is asked after, and does not run
while it waits. Any other setting says that the running backend keeps its value until it restarts.
"""

from __future__ import annotations

import json

import pytest

from .conftest import wait_for


@pytest.fixture
def started(oh):
    proc = oh("start", "--detach", "--runtime", "local", check=0)
    return proc


def test_start_detach_names_the_protections(started):
    out = started.stdout + started.stderr
    line = next((ln for ln in out.splitlines() if ln.startswith("protections: ")), None)
    assert line is not None, out
    for word in ("consent", "sandbox", "review off", "history", "branch off"):
        assert word in line, line


def test_status_shows_every_protection_plain_and_json(oh, started):
    text = oh("status", check=0).stdout
    line = next((ln for ln in text.splitlines() if ln.strip().startswith("protects")), None)
    assert line is not None, text
    assert "consent never" in line and "review off" in line and "branch off" in line, line
    (row,) = json.loads(oh("status", "--json", check=0).stdout)["sessions"]
    assert isinstance(row["history"], dict) and isinstance(row["history"]["on"], bool), row
    assert row["consent"]["level"] == "never"
    assert row["review"] is False


def test_consent_set_while_running_applies_at_once(oh, started):
    marker = oh.workspace / "ran.txt"
    # before: level never, so a plain command runs unasked
    assert oh("run", "--", "true", check=0).returncode == 0
    set_ = oh("config", "set", "consent", "commands", check=0)
    assert "applied now to the running backend" in set_.stderr + set_.stdout, set_
    agent = oh.agent("run", "--", "touch", str(marker))
    try:
        (row,) = oh.pending(1)
        assert "touch" in json.dumps(row)
        assert not marker.exists(), "the command ran before anyone answered"
        oh("reject", row["id"], check=0)
        agent.communicate(timeout=30)
    finally:
        if agent.poll() is None:
            agent.kill()
    assert not marker.exists()
    # and a deny rule added later applies too, without a restart
    oh("config", "set", "consent", "never", check=0)
    out = oh("config", "set", "consent_deny", "run: touch *", check=0)
    assert "applied now" in out.stderr + out.stdout, out
    refused = oh("run", "--", "touch", str(marker))
    assert refused.returncode != 0 and not marker.exists(), refused


def test_a_start_setting_says_the_running_backend_keeps_its_value(oh, started):
    out = oh("config", "set", "max_shells", "3", check=0)
    said = out.stderr + out.stdout
    assert "keeps its current max_shells until it restarts" in said and "oh stop" in said, said


def test_levels_that_need_review_mode_say_restart(oh, started):
    out = oh("config", "set", "consent", "changes", check=0)
    said = out.stderr + out.stdout
    assert "not applied to the running backend" in said and "restart" in said, said
    wait_for(lambda: oh.json("approvals", "--json")["level"] == "never", 5, what="level unchanged")
