"""`oh mcp install CLIENT`, checked by the real clients (Claude Code, Gemini CLI, Codex CLI from npm).

Each test: an isolated HOME (see real_clients.Sandbox), a real `oh start --detach` local backend in a
tmp workspace, `oh mcp install CLIENT [--scope project]`, then the client's own command reads the
config: `claude mcp list` / `gemini mcp list` start `oh mcp` and health-check it (connected or not);
`codex mcp list --json` / `codex mcp get` only read the config (Codex has no health check).

Then one real tool call per client, end to end with no real model: the client's model API is a
scripted fake on a loopback port (tests/mcp/fake_model.py) that asks for oh's `run` tool once; the
test checks the file the command wrote, the tool result the client sent back, the backend's trace and
the agent name the client's MCP handshake gave (`oh status` while the client is still connected).
"""

from __future__ import annotations

import json
import re

import pytest
import tomlkit
from fake_model import FINAL_TEXT, FakeAnthropic, FakeGemini, FakeResponses
from real_clients import Sandbox, install_clients

pytest.importorskip("mcp", reason="the `mcp` extra is not installed (pip install -e '.[mcp,test]')")

# a test runs up to three client commands of CLIENT_TIMEOUT each; the first one may also install the clients
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module", autouse=True)
def _clients_installed():
    install_clients()


@pytest.fixture
def box(tmp_path):
    sb = Sandbox(tmp_path)
    sb.start_backend()
    yield sb
    sb.cleanup()


def _install(box: Sandbox, client: str, scope: str) -> None:
    p = box.oh("mcp", "install", client, "--scope", scope)
    assert p.returncode == 0, f"oh mcp install {client} --scope {scope} -> {p.returncode}\n{p.stdout}\n{p.stderr}"


def _server_line(output: str, name: str = "oh") -> str:
    lines = [ln for ln in output.splitlines() if ln.lstrip("✓✗○ ").startswith(f"{name}:")]
    assert len(lines) == 1, f"no single `{name}:` line in:\n{output}"
    return lines[0]


# --- what we write is what the client's own `mcp add` writes ----------------------------------------

_OWN_ADD = {  # the client's command for the same server, and where that entry lands (user scope)
    "claude": (
        ["mcp", "add", "--scope", "user", "oh", "--", "{oh}", "mcp"],
        lambda h: json.loads((h / ".claude.json").read_text())["mcpServers"]["oh"],
    ),
    "gemini": (
        ["mcp", "add", "--scope", "user", "oh", "{oh}", "mcp"],
        lambda h: json.loads((h / ".gemini" / "settings.json").read_text())["mcpServers"]["oh"],
    ),
    "codex": (
        ["mcp", "add", "oh", "--", "{oh}", "mcp"],
        lambda h: tomlkit.parse((h / ".codex" / "config.toml").read_text()).unwrap()["mcp_servers"]["oh"],
    ),
}


@pytest.mark.parametrize("client", sorted(_OWN_ADD))
def test_entry_matches_the_clients_own_mcp_add(tmp_path, client):
    theirs_box, ours_box = Sandbox(tmp_path / "theirs"), Sandbox(tmp_path / "ours")
    (theirs_box.home / ".codex").mkdir()  # codex mcp add wants CODEX_HOME to exist
    p = ours_box.oh("mcp", "install", client)
    assert p.returncode == 0, p.stderr
    args, read = _OWN_ADD[client]
    ours = read(ours_box.home)
    p = theirs_box.client(client, *[a.replace("{oh}", ours["command"]) for a in args])
    assert p.returncode == 0, f"{client} mcp add -> {p.returncode}\n{p.stdout}\n{p.stderr}"
    theirs = read(theirs_box.home)
    if client == "codex":  # plus the variables Codex would not pass on by itself (see install.CODEX_FORWARDED_ENV)
        assert ours.pop("env_vars") == ["OH_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"]
    assert ours == theirs


# --- Claude Code -----------------------------------------------------------------------------------


def test_claude_user_scope_connects(box):
    _install(box, "claude", "user")
    p = box.client("claude", "mcp", "list")
    assert p.returncode == 0, p.stderr
    line = _server_line(p.stdout)
    assert "Connected" in line and "Failed" not in line, p.stdout
    got = box.client("claude", "mcp", "get", "oh").stdout
    assert "User config" in got and "Connected" in got and re.search(r"Command: .*/oh\n", got), got


def test_claude_project_scope_connects_once_approved(box):
    _install(box, "claude", "project")
    assert (box.workspace / ".mcp.json").exists() and not (box.home / ".claude.json").exists()
    # Claude Code starts a project's .mcp.json servers only once the user approves them
    p = box.client("claude", "mcp", "get", "oh")
    assert "Project config" in p.stdout and "Pending approval" in p.stdout, p.stdout
    # ...in a folder they trust: do what the two dialogs of the first `claude` run there record (the
    # folder trust in ~/.claude.json, the approval in the project's git-ignored local settings)
    box.write_json(box.workspace / ".claude" / "settings.local.json", {"enabledMcpjsonServers": ["oh"]})
    p = box.client("claude", "mcp", "list")
    assert "Pending approval" in _server_line(p.stdout), p.stdout  # approval alone, in an untrusted folder
    box.write_json(box.home / ".claude.json", {"projects": {str(box.workspace): {"hasTrustDialogAccepted": True}}})
    p = box.client("claude", "mcp", "list")
    line = _server_line(p.stdout)
    assert "Connected" in line, p.stdout


# --- Gemini CLI ------------------------------------------------------------------------------------


def _gemini_settings(box: Sandbox) -> None:
    # the user's own settings, which `oh mcp install` must keep: no update checks, no usage statistics
    box.write_json(
        box.home / ".gemini" / "settings.json",
        {
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "privacy": {"usageStatisticsEnabled": False},
        },
    )


def _gemini_list(box: Sandbox) -> str:
    p = box.client("gemini", "mcp", "list")
    assert p.returncode == 0, p.stderr
    return p.stdout + p.stderr  # its logger writes the listing to stderr when stdout is not a terminal


@pytest.mark.parametrize("scope", ["user", "project"])
def test_gemini_connects_in_a_trusted_folder(box, scope):
    _gemini_settings(box)
    _install(box, "gemini", scope)
    settings = json.loads((box.home / ".gemini" / "settings.json").read_text())
    assert settings["privacy"] == {"usageStatisticsEnabled": False}  # kept by the merge
    # Gemini CLI starts no stdio server (user or project) in a folder the user has not trusted
    out = _gemini_list(box)
    assert "Disabled" in _server_line(out) and "untrusted" in out, out
    box.write_json(box.home / ".gemini" / "trustedFolders.json", {str(box.workspace): "TRUST_FOLDER"})
    out = _gemini_list(box)
    line = _server_line(out)
    assert "Connected" in line and "Disconnected" not in line, out


# --- Codex CLI -------------------------------------------------------------------------------------


def _codex_oh(box: Sandbox) -> dict:
    p = box.client("codex", "mcp", "list", "--json")
    assert p.returncode == 0, p.stderr
    servers = {s["name"]: s for s in json.loads(p.stdout)}
    assert "oh" in servers, p.stdout
    return servers["oh"]


@pytest.mark.parametrize("scope", ["user", "project"])
def test_codex_reads_the_entry(box, scope):
    if scope == "project":
        # Codex reads .codex/config.toml only in a project the user trusts (~/.codex/config.toml)
        (box.home / ".codex").mkdir()
        (box.home / ".codex" / "config.toml").write_text(f'[projects."{box.workspace}"]\ntrust_level = "trusted"\n')
    _install(box, "codex", scope)
    oh = _codex_oh(box)
    assert oh["enabled"] is True and oh["transport"]["type"] == "stdio", oh
    assert oh["transport"]["command"].endswith("/oh") and oh["transport"]["args"] == ["mcp"], oh
    got = box.client("codex", "mcp", "get", "oh").stdout
    assert "enabled: true" in got and "args: mcp" in got, got


# --- a real tool call, end to end: Claude Code -> `oh mcp` -> the backend -> bash ------------------


def test_claude_code_runs_a_command_through_oh(box):
    """`claude -p` with a scripted model (FakeAnthropic on loopback) that asks for oh's `run` tool once."""
    _install(box, "claude", "user")
    seen: dict = {}

    def snapshot_agents():  # while Claude Code is still connected (it waits for this answer)
        status = json.loads(box.oh("status", "--json").stdout)
        seen["agents"] = [a for s in status["sessions"] for a in s.get("agents", [])]

    with FakeAnthropic(
        "mcp__oh__run", {"command": "echo hi from claude > marker"}, on_tool_result=snapshot_agents
    ) as fake:
        p = box.client(
            "claude",
            "-p",
            "Create the marker file with the oh run tool.",
            "--allowedTools",
            "mcp__oh__run",
            "--output-format",
            "json",
            "--max-turns",
            "4",
            env={
                "ANTHROPIC_BASE_URL": fake.url,
                "ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key",
                # list MCP tools to the model up front (not behind its ToolSearch tool)
                "ENABLE_TOOL_SEARCH": "false",
                # -p mode otherwise sends its first request without waiting for MCP servers to connect
                # (checked: with a server that takes 8 s to start, these make it wait; without, it does not)
                "MCP_CONNECTION_NONBLOCKING": "false",
                "MCP_TIMEOUT": "60000",
                "MCP_CONNECT_TIMEOUT_MS": "60000",
            },
        )
    assert p.returncode == 0, f"claude -p -> {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    result = json.loads(p.stdout)
    assert result["is_error"] is False and result["result"] == FINAL_TEXT and result["permission_denials"] == [], result

    # the model saw oh's tools, and got the backend's result for its call
    offered = {t["name"] for path, body in fake.requests for t in body.get("tools") or []}
    assert {"mcp__oh__run", "mcp__oh__read", "mcp__oh__edit"} <= offered
    assert len(fake.tool_results) == 1 and not fake.tool_results[0].get("is_error"), fake.tool_results
    assert '"exit_code":0' in json.dumps(fake.tool_results[0]).replace('\\"', '"').replace(" ", "")

    # the command really ran, in the backend's workspace
    assert (box.workspace / "marker").read_text() == "hi from claude\n"

    # the backend's trace holds the action, by the agent that Claude Code's MCP client name named
    trace = [json.loads(line) for line in box.oh("logs", "--json", "-n", "100").stdout.splitlines() if line.strip()]
    runs = [
        r
        for r in trace
        if r.get("action") == "run" and r.get("kind") == "result" and "echo hi from claude" in r.get("summary", "")
    ]
    assert len(runs) == 1 and runs[0]["outcome"] == "ok" and runs[0]["exit_code"] == 0, trace
    names = {a["agent_id"]: a["name"] for a in seen["agents"]}
    assert names.get(runs[0]["agent"]) == "claude-code", (names, runs[0])


def test_codex_runs_a_command_through_oh(box):
    """`codex exec` with a custom model provider (FakeResponses on loopback, the Responses API) that calls oh's `run`.

    This also checks install's `env_vars`: the sandbox's OH_HOME reaches `oh mcp` only through it."""
    seen: dict = {}

    def snapshot_agents():
        status = json.loads(box.oh("status", "--json").stdout)
        seen["agents"] = [a for s in status["sessions"] for a in s.get("agents", [])]

    with FakeResponses(
        "mcp__oh__run", {"command": "echo hi from codex > marker"}, on_tool_result=snapshot_agents
    ) as fake:
        config = box.home / ".codex" / "config.toml"
        config.parent.mkdir()
        config.write_text(
            "# the user's settings: a model provider of their own, no approvals\n"
            'model = "fake-model"\nmodel_provider = "fake"\napproval_policy = "never"\nsandbox_mode = '
            '"danger-full-access"\n\n'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{fake.url}/v1"\nwire_api = '
            '"responses"\nenv_key = "FAKE_MODEL_KEY"\n'
        )
        _install(box, "codex", "user")
        # `codex exec` starts its first turn without waiting for MCP servers unless one is required
        doc = tomlkit.parse(config.read_text())
        doc["mcp_servers"]["oh"]["required"] = True
        config.write_text(tomlkit.dumps(doc))
        p = box.client(
            "codex",
            "exec",
            "--json",
            "--skip-git-repo-check",
            "Create the marker file with the oh run tool.",
            env={"FAKE_MODEL_KEY": "not-a-real-key"},
        )
    assert p.returncode == 0, f"codex exec -> {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    events = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    calls = [
        e["item"] for e in events if e.get("type") == "item.completed" and e["item"].get("type") == "mcp_tool_call"
    ]
    assert len(calls) == 1 and calls[0]["server"] == "oh" and calls[0]["tool"] == "run" and not calls[0].get("error"), (
        events
    )
    assert '"exit_code":0' in json.dumps(calls[0]["result"]).replace('\\"', '"').replace(" ", ""), calls[0]
    assert any(e["item"].get("text") == FINAL_TEXT for e in events if e.get("type") == "item.completed"), events

    assert (box.workspace / "marker").read_text() == "hi from codex\n"
    trace = [json.loads(line) for line in box.oh("logs", "--json", "-n", "100").stdout.splitlines() if line.strip()]
    runs = [
        r
        for r in trace
        if r.get("action") == "run" and r.get("kind") == "result" and "echo hi from codex" in r.get("summary", "")
    ]
    assert len(runs) == 1 and runs[0]["outcome"] == "ok", trace
    names = {a["agent_id"]: a["name"] for a in seen["agents"]}
    assert names.get(runs[0]["agent"]) == "codex-mcp-client", (names, runs[0])  # Codex's MCP clientInfo name


def test_gemini_cli_runs_a_command_through_oh(box):
    """`gemini -p --yolo` with GOOGLE_GEMINI_BASE_URL at FakeGemini (loopback): Gemini CLI names oh's tool
    `mcp_oh_run`."""
    seen: dict = {}

    def snapshot_agents():
        status = json.loads(box.oh("status", "--json").stdout)
        seen["agents"] = [a for s in status["sessions"] for a in s.get("agents", [])]

    _gemini_settings(box)
    settings = box.home / ".gemini" / "settings.json"
    box.write_json(
        settings, dict(json.loads(settings.read_text()), security={"auth": {"selectedType": "gemini-api-key"}})
    )
    box.write_json(box.home / ".gemini" / "trustedFolders.json", {str(box.workspace): "TRUST_FOLDER"})
    _install(box, "gemini", "user")
    with FakeGemini("mcp_oh_run", {"command": "echo hi from gemini > marker"}, on_tool_result=snapshot_agents) as fake:
        p = box.client(
            "gemini",
            "-p",
            "Create the marker file with the oh run tool.",
            "--yolo",
            "--model",
            "fake-model",
            "--output-format",
            "json",
            env={"GEMINI_API_KEY": "not-a-real-key", "GOOGLE_GEMINI_BASE_URL": fake.url},
        )
    assert p.returncode == 0, f"gemini -p -> {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    assert json.loads(p.stdout)["response"] == FINAL_TEXT, p.stdout
    assert len(fake.tool_results) == 1 and "exit code: 0" in json.dumps(fake.tool_results[0]), fake.tool_results

    assert (box.workspace / "marker").read_text() == "hi from gemini\n"
    trace = [json.loads(line) for line in box.oh("logs", "--json", "-n", "100").stdout.splitlines() if line.strip()]
    runs = [
        r
        for r in trace
        if r.get("action") == "run" and r.get("kind") == "result" and "echo hi from gemini" in r.get("summary", "")
    ]
    assert len(runs) == 1 and runs[0]["outcome"] == "ok", trace
    names = {a["agent_id"]: a["name"] for a in seen["agents"]}
    assert names.get(runs[0]["agent"]) == "gemini-cli-mcp-client", (names, runs[0])  # Gemini CLI's MCP clientInfo name
