"""Approved one-shots carry exactly what the user approved (issue 36 #1, docs/security.md §11.1), on a real `oh start`
whose agent shell is in real bubblewrap.

The sandboxed agent prepares everything it can before asking: a PATH with a planted `git`, PROMPT_COMMAND, BASH_ENV,
an exported function and an alias named `git`, a DEBUG trap, and a background watcher that appends its code to every
file it can see in oh's scratch directories (where the one-shot's init and run files used to be). Then the user
approves `git --version` outside the sandbox (and with the network). Each planted piece would make a marker file
outside the sandbox if its code ran there: none may appear, and the real git answers."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from sandboxed import needs_bwrap

from .helpers import AGENT_WAIT, connect_agent

pytestmark = [needs_bwrap, pytest.mark.timeout(180), pytest.mark.skipif(not shutil.which("git"), reason="no git")]

PLANTS = ("planted-git", "prompt-command", "bash-env", "function", "alias", "trap", "watcher")

# The watcher: appends a line making a marker to every file it can see in oh's scratch directories, again and again
# (each file once), for as long as the agent's sandbox lives.
WATCHER = r"""
while :; do
  for f in /tmp/oh-*/* /tmp/oh-*/*/* /tmp/oh-*/.[!.]*; do
    [ -f "$f" ] || continue
    case $(tail -c 300 "$f" 2>/dev/null) in *PLANTED*) continue ;; esac
    printf '\n{ touch %s/watcher; } 2>/dev/null # PLANTED\n' "$1" >>"$f" 2>/dev/null
  done
done
"""


def _preparation(out: str) -> str:
    return f"""
mkdir -p evil && printf '#!/bin/sh\\ntouch {out}/planted-git\\n' > evil/git && chmod +x evil/git
export PATH="$PWD/evil:$PATH"
export PROMPT_COMMAND='touch {out}/prompt-command 2>/dev/null'
printf 'touch {out}/bash-env 2>/dev/null\\n' > benv && export BASH_ENV="$PWD/benv"
git() {{ touch {out}/function; }}; export -f git
alias git='touch {out}/alias 2>/dev/null;'
trap 'touch {out}/trap 2>/dev/null' DEBUG
cat > watcher.sh <<'EOF'
{WATCHER}
EOF
nohup bash watcher.sh {out} >/dev/null 2>&1 &
echo prepared
"""


def _escalate(client, command: str, how: str):
    return asyncio.ensure_future(client.run(command, blocking=True, timeout=30, **{how: "check the git version"}))


@pytest.mark.parametrize("how", ["unsandboxed", "network"])
async def test_an_approved_one_shot_runs_none_of_what_the_agent_planted(oh, how):
    oh.start()  # consent never: leaving the sandbox is still asked
    out = oh.outside
    client = await connect_agent(oh)
    try:
        obs = await client.run(_preparation(str(out)), blocking=True, timeout=30)
        assert "prepared" in obs.content, obs
        # the preparation is in place in the agent's own shell (inside the sandbox: its markers cannot be made)
        obs = await client.run("type -t git; echo PC=$PROMPT_COMMAND", blocking=True, timeout=30)
        assert "alias" in obs.content and "prompt-command" in obs.content, obs
        probe = 'git --version; echo "PC=${PROMPT_COMMAND-unset} BE=${BASH_ENV-unset}"; type -t git; alias; trap -p'
        task = _escalate(client, probe, how)
        [row] = await asyncio.to_thread(oh.pending)
        assert (await asyncio.to_thread(oh, "approve", row["id"])).returncode == 0
        obs = await asyncio.wait_for(task, AGENT_WAIT)
        made = sorted(p.name for p in out.iterdir())
        assert made == [], made  # the real effect: none of the planted code ran outside the sandbox
        assert "git version" in obs.content and "PC=unset BE=unset" in obs.content, obs
        assert "\nfile" in obs.content and "alias " not in obs.content and "trap --" not in obs.content, obs
        # a second one-shot after the watcher had all the time of the first: still nothing of it ran
        task = _escalate(client, "git --version", how)
        [row] = await asyncio.to_thread(oh.pending)
        assert (await asyncio.to_thread(oh, "approve", row["id"])).returncode == 0
        obs = await asyncio.wait_for(task, AGENT_WAIT)
        assert "git version" in obs.content, obs
    finally:
        await client.close()
        oh.stop()
    made = sorted(p.name for p in out.iterdir())
    assert made == [], made
    assert set(made) <= set(PLANTS)
