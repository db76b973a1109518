"""Issue 18 (B5, C7-C17): what a new user hit, called in-process (``run_*``) against real backends.

What needs a real ``oh`` process (exit status of ``oh`` itself, a terminal, signals) is in
test_newuser.py.
"""

from __future__ import annotations

import json

import pytest

from oh.commands import agent, jobs
from oh.commands.start import run_start
from oh.commands.stop import run_stop

from .inprocess import here, invoke  # noqa: F401 - `here` is a fixture


# B5: `--allow ''` and a relative `--allow`
def test_empty_allow_is_refused_before_anything_starts(here):
    for empty in ("", "  "):
        r = invoke(run_start, runtime="local", workspace=str(here.workspace), detach=True, allow=[empty])
        assert r.code == 2 and "--allow '' names no directory" in r.err, r
    assert not (here.home / "sessions").exists() or not list((here.home / "sessions").glob("*.json"))


def test_relative_allow_says_what_it_resolved_to(here):
    (here.workspace / "scratch").mkdir()
    r = invoke(
        run_start,
        runtime="local",
        workspace=str(here.workspace),
        detach=True,
        json_=True,
        open_=False,
        allow=["scratch"],
    )
    assert r.code == 0, r
    info = json.loads(r.out)
    here.started.append(info)
    notes = {w["id"]: w["message"] for w in info["warnings"]}
    assert notes["allow_relative"] == (
        f"note: --allow scratch is relative: it allows {here.workspace / 'scratch'} "
        "(resolved against the current directory)."
    )
    assert here.session(info["instance_id"])["allowed_roots"] == [str(here.workspace), str(here.workspace / "scratch")]


# C11: advice that can be followed
@pytest.fixture
def backend(here):
    return here.start("local")


def test_cli_errors_give_cli_advice_not_the_agents(here, backend):
    (here.workspace / "blob.bin").write_bytes(bytes(range(256)) * 4)
    r = invoke(agent.run_read, path="blob.bin")
    assert r.code == 6 and "`oh run -- base64 FILE`" in r.err and "args.encoding" not in r.err, r
    r = invoke(jobs.run_wait, job_id="j99")
    assert r.code == 6 and "job action op list" not in r.err and "`oh jobs` lists the jobs" in r.err, r


def test_a_hard_timeout_says_nothing_is_left_running_and_wait_agrees(here, backend):
    r = invoke(agent.run_run, command=["sleep 30"], timeout=1)
    assert r.code == 124 and "was killed" in r.err and "nothing is left running in the `oh run` shell" in r.err, r
    assert "still running" not in r.err and "--interrupt" not in r.err
    r = invoke(agent.run_run, command=[], wait=True)
    assert r.code == 6 and "nothing is running in the `oh run` shell" in r.err  # the same story


def test_stop_with_nothing_running_does_not_advise_starting_one(here):
    r = invoke(run_stop)
    assert r.code == 3 and "nothing to stop" in r.err and "oh start" not in r.err, r
    (here.tmp / "other").mkdir()
    info = here.start("local", here.tmp / "other")
    r = invoke(run_stop, workspace=str(here.workspace))
    assert r.code == 3 and f"Running elsewhere: {info['instance_id']}" in r.err and "oh start" not in r.err, r


def test_mcp_no_backend_text_says_what_oh_start_starts():
    from oh.mcp.backend import no_backend_message

    text = no_backend_message("/w", can_start=False)
    assert (
        "`oh start` (the live view; the actions run on this machine, the agent's shell sandboxed unless the config's "
        "`sandbox` is off, unless the config's `runtime` says vscode)"
    ) in text
    assert "`oh start --runtime vscode` (VS Code runs the actions, sandboxed the same way)" in text
    assert "no sandbox" not in text


def test_the_timeout_suffixes_of_both_runtimes_are_classified():
    from oh.protocol.events import run_observation
    from oh.text.fmt import timeout_of

    def obs(suffix, code=-1):
        return run_observation(1, "x", "", code, suffix=suffix)

    assert (
        timeout_of(
            obs(
                "\n[The command timed out after 2 seconds and was killed, with every process of the shell "
                "(process group 9).]"
            )
        )
        == "killed"
    )
    # VS Code's runtime (extension/src/runstate.ts)
    assert timeout_of(obs("\n[The command timed out after 2 seconds and was interrupted (C-c).]")) == "interrupted"
    assert (
        timeout_of(obs("\n[The command timed out after 2 seconds and was interrupted (C-c) and then killed.]"))
        == "killed"
    )
    assert (
        timeout_of(obs("\n[The command timed out after 1.5 seconds and is still running. You may wait...]"))
        == "running"
    )
    assert timeout_of(obs("\n[The command has no new output after 30 seconds. You may wait...]")) is None
    assert timeout_of(obs("timed out after 2 seconds and was killed", code=0)) is None
