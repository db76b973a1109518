"""OpenHands V0's VsCodeRuntime driven as a program (the real-VS-Code e2e test runs it in the V0 venv
against `oh start --runtime vscode`): actions published into OpenHands' EventStream as an agent would.
Prints one JSON object: label -> the observation OpenHands decoded.

    python scripted_runtime.py WORKSPACE
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from openhands.core.config import OpenHandsConfig  # noqa: E402
from openhands.events import EventSource, EventStream, EventStreamSubscriber  # noqa: E402
from openhands.events.action import CmdRunAction, FileEditAction, FileReadAction  # noqa: E402
from openhands.events.event import FileEditSource, FileReadSource  # noqa: E402
from openhands.events.observation import Observation  # noqa: E402
from openhands.llm.llm_registry import LLMRegistry  # noqa: E402
from openhands.runtime import get_runtime_cls  # noqa: E402
from openhands.storage.memory import InMemoryFileStore  # noqa: E402


def main(ws: str) -> dict:
    config = OpenHandsConfig()
    config.workspace_base = ws
    stream = EventStream("oh-v0-e2e", InMemoryFileStore())
    runtime = get_runtime_cls("oh.integrations.openhands_v0.VsCodeRuntime")(
        config, stream, LLMRegistry(config), sid="oh-v0-e2e", headless_mode=True
    )
    asyncio.run(runtime.connect())
    seen: dict = {}
    stream.subscribe(
        EventStreamSubscriber.TEST,
        lambda e: seen.__setitem__(e.cause, e) if isinstance(e, Observation) and e.cause is not None else None,
        "e2e",
    )

    def do(action):
        stream.add_event(action, EventSource.AGENT)
        end = time.monotonic() + 120
        while action.id not in seen and time.monotonic() < end:
            time.sleep(0.02)
        o = seen.get(action.id)
        return {
            "type": type(o).__name__,
            "content": getattr(o, "content", None),
            "exit_code": getattr(o, "exit_code", None),
        }

    app = os.path.join(ws, "v0app.py")
    out = {
        "create": do(
            FileEditAction(path=app, command="create", file_text="print('v0 hi')\n", impl_source=FileEditSource.OH_ACI)
        ),
        "exit3": do(CmdRunAction(command="sh -c 'echo v0-failing; exit 3'")),
        "replace": do(
            FileEditAction(
                path=app, command="str_replace", old_str="v0 hi", new_str="v0 hello", impl_source=FileEditSource.OH_ACI
            )
        ),
        "view": do(FileReadAction(path=app, impl_source=FileReadSource.OH_ACI)),
        "run": do(CmdRunAction(command="python3 v0app.py")),
    }
    runtime.close()
    stream.close()
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
