"""oh's own SDK tools, ``background_jobs`` and ``editor_knowledge``, used by a scripted, offline SDK agent
(TestLLM + a LocalConversation) through a real `oh start --runtime local` backend. The agent is
get_default_agent's, with the tools added the documented way (``with_oh_tools``)."""

from __future__ import annotations

import json
import os
import re

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

import pytest  # noqa: E402
from openhands.sdk import Agent, Conversation  # noqa: E402
from openhands.sdk.event import AgentErrorEvent, ObservationEvent  # noqa: E402
from openhands.sdk.llm import Message, MessageToolCall, TextContent  # noqa: E402
from openhands.sdk.testing import TestLLM  # noqa: E402
from openhands.sdk.tool import Tool  # noqa: E402

import oh.integrations.openhands as ohsdk  # noqa: E402

pytestmark = pytest.mark.timeout(600)

JOBS, KNOW = ohsdk.BackgroundJobsTool.name, ohsdk.EditorKnowledgeTool.name
SECRET = "pa55-" + "w0rd-77"


class JobIdLLM(TestLLM):
    """TestLLM whose scripted tool calls may say ``"@call_N"`` where a job id goes: it becomes the id that
    call's answer named ("job j7"), as a model reads it back. The backend numbers every command, so the
    ids are not known when the script is written."""

    def completion(self, messages, *args, **kwargs):
        queue = self._scripted_responses
        if queue and isinstance(queue[0], Message) and queue[0].tool_calls:
            answers = {
                m.tool_call_id: "".join(c.text for c in m.content if isinstance(c, TextContent))
                for m in messages
                if m.role == "tool"
            }

            def job_of(match: re.Match) -> str:
                found = re.search(r"\b[Jj]ob (j\d+)", answers.get(match.group(1), ""))
                return found.group(1) if found else "j-unknown"

            calls = [
                tc.model_copy(update={"arguments": re.sub(r"@(call_\d+)", job_of, tc.arguments)})
                for tc in queue[0].tool_calls
            ]
            queue[0] = queue[0].model_copy(update={"tool_calls": calls})
        return super().completion(messages, *args, **kwargs)


class Script:
    def __init__(self, risk: str | None = None) -> None:
        self.turns: list[Message] = []
        self.risk = risk  # the security_risk label every call carries (with a security analyzer)

    def call(self, name: str, **args) -> str:
        if self.risk:
            args["security_risk"] = self.risk
        cid = f"call_{len(self.turns) + 1}"
        tc = MessageToolCall(id=cid, name=name, arguments=json.dumps(args), origin="completion")
        self.turns.append(Message(role="assistant", content=[TextContent(text="")], tool_calls=[tc]))
        return cid

    def done(self) -> list[Message]:
        return [*self.turns, Message(role="assistant", content=[TextContent(text="done")])]


def run_script(agent_factory, ws, script: Script, secrets: dict | None = None):
    conversation = Conversation(
        agent=agent_factory(JobIdLLM.from_messages(script.done())), workspace=str(ws), visualizer=None
    )
    if script.risk:
        from openhands.sdk.security.llm_analyzer import LLMSecurityAnalyzer

        conversation.set_security_analyzer(LLMSecurityAnalyzer())
    if secrets:
        conversation.update_secrets(secrets)
    conversation.send_message("go")
    try:
        conversation.run()
    finally:
        out = {}
        for ev in conversation.state.events:
            if isinstance(ev, ObservationEvent):
                out[ev.tool_call_id] = ev.observation
            elif isinstance(ev, AgentErrorEvent):
                out[ev.tool_call_id] = ev
        tools = dict(conversation.agent.tools_map)
        conversation.close()
    return out, tools


@pytest.fixture
def installed():
    ohsdk.install(name="sdk-oh-tools")
    yield
    ohsdk.uninstall()


def default_agent_with_oh_tools(llm):
    from openhands.tools.preset.default import get_default_agent

    return ohsdk.with_oh_tools(get_default_agent(llm, cli_mode=True))


def test_agent_runs_waits_reads_and_cancels_background_jobs(oh_backend, installed):
    ws = oh_backend.workspace
    s = Script(risk="MEDIUM")
    # The first job ends with exit 4 after two lines; the second runs until cancelled.
    c_start1 = s.call(JOBS, op="start", command="printf 'alpha\\n'; sleep 1; printf 'omega\\n'; exit 4")
    c_start2 = s.call(JOBS, op="start", command="sleep 300")
    c_again = s.call(JOBS, op="start", command="sleep 300")
    c_list = s.call(JOBS, op="list")
    c_wait = s.call(JOBS, op="wait", job_id=f"@{c_start1}", timeout=120)
    c_out_a = s.call(JOBS, op="output", job_id=f"@{c_start1}", offset=0, limit=6)
    c_out_b = s.call(JOBS, op="output", job_id=f"@{c_start1}", offset=6)
    c_cancel = s.call(JOBS, op="cancel", job_id=f"@{c_start2}")
    c_poll = s.call(JOBS, op="poll", job_id=f"@{c_start2}")
    c_no_id = s.call(JOBS, op="wait")
    c_secret = s.call(JOBS, op="start", command="echo token=$DEPLOY_KEY")
    c_secret_wait = s.call(JOBS, op="wait", job_id=f"@{c_secret}", timeout=120)
    c_unknown = s.call(JOBS, op="poll", job_id="j99")

    obs, tools = run_script(default_agent_with_oh_tools, ws, s, secrets={"DEPLOY_KEY": SECRET})

    assert isinstance(tools[JOBS], ohsdk.BackgroundJobsTool) and isinstance(tools[KNOW], ohsdk.EditorKnowledgeTool)
    assert isinstance(tools["terminal"], ohsdk.OhTerminalTool), "the default agent's own tools stay oh's"
    start1, start2, again = obs[c_start1], obs[c_start2], obs[c_again]
    assert start1.state == "RUNNING" and not start1.is_error and re.fullmatch(r"j\d+", start1.job_id or ""), start1.text
    assert start2.job_id not in (None, start1.job_id) and "background_jobs" in start2.text
    assert again.job_id == start2.job_id and "already running" in again.text, "the same command is not started twice"
    listed = obs[c_list]
    assert {start1.job_id, start2.job_id} <= {j["job_id"] for j in listed.jobs}, listed.jobs

    wait = obs[c_wait]
    assert (wait.state, wait.exit_code, wait.timed_out) == ("FAILED", 4, False), wait.text
    assert wait.is_error and "omega" in wait.text and "exit code 4" in wait.text

    out_a, out_b = obs[c_out_a], obs[c_out_b]
    assert (
        out_a.text.startswith("alpha\n") and "omega" not in out_a.text and out_a.next_offset == 6 and not out_a.eof
    ), out_a.text
    assert out_b.text.startswith("omega\n") and out_b.offset == 6 and out_b.eof, out_b.text

    cancel, poll = obs[c_cancel], obs[c_poll]
    assert cancel.state == "CANCELLED" and not cancel.is_error, cancel.text
    assert poll.state == "CANCELLED" and poll.is_error, "a cancelled job is something the model must notice"

    no_id = obs[c_no_id]
    assert no_id.is_error and "needs `job_id`" in no_id.text

    assert obs[c_secret].job_id not in (None, start1.job_id, start2.job_id)
    secret_wait = obs[c_secret_wait]
    assert secret_wait.state == "SUCCEEDED" and secret_wait.exit_code == 0
    assert SECRET not in secret_wait.text and "token=<secret-hidden>" in secret_wait.text, secret_wait.text

    unknown = obs[c_unknown]
    assert unknown.is_error and "j99" in unknown.text, unknown.text

    # The jobs' commands are in the backend's trace with the model's risk label (the live view shows it).
    starts = [e for e in oh_backend.trace() if e.get("kind") == "request" and "sleep 300" in str(e.get("summary"))]
    assert starts and all(e.get("security_risk") == "MEDIUM" for e in starts), json.dumps(starts)


def test_editor_knowledge_against_the_local_runtime(oh_backend, installed):
    ws = oh_backend.workspace
    (ws / "shapes.py").write_text("class Circle:\n    pass\n\n\ndef circle_area(r):\n    return 3.14 * r * r\n")
    s = Script()
    c_symbols = s.call(KNOW, op="symbols", query="circle")
    c_diag = s.call(KNOW, op="diagnostics", path="shapes.py")
    c_def = s.call(KNOW, op="definition", path="shapes.py", line=5)
    c_refs = s.call(KNOW, op="references", path="shapes.py", line=5, column=5)

    obs, _ = run_script(lambda llm: Agent(llm=llm, tools=[Tool(name=KNOW)]), ws, s)

    symbols = obs[c_symbols]
    assert not symbols.is_error, symbols.text
    names = {(sym.get("name"), os.path.basename(sym.get("path", ""))) for sym in symbols.data.get("symbols", [])}
    assert ("Circle", "shapes.py") in names and ("circle_area", "shapes.py") in names, symbols.data
    assert symbols.data.get("source") == "ripgrep" and "ripgrep" in symbols.text, "the local answer says what it is"

    diag = obs[c_diag]
    assert diag.is_error and diag.error_id == "TOOL_UNSUPPORTED" and "oh start --runtime vscode" in diag.text, diag.text
    assert obs[c_def].is_error and "needs `path`, `line` and `column`" in obs[c_def].text
    refs = obs[c_refs]
    assert refs.is_error and refs.error_id == "TOOL_UNSUPPORTED" and "--runtime vscode" in refs.text


def test_oh_tools_without_a_backend_say_how_to_start_one(tmp_path, monkeypatch, installed):
    monkeypatch.setenv("OH_HOME", str(tmp_path / "empty-home"))
    ws = tmp_path / "lonely"
    ws.mkdir()
    s = Script()
    c_jobs = s.call(JOBS, op="list")
    c_know = s.call(KNOW, op="editors")
    obs, _ = run_script(lambda llm: Agent(llm=llm, tools=ohsdk.oh_tools()), ws, s)
    for cid in (c_jobs, c_know):
        assert obs[cid].is_error and "No oh backend serves" in obs[cid].text and "oh start" in obs[cid].text, obs[
            cid
        ].text


def test_agent_ensures_the_environment_once_then_a_noop(oh_backend, installed):
    import shutil
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from ensure_projects import node_project

    if shutil.which("npm") is None:
        pytest.skip("npm is needed (extension/e2e/setup.sh installs it)")
    ws = oh_backend.workspace
    node_project(ws)
    s = Script()
    c_first = s.call(ohsdk.EnsureEnvironmentTool.name)
    c_second = s.call(ohsdk.EnsureEnvironmentTool.name, targets=["node"])
    c_bad = s.call(ohsdk.EnsureEnvironmentTool.name, path="/")
    obs, tools = run_script(default_agent_with_oh_tools, ws, s)
    assert isinstance(tools[ohsdk.EnsureEnvironmentTool.name], ohsdk.EnsureEnvironmentTool)
    first, second, bad = obs[c_first], obs[c_second], obs[c_bad]
    assert (
        first.state == "ready"
        and not first.is_error
        and first.targets[0]["did"] == "installed"
        and "npm ci" in first.text
    ), first.text
    assert second.state == "ready" and second.targets[0]["did"] == "nothing" and "nothing to do" in second.text
    assert bad.is_error and "PATH_DENIED" in bad.text
    assert (ws / "node_modules" / ".bin" / "tiny").exists()
