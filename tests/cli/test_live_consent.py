"""Consent answered in the live view of `oh start` (issue 19) through a real pseudo-terminal: the rich
view (stdout a pty, read through pyte) and a plain view whose stdin is a terminal and stdout a pipe
(`oh start | tee log` over SSH). Single keys: y allows, n rejects, a allows always (rule saved)."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import wait_for
from .terminal import Term, read_until
from .test_consent_cli import _finish


def _see_question(term: Term, command: str) -> None:
    """Wait for the question about this command: its line and, right under it, the keys. Text from an
    earlier, answered question can linger on the screen, so "y allow" alone may be the old one (a key
    sent then answers nothing and the test waits for an answer that never comes)."""

    def asked(text: str) -> bool:
        lines = text.splitlines()
        return any(f"wants to run {command}" in a and "y allow" in b for a, b in zip(lines, lines[1:]))

    term.wait(asked, what=f"the question about {command}")


def test_rich_view_keys_answer_the_waiting_action(oh):
    term = Term(oh, "--runtime", "local", "--consent", "commands", cols=120, rows=30)
    try:
        term.session()
        agent = oh.agent("run", "touch by-y.txt")
        _see_question(term, "touch by-y.txt")
        assert not (oh.workspace / "by-y.txt").exists()
        term.child.send("y")
        rc, out, err = _finish(agent)
        assert rc == 0 and (oh.workspace / "by-y.txt").exists()

        agent = oh.agent("run", "touch by-n.txt")
        _see_question(term, "touch by-n.txt")
        term.child.send("n")
        rc, out, err = _finish(agent)
        assert rc != 0 and "REJECTED" in out + err and "live view" in out + err
        assert not (oh.workspace / "by-n.txt").exists()

        agent = oh.agent("run", "uname")
        term.see("always (run: uname *)")
        term.child.send("a")
        assert _finish(agent)[0] == 0
        assert "run: uname *" in oh("config", "get", "consent_allow", check=0).stdout
        assert oh.json("run", "--json", "uname -s")["observation"] == "run"  # the rule holds now
        assert oh.json("approvals", "--json")["approvals"] == []
        term.child.sendintr()
        assert term.finish() == 0
    finally:
        term.kill()


def test_plain_view_with_a_terminal_on_stdin(oh):
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "local", "--consent", "risky"],
        cwd=oh.workspace,
        env=oh.env,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    os.close(slave)
    try:
        read_until(proc, lambda line: "consent: risky" in line)
        agent = oh.agent("run", "rm -f nothing-here")
        lines = read_until(proc, lambda line: "awaiting your consent" in line)
        assert "rm -f nothing-here" in lines[-1] and "y = allow" in lines[-1]
        os.write(master, b"y")
        read_until(proc, lambda line: "allowed by live view" in line)
        assert _finish(agent)[0] == 0
        assert oh.json("run", "--json", "echo plain")["observation"] == "run"  # not risky: no question
        wait_for(lambda: oh.json("approvals", "--json")["approvals"] == [] or None, 10, what="nothing waits")
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
        os.close(master)


def test_always_from_an_editor_is_saved_by_the_live_view(oh):
    """VS Code's "Always allow <rule>" reaches the backend on the editor leg; the backend writes no config,
    so the foreground `oh start` that sees the decision saves the rule in config.toml."""
    import json

    from websockets.sync.client import connect

    proc = subprocess.Popen(
        [sys.executable, "-m", "oh", "start", "--runtime", "local", "--consent", "commands"],
        cwd=oh.workspace,
        env=oh.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        read_until(proc, lambda line: "consent: commands" in line)
        (sf,) = list((oh.home / "sessions").glob("*.json"))
        sess = json.loads(sf.read_text())
        with connect(
            sess["url"] + "/v1/editor", additional_headers={"Authorization": f"Bearer {sess['editor_token']}"}
        ) as ed:
            ed.send(
                json.dumps(
                    {
                        "type": "register",
                        "protocol": 1,
                        "session": sess["instance_id"],
                        "workspace_folders": [sess["workspace"]],
                        "editor": {"name": "vscode-like", "version": "0", "pid": 1},
                        "extension_version": "0",
                        "capabilities": ["run", "consent"],
                    }
                )
            )
            assert json.loads(ed.recv(timeout=10))["type"] == "registered"
            agent = oh.agent("run", "hostname")
            while True:
                frame = json.loads(ed.recv(timeout=30))
                if frame.get("type") == "approval_request":
                    break
            ed.send(json.dumps({"type": "approval", "op": "allow", "id": frame["approval"]["id"], "always": True}))
            assert _finish(agent)[0] == 0
        read_until(proc, lambda line: "always allowed from now on" in line and "run: hostname *" in line)
        assert "run: hostname *" in oh("config", "get", "consent_allow", check=0).stdout
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
