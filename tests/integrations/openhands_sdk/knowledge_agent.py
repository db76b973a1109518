"""A scripted, offline OpenHands SDK agent that asks the editor through oh's ``editor_knowledge`` tool (the
real-VS-Code e2e test runs it in the SDK's 3.12 venv against `oh start --runtime vscode`, in a workspace
with src/main.ts holding a type error on line 4 and src/greet.ts defining greet). Prints one JSON object:
label -> [what the SDK recorded for each call with that label].

    python knowledge_agent.py WORKSPACE
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

from openhands.sdk import Agent, Conversation  # noqa: E402
from openhands.sdk.event import AgentErrorEvent, ObservationEvent  # noqa: E402
from openhands.sdk.llm import Message, MessageToolCall, TextContent  # noqa: E402
from openhands.sdk.testing import TestLLM  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

from oh.integrations.openhands import install, oh_tools  # noqa: E402
from oh.integrations.openhands.knowledge import NAME  # noqa: E402

# The TypeScript server starts lazily in code-server (tens of seconds on a loaded machine), and until it
# has, "no problems" is an honest answer: like a model that expects an error, ask again a little later.
DIAGNOSTICS_TRIES = 40
PAUSE_S = 3.0


class PatientLLM(TestLLM):
    """Scripted, but repeats a diagnostics call (after a pause) while the answer lacks the expected error."""

    _retries: int = PrivateAttr(default=0)
    _again: Any = PrivateAttr(default=None)  # the diagnostics call to repeat (a Message)

    def completion(self, *args, **kwargs):  # forwarded exactly as the SDK calls it
        messages = kwargs.get("messages", args[0] if args else None)
        last = messages[-1] if messages else None
        if last is not None and last.role == "tool" and self._again is not None and self._retries < DIAGNOSTICS_TRIES:
            text = "".join(c.text for c in last.content if isinstance(c, TextContent))
            if text.startswith("No problems"):
                self._retries += 1
                time.sleep(PAUSE_S)
                # A different `wait` each time: the SDK's stuck detector ends a conversation that repeats one call.
                again_args = dict(json.loads(self._again.tool_calls[0].arguments), wait=15 + self._retries % 10)
                call = self._again.tool_calls[0].model_copy(
                    update={"id": f"call_again_{self._retries}", "arguments": json.dumps(again_args)}
                )
                self._scripted_responses.appendleft(self._again.model_copy(update={"tool_calls": [call]}))
        return super().completion(*args, **kwargs)


def main(ws: str) -> dict:
    install(name="sdk-knowledge-e2e")
    turns: list[Message] = []
    labels: dict[str, str] = {}

    def call(label: str, **args) -> None:
        cid = f"call_{len(labels) + 1}"
        labels[cid] = label
        tc = MessageToolCall(id=cid, name=NAME, arguments=json.dumps(args), origin="completion")
        turns.append(Message(role="assistant", content=[TextContent(text="")], tool_calls=[tc]))

    call("open", op="open", path="src/main.ts", line=4, column=7)
    call("diagnostics", op="diagnostics", path="src/main.ts", wait=20)
    call("definition", op="definition", path="src/main.ts", line=1, column=10)
    call("editors", op="editors")
    turns.append(Message(role="assistant", content=[TextContent(text="done")]))

    llm = PatientLLM.from_messages(turns)
    llm._again = turns[1]  # asked again with a fresh id (call_again_N) while TypeScript has not reported
    agent = Agent(llm=llm, tools=oh_tools())
    conversation = Conversation(agent=agent, workspace=ws, visualizer=None)
    conversation.send_message("what is wrong in main.ts?")
    conversation.run()
    out: dict = {}
    for ev in conversation.state.events:
        if isinstance(ev, ObservationEvent):
            o = ev.observation
            label = labels.get(ev.tool_call_id) or (
                "diagnostics" if ev.tool_call_id.startswith("call_again") else ev.tool_call_id
            )
            out.setdefault(label, []).append({"text": o.text, "is_error": o.is_error, "data": getattr(o, "data", {})})
        elif isinstance(ev, AgentErrorEvent):
            out.setdefault(labels.get(ev.tool_call_id, ev.tool_call_id), []).append({"agent_error": ev.error})
    conversation.close()
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
