"""An approved one-shot outside the sandbox starts clean (README "Sandbox", docs/security.md §11.1): the main shell's
exports do not reach it (issue 36: an exported PATH or PROMPT_COMMAND rode along), and the `export -p` snapshot the
confined agent's shell writes is never run there (before: it was sourced there, and a rewritten one ran)."""

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


def test_an_unsandboxed_one_shot_gets_no_exports_and_never_runs_a_rewritten_snapshot(oh):
    oh.start()
    assert oh.run_json("export OH_T_BAR='q \"x' OH_TOKEN=leak")["extras"]["metadata"]["exit_code"] == 0
    assert _escalated(oh, 'printf \'%s|\' "${OH_T_BAR-unset}" "${OH_TOKEN-no token}"') == "unset|no token|\n"
    pwn, pwn2 = oh.outside / "pwn", oh.outside / "pwn2"
    # The agent rewrites the snapshot and stops its shell from writing a fresh one at the prompt.
    evil = f'declare -x OH_T_FOO="$(touch {pwn2})"\\ntouch {pwn}\\n'
    assert oh.run_json(f"printf '{evil}' >| \"$__oh_snap\"; __oh_snap=")["extras"]["metadata"]["exit_code"] == 0
    out = _escalated(oh, "printf '%s|' \"${OH_T_FOO-unset}\"")
    assert out == "unset|\n", out  # neither run nor carried over
    assert not pwn.exists() and not pwn2.exists(), "the confined agent's text ran outside the sandbox"
