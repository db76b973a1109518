"""Property (issue 25): whatever bash executes for a command line the gate allows is a part the gate saw.

Hypothesis generates command lines from a grammar of the constructs the parser follows and of those it
must refuse (wrappers with their options, -c payloads, substitutions, heredocs, assignments bash
evaluates, eval, functions...). Each line is decided at level ``commands`` with allow rules for every
program of the grammar; when the gate ALLOWS it, the line runs in a real bash in a scratch directory and
every program bash executed must be a part some allow rule matched, with the same arguments when the
part's words were known before run time.

How bash is observed: PATH holds only two directories: shims (p1, p2, p3, q: each appends its name and
argv to a log, then exits 0) and the real wrappers (env, nohup, timeout, nice, xargs, find, stdbuf, sh,
bash, cat, true). A program bash runs through any route (a wrapper, a payload, $( ), arithmetic,
xargs, find -exec) is exec'd by name from PATH, so the log is exactly what ran, with its final argv;
`set -x` or a DEBUG trap would also show builtins, but print words in bash's own quoting (and a DEBUG
trap is itself one of the constructs under test)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oh.protocol import shellparse
from oh.protocol.consent import Policy, decide, parse_rules

pytestmark = pytest.mark.slow

SHIMS = ("p1", "p2", "p3", "q")
REAL = ("env", "nohup", "timeout", "nice", "xargs", "find", "stdbuf", "sh", "bash", "cat", "true", "sleep")
WS = "/scratch-ws"
POLICY = Policy(
    "commands",
    parse_rules(
        [f"run: {s} *" for s in SHIMS] + ["run: cat *", "run: true *", "run: echo *", "run: read *", "run: printf *"]
    ),
    WS,
    "/nonexistent-home",
    (),
)

prog = st.sampled_from(SHIMS)
lit = st.sampled_from(["a", "b", "-x", "--y", "1", "x=1", "-", "--", "-e", "-n"])
word = st.one_of(
    lit,
    lit.map(lambda w: f"'{w}'"),
    lit.map(lambda w: f'"{w}"'),
    st.just("$v"),
    st.just('"$v"'),
    st.just("${v}"),
    st.just("$'\\x61'"),
    prog.map(lambda p: f"$({p})"),
    prog.map(lambda p: f"`{p}`"),
    prog.map(lambda p: f'"$({p} z)"'),
)


@st.composite
def simple(draw) -> str:
    return " ".join([draw(prog)] + draw(st.lists(word, max_size=3)))


FOLLOWED_WRAPPERS = [
    "env {c}",
    "env -i {c}",
    "env -u X A=1 {c}",
    "env -- {c}",
    "nohup {c}",
    "nohup -- {c}",
    "timeout 5 {c}",
    "timeout -k 1 5 {c}",
    "timeout --kill-after=1 -s TERM 5 {c}",
    "nice {c}",
    "nice -n 1 {c}",
    "nice --adj 1 {c}",
    "stdbuf -oL {c}",
    "command {c}",
    "command -- {c}",
    "command -p {c}",
    "time -p {c}",
    "(exec {c})",
    "(exec -a z {c})",
    "echo a | xargs {c}",
    "echo a | xargs -e {c}",
    "echo a | xargs -eEOF {c}",
    "echo a | xargs --eof {c}",
    "echo a | xargs -n 1 {c}",
    "echo a | xargs -0 {c}",
    "echo a | xargs -I{{}} {c} {{}}",
    "echo a | xargs -i {c} {{}}",
    "find . -maxdepth 0 -exec {c} \\;",
    "find . -maxdepth 0 -exec {c} {{}} +",
    "bash -c '{c}'",
    "sh -c '{c}'",
    "bash -O extglob -c '{c}'",
    "bash -e -o pipefail -c '{c}'",
    "bash -xc '{c}' zero",
]
# What the gate must refuse to follow (so ask): each must never be allowed with a program it did not see.
REFUSED_WRAPPERS = [
    "env -iS'{c}'",
    "env --split-string='{c}'",
    "echo '{c}' | sh",
    "echo '{c}' | sh -s",
    "echo '{c}' | sh /dev/stdin",
    "echo '{c}' | bash -",
    "sh <<< '{c}'",
    "eval '{c}'",
    "builtin eval '{c}'",
]
FOLLOWED_COMPOUND = [
    "{c}; {d}",
    "{c} && {d}",
    "false || {c} | {d}",
    "( {c} )",
    "{{ {c}; }}",
    "if true; then {c}; fi",
    "for v in 1; do {c}; done",
    "[[ -n x && a < b ]] && {c}",
    "echo $({c})",
    "cat <<'E'\n{c}\nE\ntrue",
    "x=$({c}) true",
]
REFUSED_COMPOUND = [
    "f() {{ {c}; }}; f",
    "cat <<E\n$({c})\nE",
    "cat <<$'E'\nE\n{c}\n$'E'",
    "cat <({c})",
    "v='a[$({c})]'; OPTIND=v",
    "v='a[$({c})]'; [[ v -eq 1 ]]",
    "v='a[$({c})]'; echo ${{!v}}",
    "v='$({c})'; echo ${{v@P}}",
    "v='b[$({c})]'; a[v]=1",
    "printf -v 'a[$({c})]' %s 1",
    "read 'a[$({c})]' <<< 1",
    "trap '{c}' DEBUG; true; trap - DEBUG",
    "v={name}; $v",
]


def _fill(templates: list[str], inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(st.sampled_from(templates), inner, inner).map(
        lambda t: t[0].format(c=t[1], d=t[2], name=t[1].split()[0])
    )


def _grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    # followed constructs four times as often as refused ones: most lines are allowed and then run
    followed = _fill(FOLLOWED_WRAPPERS, inner) | _fill(FOLLOWED_COMPOUND, inner)
    refused = _fill(REFUSED_WRAPPERS, inner) | _fill(REFUSED_COMPOUND, inner)
    return st.one_of(followed, followed, followed, followed, refused)


commands = st.recursive(simple(), _grow, max_leaves=4)


def _ran(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [rec.split("\x1f")[:-1] for rec in log.read_text().split("\x1e") if rec]


def _covered(call: list[str], parts: tuple[shellparse.Part, ...]) -> bool:
    for p in parts:
        if p.name != call[0] or not any(r.words[0] == call[0] for r in POLICY.rules):
            continue
        if p.extra_args:
            return True  # xargs / find -exec add or replace arguments at run time: the rule allows any (`*`)
        if any(w.dynamic for w in p.words):
            if list(p.argv[1:]) == call[1 : len(p.argv)] or any(w.dynamic for w in p.words):
                return True
        elif list(p.argv) == call:
            return True
    return False


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("trace")
    shims, real = root / "shims", root / "real"
    shims.mkdir()
    real.mkdir()
    for name in SHIMS:
        path = shims / name
        path.write_text(
            '#!/bin/bash\nprintf \'%s\\x1f\' "${0##*/}" "$@" >> "$TRACE_LOG"; printf \'\\x1e\' >> "$TRACE_LOG"\n'
        )
        path.chmod(0o755)
    for name in REAL:
        found = shutil.which(name)
        assert found, f"{name} is needed by this test"
        os.symlink(found, real / name)
    env = {"PATH": f"{shims}:{real}", "HOME": str(root), "LC_ALL": "C"}
    return root, env


def test_what_bash_runs_is_what_the_gate_allowed(scratch) -> None:
    root, env = scratch
    tally = {"allowed": 0, "asked": 0}

    @settings(
        max_examples=160,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(commands)
    def check(line: str) -> None:
        decision = decide(POLICY, "run", {"command": line})
        if decision.verdict != "allow":
            tally["asked"] += 1
            return
        tally["allowed"] += 1
        log = root / "log"
        log.unlink(missing_ok=True)
        work = root / "cwd"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        subprocess.run(
            ["bash", "--norc", "--noprofile", "-c", line],
            cwd=work,
            env={**env, "TRACE_LOG": str(log)},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
        )
        parsed = shellparse.parse(line)
        for call in _ran(log):
            assert _covered(call, parsed.parts), (
                f"bash ran {call} for {line!r}, but the gate allowed it seeing only {[p.argv for p in parsed.parts]}"
            )

    check()
    # the property is not vacuous: a good share of the generated lines is allowed and then run
    print("TALLY", tally)
    assert tally["allowed"] >= 50 and tally["asked"] >= 25, tally
