"""The pure half of `oh mcp`: argument checks, oh actions, results (no processes)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from oh.mcp import tools
from oh.mcp.backend import Backend, shell_key


def test_actions_follow_the_protocol():
    run = tools.build_action(
        "run",
        {"command": "ls", "timeout": 5, "blocking": True, "reset": True, "max_output": 0, "security_risk": "HIGH"},
        "/ws",
    )
    assert run["action"] == "run" and run["timeout"] == 5.0 and run["security_risk"] == "HIGH"
    assert run["args"]["blocking"] is True and run["args"]["reset"] is True and run["args"]["max_output"] == 0
    assert "timeout" not in tools.build_action("run", {"command": "ls", "timeout": 0}, "/ws")  # 0 = none given
    plain = tools.build_action("run", {"command": "ls"}, "/ws")["args"]
    assert "reset" not in plain and "max_output" not in plain  # older backends see exactly what they know

    read = tools.build_action("read", {"path": "a/b.txt", "view_range": [2, -1]}, "/ws/sub")
    assert (
        read["args"]["path"] == "/ws/sub/a/b.txt"
        and read["args"]["view_range"] == [2, -1]
        and "encoding" not in read["args"]
    )
    assert (
        tools.build_action("read", {"path": "/abs/x.png", "encoding": "base64"}, "/ws")["args"]["encoding"] == "base64"
    )
    assert tools.build_action("write", {"path": "../x", "content": ""}, "/ws/sub")["args"]["path"] == "/ws/x"

    sr = tools.build_action("edit", {"command": "str_replace", "path": "f", "old_str": "a"}, "/ws")["args"]
    assert sr["new_str"] == "" and sr["command"] == "str_replace"  # omitted new_str deletes, as in OpenHands
    ins = tools.build_action("edit", {"command": "insert", "path": "f", "insert_line": 0, "new_str": "x"}, "/ws")[
        "args"
    ]
    assert ins["insert_line"] == 0
    # strict-mode clients send every key, unused ones as null: those count as absent
    view = tools.build_action(
        "edit", {"command": "view", "path": "f", "file_text": None, "old_str": None, "view_range": None}, "/ws"
    )
    assert view["args"]["command"] == "view" and "view_range" not in view["args"]


@pytest.mark.parametrize(
    ("name", "args", "fragment"),
    [
        ("run", None, "needs the argument 'command'"),
        ("run", [], "must be a JSON object"),
        ("run", {"command": True}, "'command' must be a string"),
        ("run", {"command": "x", "is_input": "yes"}, "'is_input' must be true or false"),
        ("run", {"command": "x", "timeout": float("nan")}, "'timeout' must be a number"),
        ("run", {"command": "x", "max_output": 1.5}, "'max_output' must be an integer"),
        ("run", {"command": "a\x00b"}, "NUL"),
        ("read", {"path": "x\x00y"}, "NUL"),
        ("read", {"path": "x", "view_range": [1, "2"]}, "view_range"),
        ("edit", {"command": "insert", "path": "x", "new_str": "y"}, "insert_line"),
        ("edit", {"command": "view", "path": "x", "security_risk": "EXTREME"}, "'security_risk' must be one of"),
        ("nope", {}, "Unknown tool"),
    ],
)
def test_bad_arguments_say_what_to_send(name, args, fragment):
    with pytest.raises(tools.ArgumentError, match=None) as info:
        tools.build_action(name, args, "/ws")
    assert fragment in str(info.value)


def test_results_carry_exit_codes_and_errors():
    def run_obs(code, content="out", suffix=""):
        return {
            "observation": "run",
            "content": content,
            "extras": {"metadata": {"exit_code": code, "suffix": suffix, "working_dir": "/ws"}},
        }

    ok = tools.to_result("run", run_obs(0))
    assert (
        not ok.is_error
        and ok.text == "out\n[exit code: 0]"
        and ok.structured == {"exit_code": 0, "running": False, "working_dir": "/ws"}
    )
    assert tools.to_result("run", run_obs(2)).is_error
    running = tools.to_result("run", run_obs(-1, suffix="\n[The command has no new output after 30 seconds. ...]"))
    assert not running.is_error and running.structured["running"] is True and 'command ""' in running.text
    killed = tools.to_result("run", run_obs(-1, suffix="\n[The command timed out after 1 seconds and was killed ...]"))
    assert killed.is_error and killed.structured["running"] is False
    err = tools.to_result(
        "read", {"observation": "error", "content": "no such file", "extras": {"error_id": "TOOL_ERROR"}}
    )
    assert err.is_error and err.text == "TOOL_ERROR: no such file" and err.structured["error_id"] == "TOOL_ERROR"

    img = tools.to_result(
        "read",
        {
            "observation": "read",
            "content": "iVBORw0KGgo=",
            "extras": {"path": "/ws/a.png", "encoding": "base64", "mime_type": "image/png"},
        },
    )
    assert img.image == ("iVBORw0KGgo=", "image/png") and img.structured["size"] == 8 and not img.is_error
    blob = tools.to_result(
        "read",
        {
            "observation": "read",
            "content": "AAE=",
            "extras": {"path": "/ws/a.bin", "encoding": "base64", "mime_type": "application/octet-stream"},
        },
    )
    assert blob.image is None and blob.text == "AAE="


def test_shell_key_fits_the_header_alphabet():
    assert shell_key("claude-code") == "mcp-claude-code"
    assert shell_key("Visual Studio Code / Copilot") == "mcp-Visual-Studio-Code-Copilot"
    assert shell_key("") == "mcp-client" and len(shell_key("x" * 200)) == 64


def test_missing_sdk_says_how_to_install(tmp_path):
    # a stand-in `mcp` package that fails to import, first on the path
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("raise ImportError('No module named mcp', name='mcp')\n")
    code = "import sys; sys.path.insert(0, %r); from oh.cli import main; sys.argv = ['oh', 'mcp']; main()" % str(
        tmp_path
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert (
        p.returncode == 1
        and f"{sys.executable} -m pip install 'mcp" in p.stderr
        and "the `mcp` extra" in p.stderr
        and p.stdout == ""
    )


def test_an_unexpanded_workspace_variable_falls_back_to_the_cwd(tmp_path):
    assert Backend(workspace="${workspaceFolder}", cwd=str(tmp_path)).target == str(tmp_path.resolve())
    assert Backend(workspace=str(tmp_path / "x"), cwd="/").target == str((tmp_path / "x").resolve())


def test_long_reads_are_cut_at_a_line_end_with_where_to_read_on():
    text = "".join(f"line {i:06d}\n" for i in range(1, 20001))  # 12 chars a line, 240,000 in all
    r = tools.to_result(
        "read",
        {"observation": "read", "content": text, "extras": {"path": "/ws/big"}},
        {"args": {"view_range": [101, -1]}},
    )
    assert r.structured["truncated"] is True and r.structured["total_chars"] == len(text)
    last = r.structured["last_line"]
    body, note = r.text.rsplit("\n[Cut here", 1)
    assert body.endswith(f"line {last - 100:06d}\n") and f"view_range [{last + 1}, -1]" in note
    assert len(r.text) <= tools.READ_LIMIT + 300
    small = tools.to_result("read", {"observation": "read", "content": "x\n", "extras": {"path": "/ws/s"}})
    assert small.text == "x\n" and "truncated" not in small.structured


def test_write_and_edit_pass_the_precondition_and_results_carry_the_version():
    """Several agents (docs/protocol.md §3.18): if_version/force reach the frame only when given; a view sends
    neither; a read/write/edit result's structured content carries the file's version; STALE is an error result."""
    w = tools.build_action("write", {"path": "a.py", "content": "x", "if_version": "b2:00", "force": True}, "/w")
    assert w["args"]["if_version"] == "b2:00" and w["args"]["force"] is True
    plain = tools.build_action("write", {"path": "a.py", "content": "x"}, "/w")
    assert "if_version" not in plain["args"] and "force" not in plain["args"]
    e = tools.build_action(
        "edit", {"command": "str_replace", "path": "a.py", "old_str": "a", "if_version": "b2:1"}, "/w"
    )
    assert e["args"]["if_version"] == "b2:1"
    v = tools.build_action("edit", {"command": "view", "path": "a.py", "if_version": "b2:1", "force": True}, "/w")
    assert "if_version" not in v["args"] and "force" not in v["args"]
    read = tools.to_result(
        "read", {"observation": "read", "content": "x", "extras": {"path": "/w/a.py", "version": "b2:9"}}
    )
    assert read.structured == {"path": "/w/a.py", "version": "b2:9"}
    stale = tools.to_result(
        "write", {"observation": "error", "content": "STALE: a.py changed", "extras": {"error_id": "STALE"}}
    )
    assert stale.is_error and stale.text.startswith("STALE: ")


def test_claim_and_release_tools():
    c = tools.build_action("claim", {"paths": ["src", "*.md"], "ttl": 60}, "/w")
    assert c["action"] == "claim" and c["args"] == {"paths": ["/w/src", "/w/*.md"], "ttl": 60}
    assert tools.build_action("release", {}, "/w")["args"] == {}
    with pytest.raises(tools.ArgumentError, match="paths"):
        tools.build_action("claim", {"paths": [3]}, "/w")
    made = tools.to_result(
        "claim",
        {"observation": "claim", "content": "Claimed 1 path(s)", "extras": {"claim_id": "k1", "paths": ["/w/src"]}},
    )
    assert not made.is_error and made.structured == {"claim_id": "k1", "paths": ["/w/src"]}
