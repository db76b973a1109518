"""OpenHands V0 (openhands-ai 1.6.0): ``VsCodeRuntime`` named by dotted path, driven through OpenHands'
own EventStream (the agent controller's path: an action published by the agent comes back as the
observation the runtime adds), against a real `oh` backend. Runs in the venv built by
scripts/integration-venvs."""

from __future__ import annotations

import base64
import json
import os
import time
import zipfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest  # noqa: E402
from openhands.core.config import OpenHandsConfig  # noqa: E402
from openhands.events import EventSource, EventStream, EventStreamSubscriber  # noqa: E402
from openhands.events.action import CmdRunAction, FileEditAction, FileReadAction, FileWriteAction, IPythonRunCellAction  # noqa: E402
from openhands.events.event import FileEditSource, FileReadSource  # noqa: E402
from openhands.events.observation import (  # noqa: E402
    CmdOutputObservation,
    ErrorObservation,
    FileEditObservation,
    FileReadObservation,
    FileWriteObservation,
    Observation,
)
from openhands.llm.llm_registry import LLMRegistry  # noqa: E402
from openhands.runtime import get_runtime_cls  # noqa: E402
from openhands.storage.memory import InMemoryFileStore  # noqa: E402

pytestmark = pytest.mark.timeout(300)

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")


def make_runtime(workspace: Path):
    cls = get_runtime_cls("oh.integrations.openhands_v0.VsCodeRuntime")
    config = OpenHandsConfig()
    config.workspace_base = str(workspace)
    stream = EventStream("oh-v0-test", InMemoryFileStore())
    runtime = cls(config, stream, LLMRegistry(config), sid="oh-v0-test", headless_mode=True)
    return runtime, stream


class Agent:
    """Publishes actions into the stream as an agent would and waits for the runtime's observation."""

    def __init__(self, stream: EventStream) -> None:
        self.stream = stream
        self.seen: dict[int, object] = {}
        stream.subscribe(EventStreamSubscriber.TEST, self._on_event, "test-agent")

    def _on_event(self, event) -> None:
        # OpenHands re-publishes the observation with the action's source; its cause is the action's id.
        if isinstance(event, Observation) and event.cause is not None:
            self.seen[event.cause] = event

    def do(self, action, timeout: float = 60):
        self.stream.add_event(action, EventSource.AGENT)
        end = time.monotonic() + timeout
        while action.id not in self.seen:
            if time.monotonic() > end:
                raise AssertionError(f"no observation for {action!r} within {timeout} s")
            time.sleep(0.02)
        return self.seen[action.id]


@pytest.fixture
def v0(oh_backend):
    runtime, stream = make_runtime(oh_backend.workspace)
    import asyncio

    asyncio.run(runtime.connect())
    yield runtime, Agent(stream), oh_backend
    runtime.close()
    stream.close()


def test_agent_actions_through_the_event_stream(v0):
    runtime, agent, b = v0
    ws = b.workspace
    assert type(runtime).__name__ == "VsCodeRuntime"

    obs = agent.do(
        FileEditAction(
            path=str(ws / "app.py"), command="create", file_text="print('hi')\n", impl_source=FileEditSource.OH_ACI
        )
    )
    assert isinstance(obs, FileEditObservation), obs
    assert (ws / "app.py").read_text() == "print('hi')\n"

    obs = agent.do(CmdRunAction(command="sh -c 'echo failing; exit 3'"))
    assert isinstance(obs, CmdOutputObservation) and obs.exit_code == 3 and "failing" in obs.content

    obs = agent.do(
        FileEditAction(
            path=str(ws / "app.py"),
            command="str_replace",
            old_str="'hi'",
            new_str="'hello'",
            impl_source=FileEditSource.OH_ACI,
        )
    )
    assert isinstance(obs, FileEditObservation), obs
    assert (ws / "app.py").read_text() == "print('hello')\n"

    # The editor's `view` arrives as FileReadAction(impl_source="oh_aci") and must get the numbered view.
    obs = agent.do(FileReadAction(path=str(ws / "app.py"), impl_source=FileReadSource.OH_ACI))
    assert isinstance(obs, FileReadObservation) and "     1\tprint('hello')" in obs.content, obs
    obs = agent.do(FileReadAction(path=str(ws), impl_source=FileReadSource.OH_ACI))
    assert isinstance(obs, FileReadObservation) and "app.py" in obs.content and "2 levels deep" in obs.content, obs

    obs = agent.do(CmdRunAction(command="python3 app.py"))
    assert obs.exit_code == 0 and "hello" in obs.content
    assert obs.metadata.working_dir == str(ws.resolve())

    obs = agent.do(FileWriteAction(path=str(ws / "w.txt"), content="written\n"))
    assert isinstance(obs, FileWriteObservation) and (ws / "w.txt").read_text() == "written\n"
    obs = agent.do(FileReadAction(path=str(ws / "w.txt")))
    assert isinstance(obs, FileReadObservation) and obs.content == "written\n"

    # A soft timeout, then an empty command keeps waiting for the same process.
    soft = CmdRunAction(command="echo started; sleep 2; echo finished", blocking=False)
    soft.set_hard_timeout(0.5, blocking=False)
    obs = agent.do(soft)
    assert isinstance(obs, CmdOutputObservation) and obs.exit_code == -1 and "started" in obs.content
    more = CmdRunAction(command="")
    more.set_hard_timeout(15, blocking=False)
    obs = agent.do(more)
    assert "finished" in obs.content and obs.exit_code == 0, obs

    (ws / "pixel.png").write_bytes(PNG)
    obs = agent.do(FileReadAction(path=str(ws / "pixel.png")))
    assert (
        isinstance(obs, FileReadObservation)
        and obs.content == "data:image/png;base64," + base64.b64encode(PNG).decode()
    )

    obs = agent.do(IPythonRunCellAction(code="print(1)"))
    assert isinstance(obs, ErrorObservation) and "not supported" in obs.content

    obs = agent.do(FileReadAction(path=str(ws / "missing.txt"), impl_source=FileReadSource.OH_ACI))
    assert isinstance(obs, ErrorObservation)
    p = ws / "missing.txt"
    assert obs.content == f"Invalid `path` parameter: {p}. The path {p} does not exist. Please provide a valid path."


def test_env_vars_stay_in_the_oh_shell(v0, tmp_path, monkeypatch):
    runtime, agent, b = v0
    home = tmp_path / "fake-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    runtime.add_env_vars({"oh_test_var": "v-123"})
    obs = agent.do(CmdRunAction(command="echo var=$OH_TEST_VAR"))
    assert "var=v-123" in obs.content
    assert not (home / ".bashrc").exists(), "the user's ~/.bashrc is never touched"
    assert "v-123" not in json.dumps(b.trace()) and b.trace(), "the value never reaches the trace"


def test_copy_and_list_within_allowed_roots(v0, tmp_path):
    runtime, _agent, b = v0
    ws = b.workspace
    src = tmp_path / "host"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "m.py").write_text("x = 1\n")
    (src / "one.txt").write_text("1\n")

    runtime.copy_to(str(src / "one.txt"), str(ws / "in"))
    runtime.copy_to(str(src / "pkg"), str(ws), recursive=True)
    runtime.copy_to(str(src / "one.txt"), str(b.scratch / "copied.txt"))
    assert (ws / "in" / "one.txt").read_text() == "1\n"
    assert (ws / "pkg" / "m.py").read_text() == "x = 1\n"
    assert (b.scratch / "copied.txt").read_text() == "1\n"
    assert runtime.list_files() == ["in/", "pkg/"] + sorted(p.name for p in ws.iterdir() if p.is_file())
    assert runtime.list_files("pkg") == ["m.py"]

    z = runtime.copy_from(str(ws / "pkg"))
    with zipfile.ZipFile(z) as zf:
        assert zf.namelist() == ["m.py"]
    os.unlink(z)

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for call in (
        lambda: runtime.copy_to(str(src / "one.txt"), str(outside)),
        lambda: runtime.list_files(str(outside)),
        lambda: runtime.copy_from(str(outside)),
        lambda: runtime.copy_from("/etc"),
    ):
        with pytest.raises(PermissionError, match="allowed roots"):
            call()
    assert not any(outside.iterdir())


def test_no_backend_is_a_clear_error(tmp_path, monkeypatch):
    from openhands.core.exceptions import AgentRuntimeUnavailableError

    monkeypatch.setenv("OH_HOME", str(tmp_path / "nobody"))
    ws = tmp_path / "ws"
    ws.mkdir()
    runtime, stream = make_runtime(ws)
    import asyncio

    with pytest.raises(AgentRuntimeUnavailableError, match="oh start"):
        asyncio.run(runtime.connect())
    runtime.close()
    stream.close()


def test_consent_waits_and_a_rejection_is_a_user_reject_observation(make_oh_backend):
    """Issue 19: under `oh start --consent commands` a V0 CmdRunAction waits for the user; rejected, the agent
    gets OpenHands' own UserRejectObservation with the reason, and the command never ran. The action's
    security_risk (V0's int) reaches the user as its label."""
    import threading

    from openhands.events.action.action import ActionSecurityRisk
    from openhands.events.observation.reject import UserRejectObservation

    from waiting import poll_until

    backend = make_oh_backend("--consent", "commands")
    runtime, stream = make_runtime(backend.workspace)
    import asyncio

    asyncio.run(runtime.connect())
    agent = Agent(stream)
    seen: list[dict] = []

    def user() -> None:
        rows = poll_until(
            lambda: json.loads(backend.oh("approvals", "--json").stdout or "{}").get("approvals") or None,
            60,
            "approval",
            0.1,
        )
        seen.append(rows[0])
        backend.oh("reject", rows[0]["id"], "--reason", "not here")

    answering = threading.Thread(target=user)
    answering.start()
    try:
        action = CmdRunAction(command="touch v0-made.txt")
        action.security_risk = ActionSecurityRisk.HIGH
        obs = agent.do(action, timeout=90)
    finally:
        answering.join(60)
        runtime.close()
        stream.close()
    assert seen and seen[0]["what"] == "touch v0-made.txt" and seen[0]["security_risk"] == "HIGH"
    assert isinstance(obs, UserRejectObservation) and "not here" in obs.content and "NOT executed" in obs.content
    assert not (backend.workspace / "v0-made.txt").exists()


def test_the_setup_script_runs_once_through_the_backend_not_again_by_openhands(oh_backend):
    ws = oh_backend.workspace
    (ws / ".openhands").mkdir()
    (ws / ".openhands" / "setup.sh").write_text("echo ran >> setup-count.txt\n")
    runtime, stream = make_runtime(ws)
    import asyncio

    asyncio.run(runtime.connect())
    try:
        runtime.maybe_run_setup_script()  # what OpenHands' setup calls: the oh backend owns the script
        obs = Agent(stream).do(CmdRunAction(command="cat setup-count.txt"))
        assert obs.exit_code == 0 and obs.content.count("ran") == 1, obs.content
        assert (ws / "setup-count.txt").read_text() == "ran\n"
    finally:
        runtime.close()
        stream.close()


def test_the_runtime_reaches_oh_only_through_a_shared_unix_socket(oh_backend, shared_only):
    """Issue 28: the V0 runtime of an agent elsewhere: OH_URL=unix:… and OH_TOKEN_FILE from `oh share`, no
    session file, no TCP address. It writes, runs and reads here, and each action is the share's."""
    from conftest import shared_actions

    ws = oh_backend.workspace
    runtime, stream = make_runtime(ws)
    import asyncio

    asyncio.run(runtime.connect())
    try:
        agent = Agent(stream)
        obs = agent.do(FileWriteAction(path=str(ws / "note.txt"), content="through the socket\n"))
        assert isinstance(obs, FileWriteObservation), obs
        obs = agent.do(CmdRunAction(command="cat note.txt && echo sum-$((2+3)) > sum.txt && cat sum.txt"))
        assert isinstance(obs, CmdOutputObservation) and obs.exit_code == 0, obs
        assert "through the socket" in obs.content and "sum-5" in obs.content
        obs = agent.do(FileReadAction(path=str(ws / "sum.txt")))
        assert isinstance(obs, FileReadObservation) and "sum-5" in obs.content, obs
    finally:
        runtime.close()
        stream.close()
    assert (ws / "note.txt").read_text() == "through the socket\n" and (ws / "sum.txt").read_text() == "sum-5\n"
    done = {r["action"] for r in shared_actions(oh_backend, shared_only)}
    assert {"write", "run", "read"} <= done, done


def test_a_write_based_on_a_stale_read_is_refused_even_after_a_reconnection(v0):
    """Several agents (docs/protocol.md §3.18): the runtime remembers the version it read and sends it as
    if_version, so a new connection (the backend's per-connection memory gone) still gets STALE, with the diff."""
    runtime, agent, b = v0
    ws = b.workspace
    (ws / "s.txt").write_text("seen\n")
    obs = agent.do(FileReadAction(path=str(ws / "s.txt")))
    assert isinstance(obs, FileReadObservation) and obs.content == "seen\n"  # oh's extras stripped for OpenHands
    runtime._client.close()
    runtime._client = None  # the next action connects anew
    (ws / "s.txt").write_text("changed by the user\n")
    obs = agent.do(FileWriteAction(path=str(ws / "s.txt"), content="mine\n"))
    assert isinstance(obs, ErrorObservation) and "STALE" in obs.content and "+changed by the user" in obs.content
    assert (ws / "s.txt").read_text() == "changed by the user\n"
    obs = agent.do(FileReadAction(path=str(ws / "s.txt"), impl_source=FileReadSource.OH_ACI))
    obs = agent.do(
        FileEditAction(
            path=str(ws / "s.txt"),
            command="str_replace",
            old_str="user",
            new_str="agent",
            impl_source=FileEditSource.OH_ACI,
        )
    )
    assert isinstance(obs, FileEditObservation) and (ws / "s.txt").read_text() == "changed by the agent\n"
