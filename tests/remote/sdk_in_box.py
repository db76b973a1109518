"""Run by tests/remote/test_container.py inside the box (a network namespace of its own, the workspace at
/workspace), with the OpenHands SDK's Python 3.12 venv: a scripted SDK agent whose tools act through oh's share
(``OH_URL=unix:/run/oh/oh.sock``, ``OH_TOKEN_FILE``) and nothing else. Prints one JSON line: each tool call's
observation text, by call id. Not a test module (no ``test_`` prefix): it needs the SDK, which the main venv lacks."""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

from openhands.sdk import Agent, Conversation  # noqa: E402
from openhands.sdk.event import AgentErrorEvent, ObservationEvent  # noqa: E402
from openhands.sdk.llm import Message, MessageToolCall, TextContent  # noqa: E402
from openhands.sdk.testing import TestLLM  # noqa: E402
from openhands.sdk.tool import Tool  # noqa: E402
from openhands.tools.file_editor import FileEditorTool  # noqa: E402
from openhands.tools.terminal import TerminalTool  # noqa: E402

import oh.integrations.openhands as ohsdk  # noqa: E402


def call(turns: list[Message], name: str, **args: str) -> None:
    tc = MessageToolCall(id=f"call_{len(turns) + 1}", name=name, arguments=json.dumps(args), origin="completion")
    turns.append(Message(role="assistant", content=[TextContent(text="")], tool_calls=[tc]))


def text(ev) -> str:
    if isinstance(ev, AgentErrorEvent):
        return f"AGENT ERROR: {ev.error}"
    return "".join(c.text for c in ev.observation.to_llm_content if isinstance(c, TextContent))


def main() -> int:
    ws = sys.argv[1]  # the agent's view of the workspace (/workspace)
    ohsdk.install(name="sdk-in-box")
    turns: list[Message] = []
    call(turns, FileEditorTool.name, command="create", path=f"{ws}/boxed.py", security_risk="LOW",
         file_text="print('sdk ' + 'in the box')\n")  # fmt: skip
    call(turns, TerminalTool.name, command="python3 boxed.py > boxed.txt && pwd && cat boxed.txt", security_risk="LOW")
    call(turns, FileEditorTool.name, command="view", path=f"{ws}/boxed.txt", security_risk="LOW")
    turns.append(Message(role="assistant", content=[TextContent(text="done")]))
    tools = [Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)]
    agent = Agent(llm=TestLLM.from_messages(turns), tools=tools)
    conversation = Conversation(agent=agent, workspace=ws, visualizer=None)
    conversation.send_message("Write boxed.py, run it into boxed.txt, show boxed.txt.")
    try:
        conversation.run()
    finally:
        seen = {
            ev.tool_call_id: text(ev)
            for ev in conversation.state.events
            if isinstance(ev, (ObservationEvent, AgentErrorEvent))
        }
        conversation.close()
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
