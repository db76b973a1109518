"""Issue 28: an OpenHands SDK agent elsewhere. Its only way to the backend is what `oh share` gives it,
``OH_URL=unix:…`` and ``OH_TOKEN_FILE`` (its own OH_HOME has no session file, so no TCP address or local token
is known to it); after one ``install()`` its terminal and file-editor tools act here through the socket.
Runs in the Python 3.12 venv built by scripts/integration-venvs."""

from __future__ import annotations

import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

import pytest  # noqa: E402
from openhands.sdk import Agent, Conversation  # noqa: E402
from openhands.sdk.event import AgentErrorEvent, ObservationEvent  # noqa: E402
from openhands.sdk.llm import Message, MessageToolCall, TextContent  # noqa: E402
from openhands.sdk.testing import TestLLM  # noqa: E402
from openhands.sdk.tool import Tool  # noqa: E402
from openhands.tools.file_editor import FileEditorTool  # noqa: E402
from openhands.tools.terminal import TerminalTool  # noqa: E402

import oh.integrations.openhands as ohsdk  # noqa: E402
from conftest import shared_actions  # noqa: E402

pytestmark = pytest.mark.timeout(600)


def _call(turns: list[Message], name: str, **args) -> str:
    cid = f"call_{len(turns) + 1}"
    tc = MessageToolCall(id=cid, name=name, arguments=json.dumps(args), origin="completion")
    turns.append(Message(role="assistant", content=[TextContent(text="")], tool_calls=[tc]))
    return cid


def _text(obs) -> str:
    if isinstance(obs, AgentErrorEvent):
        return f"AGENT ERROR: {obs.error}"
    return "".join(c.text for c in obs.to_llm_content if isinstance(c, TextContent))


@pytest.fixture
def installed_elsewhere(shared_only):
    ohsdk.install(name="sdk-elsewhere")  # after the share's environment is set: that is all it can find
    yield
    ohsdk.uninstall()


def test_sdk_agent_works_through_the_shared_unix_socket_only(oh_backend, shared_only, installed_elsewhere):
    ws = oh_backend.workspace
    turns: list[Message] = []
    c_create = _call(
        turns, FileEditorTool.name, command="create", path=str(ws / "hello.py"), security_risk="LOW",
        file_text="print('hello from ' + 'the socket')\n",
    )  # fmt: skip
    c_run = _call(turns, TerminalTool.name, command="python3 hello.py > out.txt && cat out.txt", security_risk="LOW")
    c_view = _call(turns, FileEditorTool.name, command="view", path=str(ws / "out.txt"), security_risk="LOW")
    turns.append(Message(role="assistant", content=[TextContent(text="done")]))
    agent = Agent(
        llm=TestLLM.from_messages(turns), tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)]
    )
    conversation = Conversation(agent=agent, workspace=str(ws), visualizer=None)
    conversation.send_message("Write hello.py, run it into out.txt and show out.txt.")
    try:
        conversation.run()
    finally:
        obs = {
            ev.tool_call_id: (ev.observation if isinstance(ev, ObservationEvent) else ev)
            for ev in conversation.state.events
            if isinstance(ev, (ObservationEvent, AgentErrorEvent))
        }
        conversation.close()
    assert set(obs) == {c_create, c_run, c_view}, obs
    assert (ws / "hello.py").read_text() == "print('hello from ' + 'the socket')\n"
    assert (ws / "out.txt").read_text() == "hello from the socket\n"
    assert "hello from the socket" in _text(obs[c_run]) and "hello from the socket" in _text(obs[c_view])
    done = [r["action"] for r in shared_actions(oh_backend, shared_only)]
    assert "run" in done and len(done) >= 3, done  # every tool call went through oh, as the share's agent
