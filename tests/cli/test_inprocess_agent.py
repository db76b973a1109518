"""The agent verbs and the job commands called in-process (run_run, run_read, run_write, run_edit,
run_jobs, run_wait, ...) against a real local backend on an ephemeral port.

The real-process tests (test_agent_verbs.py, test_jobs_cli.py, test_fastpath.py) keep what needs
`oh` itself: the fast path that serves these verbs without typer, stdin from a pipe, exit codes of
the process.
"""

from __future__ import annotations

import json

import pytest

from oh.commands import agent, jobs

from .inprocess import here, invoke  # noqa: F401 - `here` is a fixture


@pytest.fixture
def backend(here):
    return here.start("local")


def test_run_prints_output_and_returns_the_command_exit_code(here, backend):
    r = invoke(agent.run_run, command=["echo", "hello world"])
    assert (r.code, r.out) == (0, "hello world\n")
    r = invoke(agent.run_run, command=["echo out; exit 42"])
    assert r.code == 42 and "out" in r.out
    obs = json.loads(invoke(agent.run_run, command=["printf x"], json_=True).out)
    assert obs["observation"] == "run" and obs["content"] == "x"


def test_run_modes_are_exclusive_and_timeouts_exit_124(here, backend):
    r = invoke(agent.run_run, command=[], wait=True, reset=True)
    assert r.code == 2 and "give at most one of --input, --interrupt, --wait, --reset" in r.err
    r = invoke(agent.run_run, command=["sleep 20"], timeout=1)
    assert r.code == 124 and "timed out" in r.err
    invoke(agent.run_run, command=[], reset=True)


def test_write_from_stdin_read_and_edit(here, backend):
    r = invoke(agent.run_write, stdin="from stdin\n", path="piped.txt")
    assert r.code == 0 and (here.workspace / "piped.txt").read_text() == "from stdin\n"
    assert invoke(agent.run_read, path="piped.txt").out == "from stdin\n"
    r = invoke(agent.run_edit, path="piped.txt", replace=("stdin", "a test"))
    assert r.code == 0 and (here.workspace / "piped.txt").read_text() == "from a test\n"
    r = invoke(agent.run_edit, path="piped.txt", undo=True, view=True)
    assert r.code == 2 and "exactly one of --create, --replace, --insert, --undo, --view" in r.err


def test_refusals_become_exit_codes_with_the_error_id(here, backend):
    r = invoke(agent.run_read, path="/etc/hostname")
    assert r.code == 6 and "PATH_DENIED" in r.err
    r = invoke(agent.run_read, path="x", instance="nosuchid")
    assert r.code == 3 and "no running backend with instance id 'nosuchid'" in r.err and "oh status" in r.err


def test_background_job_wait_output_poll_and_list(here, backend):
    r = invoke(agent.run_run, command=["echo first; sleep 0.3; echo second; exit 5"], background=True)
    jid = r.out.strip()
    assert r.code == 0 and jid.startswith("j")
    r = invoke(jobs.run_wait, job_id=jid)
    assert (r.code, r.out) == (5, "first\nsecond\n")
    assert invoke(jobs.run_output, job_id=jid, offset=6).out == "second\n"
    r = invoke(jobs.run_poll, job_id=jid)
    assert r.err.startswith(f"{jid}  FAILED (exit 5)") and r.out == "first\nsecond\n"
    listed = json.loads(invoke(jobs.run_jobs, json_=True).out)
    assert [j["job_id"] for j in listed] == [jid]
    table = invoke(jobs.run_jobs).out.splitlines()
    assert table[0].split() == ["ID", "STATE", "EXIT", "TIME", "COMMAND"] and table[1].startswith(jid)


def test_wait_timeout_then_cancel(here, backend):
    jid = invoke(agent.run_run, command=["echo started; sleep 60"], background=True).out.strip()
    r = invoke(jobs.run_wait, job_id=jid, timeout=0.5)
    assert r.code == 124 and f"job {jid} is still running after 0.5 s" in r.err
    r = invoke(jobs.run_cancel, job_id=jid)
    assert r.code == 0 and "cancelled" in r.out
    r = invoke(jobs.run_wait, job_id=jid)
    assert r.code == 130 and "was cancelled" in r.err
    r = invoke(jobs.run_wait, job_id="j999")
    assert r.code == 6 and r.err.startswith("oh: ")


def test_background_needs_a_command(here, backend):
    r = invoke(agent.run_run, command=["  "], background=True)
    assert r.code == 2 and "give the command to start" in r.err


def test_write_modes_and_stat(here, backend):
    r = invoke(agent.run_write, path="notes/a.txt", content="one\n", create=True)
    assert r.code == 0 and r.out.startswith("created 4 bytes as ")
    r = invoke(agent.run_write, path="notes/a.txt", content="two\n", create=True)
    assert r.code == 0 and "already exists" in r.out
    invoke(agent.run_write, path="notes/a.txt", content="three\n", append=True)
    assert (here.workspace / "notes/a.txt").read_text() == "one\nthree\n"
    info = json.loads(invoke(jobs.run_stat, path="notes/a.txt", json_=True).out)
    assert info["exists"] is True and info["size"] == 10
    assert invoke(jobs.run_stat, path="notes/missing").code == 1
    r = invoke(agent.run_write, path="x", content="y", append=True, create=True)
    assert r.code == 2 and "give exactly one of --append, --create" in r.err
