"""Consent (issue 19) through the OpenHands SDK integration: a scripted agent under `oh start --consent
commands` waits for the user's answer; an allowed command runs, a rejected one never does and the model
reads it as the SDK's own user rejection ("Action rejected: <reason>"); the agent's security_risk reaches
what the user sees; and the conversation's own confirmation policy still asks first (the oh tool is not
even called before the SDK's user confirms)."""

from __future__ import annotations

import json
import os
import threading

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

import pytest  # noqa: E402
from openhands.sdk import Agent, Conversation  # noqa: E402
from openhands.sdk.conversation.state import ConversationExecutionStatus  # noqa: E402
from openhands.sdk.event import ObservationEvent, UserRejectObservation  # noqa: E402
from openhands.sdk.llm import TextContent  # noqa: E402
from openhands.sdk.security.confirmation_policy import AlwaysConfirm  # noqa: E402
from openhands.sdk.security.llm_analyzer import LLMSecurityAnalyzer  # noqa: E402
from openhands.sdk.testing import TestLLM  # noqa: E402
from openhands.sdk.tool import Tool  # noqa: E402
from openhands.tools.terminal import TerminalTool  # noqa: E402
from test_sdk_agent import Script  # noqa: E402

import oh.integrations.openhands as ohsdk  # noqa: E402
from waiting import poll_until  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def installed():
    ohsdk.install(name="consent-test")
    yield
    ohsdk.uninstall()


def _approvals(backend) -> list[dict]:
    return json.loads(backend.oh("approvals", "--json").stdout or "{}").get("approvals") or []


def test_commands_wait_for_the_user_and_a_rejection_reads_as_the_sdks(make_oh_backend, installed):
    backend = make_oh_backend("--consent", "commands")
    ws = backend.workspace
    s = Script()
    c_yes = s.turn((TerminalTool.name, {"command": "touch allowed.txt", "security_risk": "LOW"}))[0]
    c_no = s.turn((TerminalTool.name, {"command": "touch rejected.txt", "security_risk": "HIGH"}))[0]
    agent = Agent(llm=TestLLM.from_messages(s.done()), tools=[Tool(name=TerminalTool.name)])
    conversation = Conversation(agent=agent, workspace=str(ws), visualizer=None)
    conversation.set_security_analyzer(LLMSecurityAnalyzer())
    seen: list[dict] = []

    def user() -> None:
        for answer in (("approve",), ("reject", "--reason", "not that file")):
            rows = poll_until(lambda: _approvals(backend) or None, 60, "a pending approval", 0.1)
            seen.append(rows[0])
            done = backend.oh(answer[0], rows[0]["id"], *answer[1:])
            assert done.returncode == 0, done.stderr
            poll_until(lambda: all(r["id"] != rows[0]["id"] for r in _approvals(backend)), 30, "the answer", 0.1)

    answering = threading.Thread(target=user)
    answering.start()
    conversation.send_message("touch two files")
    try:
        conversation.run()
    finally:
        answering.join(90)
        events = list(conversation.state.events)
        conversation.close()
    obs = {ev.tool_call_id: ev.observation for ev in events if isinstance(ev, ObservationEvent)}
    assert [r["what"] for r in seen] == ["touch allowed.txt", "touch rejected.txt"]
    assert [r["security_risk"] for r in seen] == ["LOW", "HIGH"]  # the agent's own label, shown to the user
    assert (ws / "allowed.txt").exists() and not (ws / "rejected.txt").exists()
    assert not obs[c_yes].is_error
    text = "".join(c.text for c in obs[c_no].to_llm_content if isinstance(c, TextContent))
    assert (
        obs[c_no].is_error and "\nAction rejected: " in text and "NOT executed" in text and "not that file" in text
    ), text


def test_the_conversations_confirmation_policy_still_asks_first(make_oh_backend, installed):
    backend = make_oh_backend("--consent", "commands")
    s = Script()
    s.turn((TerminalTool.name, {"command": "touch never.txt", "security_risk": "LOW"}))
    agent = Agent(llm=TestLLM.from_messages(s.done()), tools=[Tool(name=TerminalTool.name)])
    conversation = Conversation(agent=agent, workspace=str(backend.workspace), visualizer=None)
    conversation.set_security_analyzer(LLMSecurityAnalyzer())
    conversation.set_confirmation_policy(AlwaysConfirm())
    conversation.send_message("touch a file")
    try:
        conversation.run()  # returns at the SDK's own confirmation: nothing reached oh
        assert conversation.state.execution_status == ConversationExecutionStatus.WAITING_FOR_CONFIRMATION
        assert _approvals(backend) == []
        conversation.reject_pending_actions("the SDK user said no")
        events = list(conversation.state.events)
    finally:
        conversation.close()
    assert any(isinstance(ev, UserRejectObservation) and ev.rejection_reason == "the SDK user said no" for ev in events)
    assert not (backend.workspace / "never.txt").exists()
    trace = backend.oh("logs", "--json").stdout
    assert "touch never.txt" not in trace
