"""A scripted, offline OpenHands SDK agent run as a program (the real-VS-Code e2e test runs it in the SDK's
3.12 venv against `oh start --runtime vscode`): install(), then the SDK's standard tools do a small
realistic task. Prints one JSON object: tool-call label -> what the SDK recorded.

    python scripted_agent.py WORKSPACE
"""

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

from oh.integrations.openhands import OhTerminalTool, install  # noqa: E402


def main(ws: str) -> dict:
    install(name="sdk-e2e")
    turns: list[Message] = []
    labels: dict[str, str] = {}

    def turn(*calls: tuple[str, str, dict]) -> None:
        tcs = []
        for label, name, args in calls:
            cid = f"call_{len(labels) + 1}"
            labels[cid] = label
            tcs.append(MessageToolCall(id=cid, name=name, arguments=json.dumps(args), origin="completion"))
        turns.append(Message(role="assistant", content=[TextContent(text="")], tool_calls=tcs))

    app = os.path.join(ws, "app.py")
    T, E = TerminalTool.name, FileEditorTool.name
    turn(
        (
            "create",
            E,
            {"command": "create", "path": app, "file_text": "def greet():\n    return 'hi'\n\nprint(greet())\n"},
        )
    )
    turn(("exit3", T, {"command": "sh -c 'echo failing; exit 3'"}))
    turn(("replace", E, {"command": "str_replace", "path": app, "old_str": "return 'hi'", "new_str": "return 'hello'"}))
    turn(("view", E, {"command": "view", "path": app}))
    turn(("run", T, {"command": "python3 app.py"}))
    turn(
        ("par_a", E, {"command": "create", "path": os.path.join(ws, "a.txt"), "file_text": "A\n"}),
        ("par_b", E, {"command": "create", "path": os.path.join(ws, "b.txt"), "file_text": "B\n"}),
        ("par_echo", T, {"command": "echo parallel-$((6*7))"}),
    )
    turn(("soft", T, {"command": "echo started; sleep 3; echo finished", "timeout": 1}))
    turn(("more", T, {"command": "", "timeout": 20}))
    turn(("state", T, {"command": "export MARK=before-reset"}))
    turn(("reset", T, {"command": "", "reset": True}))
    turn(("after", T, {"command": "echo mark=${MARK:-unset}; pwd"}))
    turns.append(Message(role="assistant", content=[TextContent(text="done")]))

    agent = Agent(llm=TestLLM.from_messages(turns), tools=[Tool(name=T), Tool(name=E)])
    conversation = Conversation(agent=agent, workspace=ws, visualizer=None)
    conversation.send_message("go")
    conversation.run()
    out: dict = {"_oh_tools": isinstance(conversation.agent.tools_map[T], OhTerminalTool)}
    for ev in conversation.state.events:
        if isinstance(ev, ObservationEvent):
            o = ev.observation
            out[labels[ev.tool_call_id]] = {
                "text": o.text,
                "is_error": o.is_error,
                "exit_code": getattr(o, "exit_code", None),
                "command": getattr(o, "command", None),
                "working_dir": getattr(getattr(o, "metadata", None), "working_dir", None),
                "old_content": getattr(o, "old_content", None),
                "new_content": getattr(o, "new_content", None),
            }
        elif isinstance(ev, AgentErrorEvent):
            out[labels.get(ev.tool_call_id, ev.tool_call_id)] = {"agent_error": ev.error}
    conversation.close()
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
