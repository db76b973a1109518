"""A scripted editor for CLI tests: registers on a real backend (runtime vscode), records every
action frame the backend forwards, and answers with what ``answer(action)`` returns.

It stands in for VS Code where the test is about what the CLI sends and how it words the answer
(explicit cwd, refusals, waiting for an editor); the backend and the `oh` processes are real.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from websockets.sync.client import connect

from oh import PROTOCOL_VERSION, __version__
from oh.protocol.events import error_observation, run_observation


def ran(action: dict) -> dict:
    """Default answer: the command 'ran' in args.cwd and printed that directory."""
    args = action.get("args") or {}
    return run_observation(action["id"], args.get("command", ""), f"{args.get('cwd')}\n", 0, args.get("cwd"))


def refused(error_id: str, message: str):
    def answer(action: dict) -> dict:
        obs = error_observation(action["id"], "TOOL_ERROR", message)
        obs["extras"]["error_id"] = error_id
        return obs

    return answer


class FakeEditor:
    def __init__(
        self,
        session_file: Path,
        workspace: Path,
        answer=ran,
        capabilities: list[str] | None = None,
        extension_version: str = __version__,
    ) -> None:
        self.session = json.loads(session_file.read_text())
        self.workspace = workspace
        self.answer = answer
        self.capabilities = capabilities or ["run", "read", "write", "edit"]
        self.extension_version = extension_version  # this oh's release unless a test wants a mismatched pair
        self.welcome: dict = {}
        self.actions: list[dict] = []
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._conn = None
        self.error: BaseException | None = None

    def __enter__(self) -> "FakeEditor":
        self._thread.start()
        assert self._ready.wait(10), f"the fake editor did not register: {self.error!r}"
        return self

    def __exit__(self, *exc) -> None:
        if self._conn is not None:
            self._conn.close()
        self._thread.join(5)

    def _serve(self) -> None:
        token = self.session.get("editor_token") or self.session["token"]  # SPEC-wave2 E: editors have their own
        try:
            with connect(
                self.session["url"] + "/v1/editor", additional_headers={"Authorization": f"Bearer {token}"}
            ) as conn:
                self._conn = conn
                conn.send(
                    json.dumps(
                        {
                            "type": "register",
                            "protocol": PROTOCOL_VERSION,
                            "session": self.session["instance_id"],
                            "workspace_folders": [str(self.workspace)],
                            "editor": {"name": "fake", "version": "0", "pid": 1},
                            "extension_version": self.extension_version,
                            "capabilities": self.capabilities,
                        }
                    )
                )
                self.welcome = json.loads(conn.recv(10))
                assert self.welcome.get("type") == "registered"
                self._ready.set()
                for message in conn:
                    frame = json.loads(message)
                    if "action" in frame:
                        self.actions.append(frame)
                        conn.send(json.dumps(self.answer(frame)))
        except Exception as exc:  # noqa: BLE001 - surfaced by __enter__ / the test's asserts
            self.error = exc
