"""Property (issue 36 #1, docs/security.md §11.1): whatever the sandboxed agent prepared in its shell and in every
directory its sandbox can write, an approved one-shot has exactly the effects of the approved text run by
``bash --norc --noprofile -c`` with the same clean environment (``oneshot.command_env``): the same output, the same
files written, and none of the planted code run (its marker files stay absent).

A real ``LocalRuntime`` whose agent shell is in real bubblewrap; the one-shot is started as the consent gate passes an
allowed escalation on (``Action.unsandboxed``)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import secrets
import shlex
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oh.protocol import sandbox as rules
from oh.protocol.events import parse_action
from oh.runtimes.local import LocalRuntime, oneshot
from sandboxed import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.slow, pytest.mark.timeout(600)]

NAMES = ("git", "ls", "cat", "env", "sort", "head", "bash", "printf", "grep")
WORDS = st.sampled_from(["a", "b c", "x'y", "$HOME", "*", "-n", "é", ""])
FILES = st.sampled_from(["f1", "f2", "sub f"])

# Statements of the approved text: each prints or writes something a leak would change.
STATEMENTS = st.one_of(
    WORDS.map(lambda w: f"echo {shlex.quote(w)}"),
    st.tuples(WORDS, FILES).map(lambda t: f"printf '%s\\n' {shlex.quote(t[0])} > {shlex.quote(t[1])}"),
    st.tuples(WORDS, FILES).map(lambda t: f"echo {shlex.quote(t[0])} >> {shlex.quote(t[1])}"),
    FILES.map(lambda f: f"cat {shlex.quote(f)} 2>/dev/null || echo missing"),
    st.sampled_from(NAMES).map(lambda n: f"type -t {n} || echo none; command -v {n} || echo none"),
    st.just('echo "PC=${PROMPT_COMMAND-unset} BE=${BASH_ENV-unset} E=${ENV-unset} F=${FOO-unset} B=${BAR-unset}"'),
    st.just("alias; trap -p; declare -F; echo $-"),
    st.just("env | grep -Ev '^(_|PWD|OLDPWD)=' | LC_ALL=C sort"),
    st.just("git --version | head -c 11; echo"),
    st.just("ls | LC_ALL=C sort"),
)
APPROVED = st.lists(STATEMENTS, min_size=1, max_size=5).map("\n".join)
ACTION_ENV = st.dictionaries(st.sampled_from(["FOO", "BAR"]), st.sampled_from(["1", "two words", "$x"]), max_size=2)

# What the agent prepares in its own (sandboxed) shell; {m} is a marker directory outside the sandbox.
PREPARATIONS = {
    "path": 'export PATH="$PWD/evil:/tmp/evil:$PATH"',
    "hooks": 'export PROMPT_COMMAND=\'touch {m}/prompt-command\'; export BASH_ENV="$PWD/evil/rc" ENV="$PWD/evil/rc"',
    "functions": "".join(f"function {n} {{ touch {{m}}/function-{n}; }}; export -f {n}; " for n in NAMES),
    "aliases": "".join(f"alias {n}='touch {{m}}/alias-{n};'; " for n in NAMES),
    "traps": "trap 'touch {m}/trap 2>/dev/null' DEBUG RETURN ERR",
    "vars": "export FOO=agent BAR=agent LC_ALL=C.agent",
    # the host's /tmp holds whatever other programs left there (thousands of files on a busy machine): the loop is
    # quiet, or its refusals' output alone got the preparation killed (exit 137) -- a test inheriting the machine
    "scratch": 'for f in /tmp/oh-*/*; do [ -f "$f" ] && printf \'\\ntouch {m}/scratch\\n\' >> "$f"; done 2>/dev/null',
}
PREPS = st.lists(st.sampled_from(sorted(PREPARATIONS)), unique=True)


def _plant(m: str) -> str:
    """Programs named like the approved text's in every directory the sandbox can write, and rc files there."""
    body = f"#!/bin/sh\\ntouch {m}/planted\\necho PWNED\\n"
    dirs = '"$PWD/evil" /tmp/evil "$HOME/.cache" "$PWD" /tmp/oh-*'
    make = "".join(f'printf \'{body}\' > "$d/{n}"; chmod +x "$d/{n}" 2>/dev/null; ' for n in NAMES)
    rcs = "".join(f"printf 'touch {m}/rc\\n' > \"$d/{rc}\" 2>/dev/null; " for rc in (".bashrc", ".profile", "rc"))
    return f"mkdir -p evil /tmp/evil; for d in {dirs}; do {make}{rcs}done 2>/dev/null; true"


async def _one_shot(ws: Path, env: dict, preps: list[str], marks: Path, text: str, action_env: dict, out: Path):
    rt = LocalRuntime(ws, env=env, sandbox=rules.Spec(), sandbox_hidden=())
    try:
        prep = "\n".join([_plant(str(marks))] + [PREPARATIONS[p].replace("{m}", str(marks)) for p in preps])
        # the hostile preparation runs a DEBUG trap around ~200 commands: minutes on a loaded machine, so its own
        # deadline is long (the default cut it at 137 while 6 other jobs ran: a flaky failure, not a finding)
        args = {"command": prep + "\necho prepared", "blocking": True}
        frame = {"id": 1, "action": "run", "args": args, "timeout": 600}
        obs = await rt.execute(parse_action(frame), "agent")
        assert "prepared" in obs["content"], obs
        out.mkdir()  # after the preparation, under a name the agent did not know
        args = {"command": text, "blocking": True, "sandbox": "off", "reason": "r", "cwd": str(out)}
        frame = {"id": 2, "action": "run", "args": args, "timeout": 60}
        if action_env:
            args["env"] = action_env
        action = dataclasses.replace(parse_action(frame), unsandboxed=True)  # what the consent gate passes on
        obs = await rt.execute(action, "agent")
        assert obs["observation"] == "run", obs
        return obs["content"], rt.env
    finally:
        await rt.close()


def _files(d: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(d.iterdir())}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=APPROVED, action_env=ACTION_ENV, preps=PREPS)
def test_a_one_shot_has_the_effects_of_the_approved_text_in_a_clean_bash(tmp_path_factory, text, action_env, preps):
    tmp = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp()))
    home, ws, marks = tmp / "home", tmp / "ws", tmp / "marks"
    for d in (home / ".cache", ws, marks):
        d.mkdir(parents=True)
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "LANG": "C.UTF-8", "SHELL": "/bin/bash", "USER": "u"}
    out = ws / f"out-{secrets.token_hex(4)}"
    content, rt_env = asyncio.run(_one_shot(ws, env, preps, marks, text, action_env, out))
    ref_dir = tmp / "ref"
    ref_dir.mkdir()
    cenv = oneshot.command_env(rt_env, action_env)
    ref = subprocess.run(
        [oneshot.bash_path(rt_env), "--norc", "--noprofile", "-c", text],
        cwd=ref_dir,
        env=cenv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert sorted(p.name for p in marks.iterdir()) == []  # no planted code ran outside the sandbox
    assert "PWNED" not in content
    assert _files(out) == _files(ref_dir)
    got = content.replace("\r\n", "\n").strip().splitlines()
    want = ref.stdout.decode("utf-8", "replace").strip().splitlines()
    assert [line.rstrip() for line in got] == [line.rstrip() for line in want]
