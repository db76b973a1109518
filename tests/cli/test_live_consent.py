"""Consent answered in the live view of `oh start` (issue 19) through a real pseudo-terminal: the rich
view (stdout a pty, read through pyte) and a plain view whose stdin is a terminal and stdout a pipe
(`oh start | tee log` over SSH). Single keys: y allows, n rejects, a allows always (rule saved)."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import wait_for
from .terminal import Term, read_until
from .test_consent_cli import _agent, _finish, _pending


def test_rich_view_keys_answer_the_waiting_action(oh):
    term = Term(oh, "--runtime", "local", "--consent", "commands", cols=120, rows=30)
    try:
        term.session()
        agent = _agent(oh, "run", "touch by-y.txt")
        term.see("touch by-y.txt")
        term.see("y allow")
        assert not (oh.workspace / "by-y.txt").exists()
        term.child.send("y")
        rc, out, err = _finish(agent)
        assert rc == 0 and (oh.workspace / "by-y.txt").exists()

        agent = _agent(oh, "run", "touch by-n.txt")
        term.see("touch by-n.txt")
        term.wait(lambda t: "y allow" in t, what="the question")
        term.child.send("n")
        rc, out, err = _finish(agent)
        assert rc != 0 and "REJECTED" in out + err and "live view" in out + err
        assert not (oh.workspace / "by-n.txt").exists()

        agent = _agent(oh, "run", "uname")
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
    proc = subprocess.Popen([sys.executable, "-m", "oh", "start", "--runtime", "local", "--consent", "risky"], cwd=oh.workspace, env=oh.env,
                            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    os.close(slave)
    try:
        read_until(proc, lambda line: "consent: risky" in line)
        agent = _agent(oh, "run", "rm -f nothing-here")
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
