"""runtimes/stack.build: the layers composed inside out, each named, nothing forwarded beyond the Runtime
interface; the runtime names of protocol/runtimenames.py are the ones runtimes/choose.py can build."""

from __future__ import annotations

import pytest

from oh.protocol import runtimenames
from oh.protocol.branch import Plan
from oh.protocol.consent import Policy
from oh.runtimes import choose, stack
from oh.runtimes.arbiter import Arbiter
from oh.runtimes.base import Runtime, Wrapper
from oh.runtimes.branch import BranchGuard
from oh.runtimes.consent import ConsentGuard
from oh.runtimes.editor_link import EditorLink, Welcome
from oh.runtimes.editors import EditorRegistry
from oh.runtimes.ensure import EnsureService
from oh.runtimes.local import LocalRuntime


def _build(tmp_path, review: bool = False, **options) -> stack.Stack:
    ws = str(tmp_path)
    link = EditorLink(EditorRegistry(), Welcome("i1", ws, [ws], 8, 60.0, False, 600.0))
    settings = stack.StackSettings("local", choose.RuntimeSettings(ws, [ws], review=review), **options)
    return stack.build(settings, link, stack.StackHooks(new_id=lambda: 1))


def test_the_runtime_names_are_the_buildable_ones():
    assert set(runtimenames.NAMES) == set(choose.RUNTIMES)
    assert runtimenames.DEFAULT in runtimenames.NAMES
    assert [n for n in runtimenames.NAMES if runtimenames.uses_editor(n)] == ["vscode"]
    assert not runtimenames.uses_editor("nonesuch") and not runtimenames.uses_editor(None)
    with pytest.raises(ValueError, match="unknown runtime 'nonesuch'"):
        choose.make_runtime("nonesuch", choose.RuntimeSettings("/", ["/"]), None)  # type: ignore[arg-type]


def test_the_layers_inside_out(tmp_path):
    bare = _build(tmp_path)
    assert isinstance(bare.inner, LocalRuntime) and bare.branch is None and bare.consent is None
    # several agents (issue 37): the arbiter right around the inner runtime (the recorder's place when history is on)
    assert isinstance(bare.arbiter, Arbiter) and bare.arbiter.inner is bare.inner
    assert isinstance(bare.outer, EnsureService) and bare.outer.inner is bare.arbiter

    full = _build(tmp_path, branch=Plan(name="oh/x"), consent=Policy("all"), review=True)
    assert isinstance(full.branch, BranchGuard) and full.branch.inner is full.arbiter
    assert full.arbiter is not None and full.arbiter.inner is full.inner
    assert isinstance(full.consent, ConsentGuard) and full.consent.inner is full.branch
    assert full.outer is full.ensure and full.ensure.inner is full.consent
    assert full.consent.review and full.consent.approvals.timeout == 600.0
    assert full.outer.proposals is full.inner.proposals is not None  # review mode's queue, through each layer


def test_a_wrapper_forwards_the_runtime_interface_and_nothing_else(tmp_path):
    s = _build(tmp_path, consent=Policy("all"))
    assert s.outer.name == "local"
    assert s.outer.branch_switch is not None
    # LocalRuntime's own members are read from the inner runtime, never through a wrapper.
    for name in ("paths", "workspace", "backend_names_jobs", "HANDLERS"):
        assert hasattr(s.inner, name)
        with pytest.raises(AttributeError):
            getattr(s.consent, name)
    forwarded = {n for n in vars(Wrapper) if not n.startswith("_")}
    interface = {n for n in vars(Runtime) if not n.startswith("_")}
    assert forwarded == interface
