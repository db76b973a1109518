"""Adversarial sizes and shapes at every input of oh (docs/security.md §3): no exception escapes, nothing
hangs (hang guards: a subprocess timeout or a receive timeout, generous, never a speed assert), the backend
still serves the next action, memory stays bounded, and the consent decision never allows what it could
not read (fail closed)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time

import pytest
from websockets.sync.client import connect

from oh.protocol import consent as rules
from oh.protocol.errors import ErrorId
from oh.runtimes import consent as gate

from .conftest import TOKEN, record

AUTH = {"Authorization": f"Bearer {TOKEN}"}
TAXONOMY = {e.value for e in ErrorId}
N = 5000  # nesting depth of each shape


def _nested(open_: str, inner: str, close: str, n: int = N) -> str:
    return open_ * n + inner + close * n


def _bash_c_levels() -> str:
    s = "true"
    while len(s) < 30_000:
        s = "bash -c " + shlex.quote(s)
    return s


# name -> command (built lazily: a literal would bloat pytest's ids and reprs)
RUN_SHAPES = {
    "subshells": lambda: _nested("( ", "true", " )"),
    "groups": lambda: _nested("{ ", "true;", " }"),
    "dollar-paren": lambda: "echo " + _nested("$(", "true", ")"),
    "backticks": lambda: "echo " + "`" * N,
    "if": lambda: _nested("if true; then ", "true; ", "fi; "),
    "while": lambda: _nested("while true; do ", "true; ", "done; "),
    "for": lambda: _nested("for x in a; do ", "true; ", "done; "),
    "case": lambda: _nested("case a in a) ", "true", " ;; esac"),
    "test": lambda: _nested("[[ ", "a", " ]]"),
    "bash-c-quoted": _bash_c_levels,
    "env": lambda: "env " * N + "true",
    "xargs": lambda: "xargs " * N + "true",
    "sudo": lambda: "sudo -u x " * N + "true",
    "timeout": lambda: "timeout 1 " * N + "true",
    "npx": lambda: "npx " * N + "true",
    "heredocs": lambda: "cat <<E\nx\nE\n" * 10_000,
    "heredocs-one-line": lambda: "cat " + "<<E " * 3000 + "\n" + "x\nE\n" * 3000,
    "pipes": lambda: "true|" * 30_000 + "true",
    "semicolons": lambda: "true;" * 30_000,
    "arguments": lambda: "echo " + "a " * 100_000,
    "word-64k": lambda: "a" * 65_000,
    "quoted-escapes": lambda: 'echo "' + '\\"' * 30_000 + '"',
    "continuations": lambda: "\\\n" * 30_000,
    "redirections": lambda: "true" + " >a" * 20_000,
    "nul": lambda: "echo a\x00b",
    "surrogate": lambda: "echo \ud800",
}
# Shapes that nest past what the checker follows: never allowed outside level never.
UNREADABLE = {"subshells", "dollar-paren", "npx", "nul", "surrogate"}
POLICIES = {
    "risky": rules.Policy("risky", workspace="/ws"),
    "rules": rules.Policy(
        "never", rules.parse_rules(allow=["run: true *", "run: echo *", "run: cat *"], deny=["run: rm *"]), "/ws"
    ),
}

_DECIDE_ALL = """
import json, sys, time
sys.path[:0] = {path!r}
from tests.security.test_sizes import RUN_SHAPES, POLICIES
from oh.protocol import consent as rules
out = {{}}
for name, make in RUN_SHAPES.items():
    cmd = make()
    for pname, policy in POLICIES.items():
        t = time.perf_counter()
        try:
            d = rules.decide(policy, "run", {{"command": cmd}})
            got = [d.verdict, d.reason[:120]]
        except BaseException as exc:
            got = ["EXC", type(exc).__name__ + ": " + str(exc)[:200]]
        out[name + "/" + pname] = got + [round(time.perf_counter() - t, 4)]
print(json.dumps(out))
"""


def _root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_run_shapes_decide_without_crash_or_hang():
    """Every shape in one subprocess (a hang guard for all of them): a verdict, never an exception; the
    shapes the checker cannot follow are never allowed."""
    code = _DECIDE_ALL.format(path=[_root(), os.path.join(_root(), "src")])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    crashed = {k: v for k, v in out.items() if v[0] == "EXC"}
    assert not crashed, crashed
    allowed = {k: v for k, v in out.items() if k.split("/")[0] in UNREADABLE and v[0] == "allow"}
    assert not allowed, allowed
    worst = sorted(out.items(), key=lambda kv: -kv[1][2])[:3]
    record("sizes: slowest consent decisions (s)", {k: v[2] for k, v in worst})


# ----------------------------------------------------------------------------- paths (real files, the gate's I/O half)
@pytest.fixture
def tree(tmp_path):
    """A workspace with a symlink loop that doubles at each level (a -> ., b -> .) and a chain of 1,500
    symlinks (deeper than Python 3.11's recursive realpath can follow)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("x")
    os.symlink(".", ws / "a")
    os.symlink(".", ws / "b")
    chain = ws / "chain"
    chain.mkdir()
    for i in range(1500):
        os.symlink(f"s{i + 1}", chain / f"s{i}")
    (chain / "s1500").write_text("end")
    os.symlink("loop2", ws / "loop1")
    os.symlink("loop1", ws / "loop2")
    return ws


PATH_SHAPES = {
    "1MB": lambda: "a" * (1 << 20),
    "components": lambda: "d/" * 10_000 + "x",
    "dotdots": lambda: "../" * 10_000 + "etc/passwd",
    "glob-components": lambda: "*/" * 10_000 + "x",
    "glob-loop": lambda: "*/" * 30 + "nomatch",
    "glob-brackets": lambda: "[" * 100_000,
    "glob-questions": lambda: "?/" * 5000 + "x",
    "symlink-chain": lambda: "chain/s0",
    "symlink-loop": lambda: "loop1/x",
    "nul": lambda: "a\x00b",
    "surrogate": lambda: "\udcff",
    "lone-surrogate": lambda: "\ud800",
}
GLOBS = {"glob-components", "glob-loop", "glob-brackets", "glob-questions"}


def _gate_decide(policy: rules.Policy, kind: str, args: dict, base: str) -> rules.Decision:
    """What the runtime gate does (``ConsentRuntime.where`` then ``decide``), without an inner runtime."""
    paths, unresolved = {}, []
    for typed in rules.places(kind, args):
        try:
            paths[typed] = gate._resolve_all(typed, base, policy)
        except gate.Unresolvable:
            unresolved.append(typed)
    return rules.decide(policy, kind, args, where=rules.Where(base, paths, unresolved=tuple(unresolved)))


@pytest.mark.parametrize("shape", sorted(PATH_SHAPES))
def test_path_shapes_resolve_and_decide(tree, shape):
    """read/write/run paths of every shape: a verdict, no exception; a glob or a chain the gate could not
    walk whole is never allowed by an allow rule."""
    policy = rules.Policy(
        "risky", rules.parse_rules(allow=["write: **", "read: **", "run: cat *"], deny=["read: ~/.ssh/**"]), str(tree)
    )
    path = PATH_SHAPES[shape]()
    for kind, args in (("read", {"path": path}), ("write", {"path": path, "content": ""})):
        t = time.perf_counter()
        d = _gate_decide(policy, kind, args, str(tree))
        assert d.verdict in rules.VERDICTS
        if shape in GLOBS or shape == "symlink-chain":
            assert d.verdict == "ask", (kind, d)
        assert time.perf_counter() - t < 30  # hang guard only (the slowest shape takes ~0.1 s)
    d = _gate_decide(policy, "run", {"command": "cat " + shlex.quote(path[:60_000])}, str(tree))
    assert d.verdict in rules.VERDICTS


def test_consent_rules_from_config_are_bounded():
    """10,000 rules and a 100 KB pattern are refused with a RuleError that says the bound (a CLI message)."""
    with pytest.raises(rules.RuleError, match="at most"):
        rules.parse_rules(allow=[f"run: tool{i} *" for i in range(10_000)])
    with pytest.raises(rules.RuleError, match="at most"):
        rules.parse_rules(allow=["run: " + "a" * 100_000])
    with pytest.raises(rules.RuleError, match="at most"):
        rules.parse_rules(deny=["write: " + "*a" * 50_000])


# ----------------------------------------------------------------------------- the agent WebSocket
def _rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _ask(ws, frame: str | dict, timeout: float = 60) -> dict:
    ws.send(frame if isinstance(frame, str) else json.dumps(frame))
    return json.loads(ws.recv(timeout=timeout))


def _still_serves(ws, n: int) -> None:
    obs = _ask(ws, {"id": n, "action": "run", "args": {"command": "echo alive"}, "timeout": 30})
    assert obs.get("cause") == n and "alive" in obs.get("content", ""), obs


BAD_FRAMES = {
    "nested-args": lambda: (
        '{"id": 5, "action": "run", "args": {"command": "true", "x": ' + "[" * 1000 + "]" * 1000 + "}}"
    ),
    "deep-json": lambda: '{"id": 5, "action": "run", "args": ' + '{"a":' * 100_000 + "1" + "}" * 100_001,
    "id-2**64": lambda: json.dumps({"id": 2**64, "action": "run", "args": {"command": "true"}}),
    "id-negative": lambda: json.dumps({"id": -1, "action": "run", "args": {"command": "true"}}),
    "id-float": lambda: json.dumps({"id": 1.5, "action": "run", "args": {"command": "true"}}),
    "id-string": lambda: json.dumps({"id": "9" * 10_000, "action": "run", "args": {"command": "true"}}),
    "id-huge-literal": lambda: '{"id": ' + "9" * 5000 + ', "action": "run", "args": {"command": "true"}}',
    "timeout-nan": lambda: '{"id": 5, "action": "run", "args": {"command": "true"}, "timeout": NaN}',
    "timeout-inf": lambda: '{"id": 5, "action": "run", "args": {"command": "true"}, "timeout": Infinity}',
    "timeout-negative": lambda: json.dumps({"id": 5, "action": "run", "args": {"command": "true"}, "timeout": -1}),
    "timeout-huge": lambda: json.dumps({"id": 5, "action": "run", "args": {"command": "true"}, "timeout": 1e308}),
    "args-timeout-huge": lambda: json.dumps({"id": 5, "action": "run", "args": {"command": "true", "timeout": 1e308}}),
    "kind-huge": lambda: json.dumps({"id": 5, "action": "k" * (1 << 20), "args": {}}),
    "keys-100k": lambda: json.dumps({"id": 5, "action": "run", "args": {f"k{i}": i for i in range(100_000)}}),
    "view-range-huge": lambda: json.dumps(
        {"id": 5, "action": "read", "args": {"path": "f.txt", "view_range": [1, 2**63]}}
    ),
    "view-range-neg": lambda: json.dumps(
        {"id": 5, "action": "read", "args": {"path": "f.txt", "view_range": [-(2**63), 2**64]}}
    ),
    "path-1MB": lambda: json.dumps({"id": 5, "action": "read", "args": {"path": "a" * (1 << 20)}}),
    "command-1MB": lambda: json.dumps({"id": 5, "action": "run", "args": {"command": "true " + "a" * (1 << 20)}}),
    "subshells": lambda: json.dumps({"id": 5, "action": "run", "args": {"command": _nested("( ", "true", " )")}}),
    "glob-components": lambda: json.dumps({"id": 5, "action": "read", "args": {"path": "*/" * 10_000 + "x"}}),
}


def test_agent_frames_of_every_size(threaded_backend, workspace):
    """Each bad frame gets one observation (a result or a typed error), the backend serves the next action."""
    (workspace / "f.txt").write_text("one\ntwo\n")
    policy = rules.Policy("risky", rules.parse_rules(allow=["run: echo *", "run: true *", "read: **"]), str(workspace))
    tb, b = threaded_backend("local", consent=policy, approval_timeout=1.0)
    got = {}
    with connect(f"ws://127.0.0.1:{b.port}/v1/agent", additional_headers=AUTH, max_size=None) as ws:
        for n, (name, make) in enumerate(BAD_FRAMES.items()):
            obs = _ask(ws, make())
            assert obs.get("observation") and obs.get("cause") in (5, None), (name, obs)
            assert "already in flight" not in obs.get("content", ""), (name, obs)  # an earlier one never ended
            if obs["observation"] == "error":
                assert obs["extras"]["error_id"] in TAXONOMY, (name, obs)
                assert obs["extras"]["error_id"] != "SERVER_ERROR", (name, obs)  # a crash, not an answer
            got[name] = obs["observation"] + ":" + obs.get("extras", {}).get("error_id", "")
            _still_serves(ws, 1000 + n)
    assert not b.stopping
    record("sizes: agent frames", got)


_RULE_MATCH = """
import sys
sys.path[:0] = {path!r}
from oh.protocol import consent as rules
pattern = "*a" * 120 + "b"  # 241 characters: a user's rule the backtracking regex needed hours for
policy = rules.Policy("risky", rules.parse_rules(deny=["write: " + pattern], allow=["write: " + pattern]), "/ws")
for path in ("a" * 4000, "a" * (1 << 20), "a" * 130 + "b"):
    print(rules.decide(policy, "write", {{"path": path, "content": ""}}).verdict)
"""


def test_path_rules_with_many_wildcards_match_without_backtracking():
    """A rule with many `*` against an agent's long path: an answer within the hang guard (the regex took
    hours); a path too long to open is matched by deny rules, never by allow rules."""
    code = _RULE_MATCH.format(path=[_root(), os.path.join(_root(), "src")])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["allow", "deny", "deny"]


def test_path_rule_automaton_agrees_with_the_regex():
    """The linear matcher answers exactly what the glob regex answers (random small patterns and paths)."""
    import random

    rnd = random.Random(7)
    atoms = ["*", "**", "**/", "?", "a", "b", "/", "."]
    for _ in range(5000):
        pattern = "".join(rnd.choice(atoms) for _ in range(rnd.randint(1, 7)))
        path = "".join(rnd.choice("ab/.") for _ in range(rnd.randint(0, 9)))
        expected = rules._glob_regex(pattern).match(path) is not None
        assert rules._glob_nfa(rules._glob_tokens(pattern), path) == expected, (pattern, path)


def test_edit_and_read_extremes_over_the_wire(threaded_backend, workspace):
    """edit with 100,000 occurrences (a bounded message, linear line numbering), a 1 MB old_str, a 16 MB write
    and read, view_range to 2**63; RSS stays bounded while 100 frames of 1 MB arrive; the backend serves on."""
    (workspace / "many.txt").write_text("ab\n" * 100_000)
    (workspace / "one.txt").write_text("x" * (1 << 20))
    tb, b = threaded_backend("local")
    with connect(f"ws://127.0.0.1:{b.port}/v1/agent", additional_headers=AUTH, max_size=None) as ws:
        edit = {"path": "many.txt", "command": "str_replace", "old_str": "ab", "new_str": "c"}
        obs = _ask(ws, {"id": 1, "action": "edit", "args": edit})
        assert obs["extras"]["error_id"] == "TOOL_ERROR" and "(100000 in all)" in obs["content"], obs["content"][:300]
        assert len(obs["content"]) < 20_000
        edit = {"path": "one.txt", "command": "str_replace", "old_str": "x" * (1 << 20), "new_str": "y"}
        assert _ask(ws, {"id": 2, "action": "edit", "args": edit})["observation"] == "edit"
        assert (workspace / "one.txt").read_text() == "y"
        assert (
            _ask(ws, {"id": 3, "action": "write", "args": {"path": "w.txt", "content": "q" * (16 << 20)}})[
                "observation"
            ]
            == "write"
        )
        assert len(_ask(ws, {"id": 4, "action": "read", "args": {"path": "w.txt"}})["content"]) >= 16 << 20
        obs = _ask(ws, {"id": 5, "action": "read", "args": {"path": "many.txt", "view_range": [1, 2**63]}})
        assert obs["observation"] == "error" and obs["extras"]["error_id"] != "SERVER_ERROR", obs
        before = _rss_kb()
        for i in range(100):
            args = {"path": f"m{i % 3}.txt", "content": "z" * (1 << 20)}
            assert _ask(ws, {"id": 10 + i, "action": "write", "args": args})["observation"] == "write"
        grown = (_rss_kb() - before) // 1024
        record("sizes: RSS growth over 100 x 1 MB writes (MB)", grown)
        assert grown < 300, grown  # a generous cap: each frame is freed once answered
        _still_serves(ws, 200)


def test_cli_refuses_oversized_consent_rules_with_a_message(tmp_path):
    """`oh config set consent_allow <100 KB>`: a clear message and exit code 2 (usage), nothing stored."""
    env = {**os.environ, "OH_HOME": str(tmp_path / "oh"), "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    env.pop("OH_CONSENT_ALLOW", None)
    cmd = [sys.executable, "-m", "oh", "config", "set", "consent_allow", "run: " + "a" * 100_000]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    assert "at most 500 characters" in proc.stderr and "Traceback" not in proc.stderr
