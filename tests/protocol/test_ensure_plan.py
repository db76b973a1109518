"""oh.protocol.ensure: the pure plan (what to run given the files, tools, environment and stamp) as a table."""

from __future__ import annotations

import pytest

from oh.protocol import ensure as rules
from oh.protocol.errors import ProtocolError
from oh.protocol.events import parse_action, summarize

PY = "/usr/bin/python3.11"
TOOLS = {"npm": "/usr/bin/npm", "node": "/usr/bin/node"}


def facts(**kw):
    base = dict(
        files={},
        pyproject={},
        python=PY,
        python_id=f"{PY} 3.11.7",
        node_id="v20",
        tools=TOOLS,
        venv="missing",
        node_modules=False,
        stamps={},
    )
    base.update(kw)
    return rules.Facts(**base)


def stamp_for(f: rules.Facts, target: str) -> dict:
    """The stamp a successful run of today's plan would leave."""
    step = rules.plan(f, targets=(target,), force=True).step(target)
    return dict(step.stamp)


REQ = {"requirements.txt": "h1"}
PKG = {"package.json": "p1", "package-lock.json": "l1"}


def ready_python(files=REQ, **kw):
    f = facts(files=files, venv="ok", **kw)
    return facts(files=files, venv="ok", stamps={"python": stamp_for(f, "python")}, **kw)


def ready_node(files=PKG, **kw):
    f = facts(files=files, node_modules=True, **kw)
    return facts(files=files, node_modules=True, stamps={"node": stamp_for(f, "node")}, **kw)


CASES = [
    # (name, facts, target, action, command fragments that must appear, fragments that must not)
    ("nothing there", facts(), "python", None, [], []),
    (
        "pyproject with tool settings only is no project",
        facts(files={"pyproject.toml": "x"}, pyproject={"project": False, "build": False}),
        "python",
        None,
        [],
        [],
    ),
    (
        "requirements, no venv: create + pip",
        facts(files=REQ),
        "python",
        "install",
        [f"{PY} -m venv .venv", ".venv/bin/python -m pip install", "-r requirements.txt"],
        ["rm -rf"],
    ),
    (
        "all requirements files, sorted",
        facts(files={"requirements.txt": "a", "requirements-dev.txt": "b"}),
        "python",
        "install",
        ["-r requirements-dev.txt -r requirements.txt"],
        [],
    ),
    (
        "uv present: uv venv + uv pip",
        facts(files=REQ, tools={**TOOLS, "uv": "/bin/uv"}),
        "python",
        "install",
        ["/bin/uv venv --python", "/bin/uv pip install --python .venv/bin/python -r requirements.txt"],
        ["-m pip"],
    ),
    (
        "uv.lock with uv: uv sync --frozen",
        facts(
            files={"pyproject.toml": "p", "uv.lock": "u"}, pyproject={"project": True}, tools={**TOOLS, "uv": "/bin/uv"}
        ),
        "python",
        "install",
        ["/bin/uv sync --frozen"],
        ["pip install"],
    ),
    (
        "uv.lock without uv: pip -e . and says so",
        facts(files={"pyproject.toml": "p", "uv.lock": "u"}, pyproject={"project": True}),
        "python",
        "install",
        ["pip install", "-e ."],
        ["uv"],
    ),
    (
        "poetry.lock with poetry",
        facts(
            files={"pyproject.toml": "p", "poetry.lock": "l"},
            pyproject={"project": True},
            tools={**TOOLS, "poetry": "/bin/poetry"},
        ),
        "python",
        "install",
        ["-m venv .venv", "/bin/poetry install --no-interaction"],
        ["pip install"],
    ),
    (
        "setup.py only: editable",
        facts(files={"setup.py": "s"}),
        "python",
        "install",
        ["pip install --disable-pip-version-check -e ."],
        [],
    ),
    ("healthy venv, stamp matches: noop", ready_python(), "python", "noop", [], []),
    (
        "healthy venv, no stamp (interrupted or hand-made): install only, venv kept",
        facts(files=REQ, venv="ok"),
        "python",
        "install",
        ["pip install"],
        ["-m venv", "rm -rf"],
    ),
    (
        "broken venv: removed and recreated",
        facts(files=REQ, venv="broken", stamps=ready_python().stamps),
        "python",
        "install",
        ["rm -rf .venv", "-m venv .venv", "pip install"],
        [],
    ),
    (
        "changed requirement: install only",
        facts(files={"requirements.txt": "h2"}, venv="ok", stamps=ready_python().stamps),
        "python",
        "install",
        ["pip install"],
        ["-m venv", "rm -rf"],
    ),
    (
        "changed interpreter: rebuild",
        facts(files=REQ, venv="ok", python_id="/usr/bin/python3.12 3.12.1", stamps=ready_python().stamps),
        "python",
        "install",
        ["rm -rf .venv", "-m venv"],
        [],
    ),
    (
        "changed .python-version: rebuild",
        facts(
            files={**REQ, ".python-version": "v2"},
            venv="ok",
            stamps=ready_python(files={**REQ, ".python-version": "v1"}).stamps,
        ),
        "python",
        "install",
        ["rm -rf .venv"],
        [],
    ),
    (
        "stamp of another format version is not trusted",
        facts(files=REQ, venv="ok", stamps={"python": {**ready_python().stamps["python"], "oh_ensure": 99}}),
        "python",
        "install",
        ["pip install"],
        ["rm -rf"],
    ),
    ("no interpreter: refused", facts(files=REQ, python=None, python_id=""), "python", "refuse", [], []),
    ("npm lockfile: npm ci", facts(files=PKG), "node", "install", ["/usr/bin/npm ci"], []),
    (
        "no lockfile: npm install without writing one",
        facts(files={"package.json": "p"}),
        "node",
        "install",
        ["npm install", "--no-package-lock"],
        [" ci"],
    ),
    (
        "yarn.lock: yarn v1 frozen",
        facts(files={"package.json": "p", "yarn.lock": "y"}, tools={**TOOLS, "yarn": "/bin/yarn"}),
        "node",
        "install",
        ["/bin/yarn install --frozen-lockfile"],
        [],
    ),
    (
        "yarn berry: immutable",
        facts(files={"package.json": "p", "yarn.lock": "y", ".yarnrc.yml": "r"}, tools={**TOOLS, "yarn": "/bin/yarn"}),
        "node",
        "install",
        ["--immutable"],
        [],
    ),
    (
        "pnpm lock",
        facts(files={"package.json": "p", "pnpm-lock.yaml": "y"}, tools={**TOOLS, "pnpm": "/bin/pnpm"}),
        "node",
        "install",
        ["/bin/pnpm install --frozen-lockfile"],
        [],
    ),
    ("yarn.lock without yarn: refused", facts(files={"package.json": "p", "yarn.lock": "y"}), "node", "refuse", [], []),
    ("node ready: noop", ready_node(), "node", "noop", [], []),
    (
        "node_modules gone: reinstall",
        facts(files=PKG, node_modules=False, stamps=ready_node().stamps),
        "node",
        "install",
        ["npm ci"],
        [],
    ),
    (
        "lockfile changed: reinstall",
        facts(files={**PKG, "package-lock.json": "l2"}, node_modules=True, stamps=ready_node().stamps),
        "node",
        "install",
        ["npm ci"],
        [],
    ),
    (
        "node upgraded: reinstall",
        facts(files=PKG, node_modules=True, node_id="v22", stamps=ready_node().stamps),
        "node",
        "install",
        ["npm ci"],
        [],
    ),
]


@pytest.mark.parametrize("name,f,target,action,must,must_not", CASES, ids=[c[0] for c in CASES])
def test_plan_table(name, f, target, action, must, must_not):
    step = rules.plan(f, targets=(target,)).step(target)
    if action is None:
        assert step is None
        return
    assert step is not None and step.action == action, step
    for frag in must:
        assert frag in step.command, (frag, step.command)
    for frag in must_not:
        assert frag not in step.command, (frag, step.command)
    if action == "install":
        assert step.stamp["target"] == target and bool(step.check) == (target == "python")
    if action == "refuse":
        assert step.why and not step.command


def test_force_redoes_a_ready_environment():
    assert rules.plan(ready_python(), force=True).step("python").action == "install"
    assert "rm -rf .venv" in rules.plan(ready_python(), force=True).step("python").command
    assert rules.plan(ready_node(), force=True).step("node").action == "install"


def test_targets_filter_and_both_together():
    f = facts(files={**REQ, **PKG})
    assert [s.target for s in rules.plan(f).steps] == ["python", "node"]
    assert [s.target for s in rules.plan(f, targets=("node",)).steps] == ["node"]


def test_a_changed_input_changes_only_its_targets_stamp():
    a = facts(files={**REQ, **PKG})
    b = facts(files={**REQ, **PKG, "package-lock.json": "l2"})
    assert rules.plan(a).step("python").stamp == rules.plan(b).step("python").stamp
    assert rules.plan(a).step("node").stamp["deps"] != rules.plan(b).step("node").stamp["deps"]
    assert rules.plan(a).step("node").stamp["env"] == rules.plan(b).step("node").stamp["env"]


def test_other_ecosystems_detected_and_named():
    plan = rules.plan(facts(files={"Cargo.toml": "", "Pipfile": "", **REQ}))
    names = [n for n, _ in plan.other]
    assert names == ["Pipfile", "Cargo.toml"]
    assert all("not handled" in why for _, why in plan.other)


def test_paths_with_spaces_are_quoted():
    step = rules.plan(facts(files={"requirements dev.txt": "x"} | REQ, python="/opt/my py/python3")).step("python")
    assert "'/opt/my py/python3' -m venv .venv" in step.command


def test_is_input():
    assert rules.is_input("requirements-test.txt") and rules.is_input("package-lock.json") and rules.is_input("go.mod")
    assert not rules.is_input("README.md") and not rules.is_input("requirements.in")


@pytest.mark.parametrize(
    "args,ok",
    [
        ({}, True),
        ({"targets": ["python"]}, True),
        ({"targets": ["python", "node"], "wait": False, "force": True, "path": "sub"}, True),
        ({"targets": []}, False),
        ({"targets": ["ruby"]}, False),
        ({"targets": "python"}, False),
        ({"wait": "yes"}, False),
        ({"force": 1}, False),
        ({"path": ""}, False),
        ({"path": "a\x00b"}, False),
        ({"path": 3}, False),
    ],
)
def test_args(args, ok):
    frame = {"id": 5, "action": "ensure", "args": args}
    if ok:
        action = parse_action(frame)
        assert action.kind == "ensure" and summarize(action).startswith("ensure")
    else:
        with pytest.raises(ProtocolError) as info:
            parse_action(frame)
        assert info.value.cause == 5 and str(info.value.error_id) == "BAD_REQUEST"


def test_answer_text_and_overall():
    ready = {
        "target": "python",
        "state": "ready",
        "did": "nothing",
        "why": "up to date",
        "ready": {"interpreter": ".venv/bin/python"},
    }
    running = {"target": "node", "state": "running", "job_id": "j4", "command": "npm ci"}
    failed = {
        "target": "node",
        "state": "failed",
        "job_id": "j4",
        "command": "npm ci",
        "exit_code": 1,
        "output_tail": "ERR!",
    }
    assert (
        rules.overall([ready]) == "ready"
        and rules.overall([ready, running]) == "running"
        and rules.overall([ready, failed]) == "failed"
    )
    assert rules.overall([{"target": "node", "state": "refused"}]) == "failed"
    text = rules.answer_text("/p", [ready, failed], [{"file": "go.mod", "why": "Go"}], 0.01)
    assert (
        text.startswith("Environment NOT ready in /p")
        and "interpreter .venv/bin/python" in text
        and "exit code 1" in text
        and "ERR!" in text
        and "go.mod" in text
    )
    assert 'job_id "j4"' in rules.answer_text("/p", [running], [], 0.0)
    assert rules.answer_text("/p", [], [], 0.0).startswith("Nothing to set up")


def test_setup_note():
    ok = rules.setup_note(".oh/setup.sh", {"job_id": "j1", "state": "SUCCEEDED", "exit_code": 0, "duration_s": 1.5})
    bad = rules.setup_note(".oh/setup.sh", {"job_id": "j1", "state": "FAILED", "exit_code": 3}, "boom\n")
    assert "ran as job j1" in ok and "FAILED" in bad and "exit code 3" in bad and "boom" in bad and "not retried" in bad
    assert "could not run" in rules.setup_note("s", None, error="NO_EDITOR: x")
