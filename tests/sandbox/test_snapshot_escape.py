"""The main shell's exports reach an approved one-shot outside the sandbox (README "Sandbox", docs/security.md),
and only they: the confined agent's shell writes the `export -p` snapshot they come from, so a snapshot it rewrote
must not run anything in that unconfined shell (before: it was sourced there, and did)."""

from __future__ import annotations

import pytest

from sandboxed import needs_bwrap

from .helpers import AGENT_WAIT, Oh

pytestmark = [needs_bwrap, pytest.mark.timeout(180)]


def _escalated(oh: Oh, command: str) -> str:
    proc = oh.agent("run", "--unsandboxed", "shows its environment", "--", command)
    [row] = oh.pending()
    assert oh("approve", row["id"]).returncode == 0
    out, err = proc.communicate(timeout=AGENT_WAIT)
    assert proc.returncode == 0, (out, err)
    return out


def test_an_unsandboxed_one_shot_gets_the_exports_and_never_runs_a_rewritten_snapshot(oh):
    oh.start()
    assert oh.run_json("export OH_T_BAR='q \"x' OH_TOKEN=leak")["extras"]["metadata"]["exit_code"] == 0
    assert _escalated(oh, 'printf \'%s|\' "$OH_T_BAR" "${OH_TOKEN-no token}"') == 'q "x|no token|\n'
    pwn, pwn2 = oh.outside / "pwn", oh.outside / "pwn2"
    # The agent rewrites the snapshot and stops its shell from writing a fresh one at the prompt.
    evil = f'declare -x OH_T_FOO="$(touch {pwn2})"\\ntouch {pwn}\\n'
    assert oh.run_json(f"printf '{evil}' >| \"$__oh_snap\"; __oh_snap=")["extras"]["metadata"]["exit_code"] == 0
    out = _escalated(oh, "printf '%s|' \"$OH_T_FOO\"")
    assert out == f"$(touch {pwn2})|\n", out  # a value, never run
    assert not pwn.exists() and not pwn2.exists(), "the confined agent's text ran outside the sandbox"
