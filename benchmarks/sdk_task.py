"""Issue 13 item 5: one scripted OpenHands SDK task, executed by oh and by the SDK's own terminals.

The same offline agent (the SDK's ``TestLLM`` replaying a fixed list of tool calls, like
tests/integrations/openhands_sdk/test_sdk_agent.py) does a small realistic task: create a module and
its test, edit the module, view it, run the tests, a failing command, a long (2 s) command, a long
output. It runs once per round in each mode, each round in a fresh directory with a fresh
conversation (so each terminal starts cold, as an agent's does):

- ``oh``: ``oh.integrations.openhands.install()``; the SDK's terminal and file editor act through a
  running oh backend (``--runtime local`` started here, or an existing one given with ``--oh-home``,
  e.g. ``--runtime vscode`` with a real VS Code: benchmarks/vscode_e2e.py does that);
- ``sdk-subprocess`` / ``sdk-tmux``: no oh; the SDK's own ``TerminalTool`` with that
  ``terminal_type`` and its own file editor.

Per tool call: the time from the SDK's ``ActionEvent`` to its ``ObservationEvent`` (what the agent
loop waits for). Per task: the wall time of ``conversation.run()`` (the terminal's start-up
included) and of the whole round (conversation created and closed). Every observation is checked
(exit code and a marker in its text); a call whose check fails is counted as a failure, with the
reason (the tmux terminal is known to drop a fresh pane's first output).

Run it with the SDK venv's Python (``scripts/integration-venvs openhands-sdk`` prints it):

    .cache/venvs/openhands-sdk-*/bin/python benchmarks/sdk_task.py [--rounds 3] [--json out.json]

Modes run in separate processes (``install()`` patches the SDK's tool registry), interleaved round by
round so load drift hits every mode alike. No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

MODES = ("oh", "sdk-subprocess", "sdk-tmux")
HERE = Path(__file__).resolve()

APP = "def add(a, b):\n    return a - b\n"
TEST = (
    "import unittest\nfrom app import add\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\nif __name__ == '__main__':\n    "
    "unittest.main()\n"
)


def script(ws: str) -> list[tuple[str, str, dict[str, Any], Any]]:
    """(label, tool, arguments, check): check(observation) -> None if fine, else why not."""
    app, test = os.path.join(ws, "app.py"), os.path.join(ws, "test_app.py")

    def ok_edit(o):
        return None if not o.is_error else f"error: {o.text[:120]}"

    def term(marker: str, code: int):
        def check(o):
            if o.is_error:
                return f"error: {o.text[:120]}"
            if getattr(o, "exit_code", None) != code:
                return f"exit code {getattr(o, 'exit_code', None)} (expected {code})"
            return None if marker in o.text else f"{marker!r} missing from the output ({o.text[:80]!r})"

        return check

    return [
        ("first command", "terminal", {"command": "echo first-$((40+2))"}, term("first-42", 0)),
        ("create app.py", "file_editor", {"command": "create", "path": app, "file_text": APP}, ok_edit),
        ("create test_app.py", "file_editor", {"command": "create", "path": test, "file_text": TEST}, ok_edit),
        ("run tests (fail)", "terminal", {"command": "python3 -m unittest -q test_app"}, term("FAILED", 1)),
        (
            "edit app.py",
            "file_editor",
            {"command": "str_replace", "path": app, "old_str": "a - b", "new_str": "a + b"},
            ok_edit,
        ),
        (
            "view app.py",
            "file_editor",
            {"command": "view", "path": app},
            lambda o: None if (not o.is_error and "a + b" in o.text) else f"view: {o.text[:120]}",
        ),
        ("run tests (pass)", "terminal", {"command": "python3 -m unittest -q test_app"}, term("OK", 0)),
        ("failing command", "terminal", {"command": "sh -c 'echo failing; exit 3'"}, term("failing", 3)),
        ("long command (2 s)", "terminal", {"command": "sleep 2; echo long-done"}, term("long-done", 0)),
        ("long output (20k lines)", "terminal", {"command": "seq 1 20000"}, term("19999", 0)),
        ("echo", "terminal", {"command": "echo bye"}, term("bye", 0)),
    ]


# ---------------------------------------------------------------------------------- one mode (child)
def run_mode(mode: str, base: str, rounds: list[int]) -> dict[str, Any]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
    t0 = time.perf_counter()
    from openhands.sdk import Agent, Conversation
    from openhands.sdk.event import ActionEvent, AgentErrorEvent, ObservationEvent
    from openhands.sdk.llm import Message, MessageToolCall, TextContent
    from openhands.sdk.testing import TestLLM
    from openhands.sdk.tool import Tool
    from openhands.tools.file_editor import FileEditorTool
    from openhands.tools.terminal import TerminalTool

    if mode == "oh":
        from oh.integrations.openhands import OhTerminalTool, install

        install(name=f"bench-{mode}")
    import_s = time.perf_counter() - t0
    names = {"terminal": TerminalTool.name, "file_editor": FileEditorTool.name}
    results = []
    for r in rounds:
        ws = os.path.join(base, f"{mode}-{r}")
        os.makedirs(ws)
        steps = script(ws)
        turns, labels = [], {}
        for i, (_label, tool, args, _check) in enumerate(steps):
            cid = f"call_{i}"
            labels[cid] = i
            call = MessageToolCall(
                id=cid, name=names[tool], arguments=json.dumps({**args, "security_risk": "LOW"}), origin="completion"
            )
            turns.append(Message(role="assistant", content=[TextContent(text="")], tool_calls=[call]))
        turns.append(Message(role="assistant", content=[TextContent(text="done")]))
        params = {} if mode == "oh" else {"terminal_type": mode.removeprefix("sdk-")}
        t_round = time.perf_counter()
        agent = Agent(
            llm=TestLLM.from_messages(turns),
            tools=[Tool(name=TerminalTool.name, params=params), Tool(name=FileEditorTool.name)],
        )
        conversation = Conversation(agent=agent, workspace=ws, visualizer=None)
        conversation.send_message("Fix add() so the tests pass, then poke at the terminal.")
        t_run = time.perf_counter()
        conversation.run()
        run_s = time.perf_counter() - t_run
        through_oh = mode != "oh" or isinstance(conversation.agent.tools_map[TerminalTool.name], OhTerminalTool)
        started: dict[str, datetime] = {}
        calls: list[dict[str, Any]] = [{"label": s[0], "ms": None, "failure": "no observation"} for s in steps]
        for ev in conversation.state.events:
            if isinstance(ev, ActionEvent) and ev.tool_call_id in labels:
                started[ev.tool_call_id] = datetime.fromisoformat(ev.timestamp)
            elif isinstance(ev, (ObservationEvent, AgentErrorEvent)) and ev.tool_call_id in labels:
                i = labels[ev.tool_call_id]
                t_start = started.get(ev.tool_call_id)
                ms = (datetime.fromisoformat(ev.timestamp) - t_start).total_seconds() * 1000 if t_start else None
                failure = (
                    f"agent error: {ev.error[:120]}" if isinstance(ev, AgentErrorEvent) else steps[i][3](ev.observation)
                )
                calls[i] = {"label": steps[i][0], "ms": round(ms, 2) if ms is not None else None, "failure": failure}
        conversation.close()
        round_s = time.perf_counter() - t_round
        if not through_oh:
            calls.append(
                {
                    "label": "(setup)",
                    "ms": None,
                    "failure": "oh mode fell back to the SDK's own terminal: no backend serves the directory",
                }
            )
        results.append({"round": r, "run_s": round(run_s, 3), "round_s": round(round_s, 3), "calls": calls})
        shutil.rmtree(ws, ignore_errors=True)
    return {"mode": mode, "import_s": round(import_s, 2), "rounds": results}


# ---------------------------------------------------------------------------------- driver
def _child(mode: str, base: str, rounds: list[int], env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(HERE), "--child", mode, "--base", base, "--round-ids", ",".join(map(str, rounds))],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        cwd=base,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"mode {mode} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _oh(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "oh", *args], capture_output=True, text=True, env=env, timeout=120)


def summarize(per_mode: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode, rounds in per_mode.items():
        labels = [c["label"] for c in rounds[0]["calls"]]
        per_call = {}
        for i, label in enumerate(labels):
            xs = [r["calls"][i]["ms"] for r in rounds if i < len(r["calls"]) and r["calls"][i]["ms"] is not None]
            per_call[label] = round(statistics.median(xs), 2) if xs else None
        failures = [
            f"round {r['round']}: {c['label']}: {c['failure']}" for r in rounds for c in r["calls"] if c["failure"]
        ]
        out[mode] = {
            "task_run_s_median": round(statistics.median(r["run_s"] for r in rounds), 3),
            "task_round_s_median": round(statistics.median(r["round_s"] for r in rounds), 3),
            "task_run_s": [r["run_s"] for r in rounds],
            "per_call_ms_median": per_call,
            "calls": sum(len(r["calls"]) for r in rounds),
            "failures": len(failures),
            "failure_details": failures,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument(
        "--oh-home", help="use the oh backend(s) of this OH_HOME (e.g. a VS Code one) instead of starting a local one"
    )
    ap.add_argument("--workspace", help="with --oh-home: a directory the backend serves (rounds run in subdirectories)")
    ap.add_argument("--label", default="oh", help="name of the oh mode in the results (e.g. oh-vscode)")
    ap.add_argument("--json", dest="json_out")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--base", help=argparse.SUPPRESS)
    ap.add_argument("--round-ids", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(run_mode(a.child, a.base, [int(x) for x in a.round_ids.split(",")])))
        return 0

    modes = [m for m in a.modes.split(",") if m]
    tmp = tempfile.mkdtemp(prefix="oh-sdk-task-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", OPENHANDS_SUPPRESS_BANNER="1")
    started_backend = False
    try:
        if a.oh_home:
            env["OH_HOME"] = a.oh_home
            base = os.path.realpath(a.workspace or os.getcwd())
        else:
            env["OH_HOME"] = os.path.join(tmp, "ohhome")
            base = os.path.join(tmp, "ws")
            os.makedirs(base)
            if "oh" in modes:
                proc = _oh(env, "start", "--runtime", "local", "--workspace", base, "--detach", "--no-open", "--json")
                if proc.returncode != 0:
                    raise RuntimeError(f"oh start failed: {proc.stderr[-2000:]}")
                started_backend = True
        per_mode: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        imports: dict[str, list[float]] = {m: [] for m in modes}
        load_before = os.getloadavg()
        t0 = time.monotonic()
        for r in range(a.rounds):
            order = modes[r % len(modes) :] + modes[: r % len(modes)]  # rotate who goes first
            for m in order:
                res = _child(m, base, [r], env)
                per_mode[m] += res["rounds"]
                imports[m].append(res["import_s"])
        summary = summarize(per_mode)
        if "oh" in summary and a.label != "oh":
            summary[a.label] = summary.pop("oh")
        result = {
            "date": datetime.now().astimezone().isoformat(timespec="seconds"),
            "seconds": round(time.monotonic() - t0, 1),
            "rounds": a.rounds,
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "backend": "given (--oh-home)" if a.oh_home else "oh start --runtime local",
            "modes": summary,
            "sdk_import_s_median": {m: round(statistics.median(v), 2) for m, v in imports.items()},
        }
        print(render(result))
        if a.json_out:
            Path(a.json_out).write_text(json.dumps(result, indent=2))
        return 0
    finally:
        if started_backend:
            _oh(env, "stop", "--all")
        shutil.rmtree(tmp, ignore_errors=True)


def render(res: dict[str, Any]) -> str:
    modes = list(res["modes"])
    labels = list(next(iter(res["modes"].values()))["per_call_ms_median"])
    lines = [
        f"SDK task, {res['rounds']} round(s) per mode, load {res['load_before']} -> {res['load_after']}",
        "| tool call (median ms) | " + " | ".join(modes) + " |",
        "|---|" + "---:|" * len(modes),
    ]
    for label in labels:
        lines.append(
            f"| {label} | " + " | ".join(str(res["modes"][m]["per_call_ms_median"].get(label)) for m in modes) + " |"
        )
    lines.append(
        "| **whole task: conversation.run() s (median)** | "
        + " | ".join(str(res["modes"][m]["task_run_s_median"]) for m in modes)
        + " |"
    )
    lines.append(
        "| whole round incl. conversation setup/close s | "
        + " | ".join(str(res["modes"][m]["task_round_s_median"]) for m in modes)
        + " |"
    )
    lines.append(
        "| failed calls / calls | "
        + " | ".join(f"{res['modes'][m]['failures']} / {res['modes'][m]['calls']}" for m in modes)
        + " |"
    )
    for m in modes:
        for f in res["modes"][m]["failure_details"]:
            lines.append(f"  {m}: {f}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
