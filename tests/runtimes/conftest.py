"""Fixtures for the local runtime tests: a runtime on a tmp workspace and an action factory."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from oh.protocol.events import Action, parse_action
from oh.runtimes.local import LocalRuntime
from reference_shapes import REFERENCE_EXTRAS, REFERENCE_RUN_METADATA, REFERENCE_TOP  # noqa: F401 - used by the tests

_ids = itertools.count(1)
# Kinds of our own (docs/protocol.md §3.8-§3.9); job extras depend on the op.
OUR_EXTRAS = {
    "stat": {"path", "exists", "type", "size", "mtime", "mode", "encoding", "mime_type", "link"},
    "job": set(),
}


def act(kind: str, timeout: float | None = None, **args: Any) -> Action:
    frame: dict[str, Any] = {"id": next(_ids), "action": kind, "args": args}
    if timeout is not None:
        frame["timeout"] = timeout
    return parse_action(frame)


def check_shape(obs: dict[str, Any], action: Action, kind: str | None = None) -> dict[str, Any]:
    """Assert the observation has exactly the reference keys; returns it for chaining."""
    kind = kind or obs["observation"]
    assert obs["observation"] == kind, obs
    assert obs["cause"] == action.id
    top = set(obs) - {"success"}
    assert top == REFERENCE_TOP, top
    assert ("success" in obs) == (kind == "run")
    assert set(obs["extras"]) == {**REFERENCE_EXTRAS, **OUR_EXTRAS}[kind] or kind == "job", obs["extras"]
    assert isinstance(obs["content"], str)
    if kind == "run":
        # job_id (docs/protocol.md §3.8) and a review-mode change set's id (§3.15.1) are the additions:
        # OpenHands' CmdOutputMetadata ignores unknown keys.
        assert set(obs["extras"]["metadata"]) - {"job_id", "changeset"} == REFERENCE_RUN_METADATA
        assert isinstance(obs["extras"]["metadata"]["exit_code"], int)
        assert obs["success"] == (obs["extras"]["metadata"]["exit_code"] == 0)
    return obs


class Harness:
    def __init__(self, rt: LocalRuntime, agent: str = "agent-1") -> None:
        self.rt = rt
        self.agent = agent

    async def do(
        self, kind: str, timeout: float | None = None, *, agent: str | None = None, **args: Any
    ) -> dict[str, Any]:
        action = act(kind, timeout, **args)
        obs = await self.rt.execute(action, agent or self.agent)
        return check_shape(obs, action)

    async def run(self, command: str, timeout: float | None = None, **args: Any) -> dict[str, Any]:
        obs = await self.do("run", timeout, command=command, **args)
        assert obs["observation"] == "run", obs
        return obs


def code(obs: dict[str, Any]) -> int:
    return obs["extras"]["metadata"]["exit_code"]


def meta(obs: dict[str, Any]) -> dict[str, Any]:
    return obs["extras"]["metadata"]


def error_id(obs: dict[str, Any]) -> str:
    assert obs["observation"] == "error", obs
    return obs["extras"]["error_id"]


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
async def rt(workspace):
    runtime = LocalRuntime(workspace)
    yield runtime
    await runtime.close()


@pytest.fixture
async def h(rt):
    return Harness(rt)


@pytest.fixture(autouse=True)
def _unsandboxed(monkeypatch) -> None:
    """These tests pin the runtime's run semantics (exact output, prefixes, paths in /tmp outside the
    workspace); the sandbox has its own battery (tests/sandbox/) and tests/shell runs sandboxed."""
    monkeypatch.setenv("OH_SANDBOX", "off")
