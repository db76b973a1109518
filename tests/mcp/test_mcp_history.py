"""`oh mcp`'s history and undo tools against a real backend with history on (`oh start --history`), driven by
the `mcp` SDK's stdio client: two agents (two MCP clients with their own names) running real bash. An agent
sees and undoes only its own actions, never another's, never past the user's later edit."""

from __future__ import annotations

import pytest

from conftest import mcp_session, text_of
from oh.mcp import history_tools, tools

pytestmark = [pytest.mark.slow]


def test_the_tools_are_listed_and_their_arguments_checked():
    assert {"history", "undo"} <= set(tools.TOOL_NAMES)
    with pytest.raises(tools.ArgumentError, match="needs the argument 'entry'"):
        tools.check_arguments("undo", {})
    with pytest.raises(tools.ArgumentError, match=">= 1"):
        tools.check_arguments("history", {"entry": 0})
    # The frame names the agent: the backend keeps an agent to its own entries.
    assert history_tools.request("undo", {"entry": 3}, "alice") == {
        "type": "history",
        "op": "undo",
        "entry": 3,
        "agent": "alice",
        "to": False,
    }


async def test_an_agent_lists_and_undoes_only_its_own_actions(oh):
    ws = oh.workspace
    (ws / "app.py").write_text("DEBUG = True\nPORT = 80\n")
    (ws / "shared.txt").write_text("v1\n")
    oh.start("local", None, "--history")
    async with mcp_session(oh, client="alice") as alice, mcp_session(oh, client="bob") as bob:
        r = await alice.call_tool("run", {"command": "sed -i 's/True/False/' app.py && mkdir -p gen && echo x > gen/o"})
        assert not r.is_error, text_of(r)
        r = await bob.call_tool("run", {"command": "echo bob > bob.txt"})
        assert not r.is_error, text_of(r)

        mine = await alice.call_tool("history", {})
        assert not mine.is_error, text_of(mine)
        [entry] = mine.structured_content["entries"]
        assert (entry["kind"], entry["files"], entry["created"]) == ("run", 2, 1) and "sed -i" in entry["what"]
        bobs = (await bob.call_tool("history", {})).structured_content["entries"]
        assert [e["what"] for e in bobs] == ["echo bob > bob.txt"]

        shown = await alice.call_tool("history", {"entry": entry["id"]})
        assert not shown.is_error and "-DEBUG = True" in text_of(shown) and "+DEBUG = False" in text_of(shown)
        other = await alice.call_tool("history", {"entry": bobs[0]["id"]})
        assert other.is_error and "not yours" in text_of(other) and "bob" not in text_of(other).split("\n", 1)[-1]

        # Never another agent's action: refused, and bob's file is untouched.
        refused = await alice.call_tool("undo", {"entry": bobs[0]["id"]})
        assert refused.is_error and "bob's, not yours" in text_of(refused)
        assert (ws / "bob.txt").read_text() == "bob\n"

        # Its own: reverted, directories it made included; the undo is an entry of its own.
        done = await alice.call_tool("undo", {"entry": entry["id"]})
        assert not done.is_error, text_of(done)
        assert (ws / "app.py").read_text() == "DEBUG = True\nPORT = 80\n" and not (ws / "gen").exists()
        after = (await alice.call_tool("history", {})).structured_content["entries"]
        assert [e["kind"] for e in after] == ["run", "undo"]

        # Never past the user's later edit: the file changed since, the undo changes nothing and names it.
        r = await alice.call_tool("run", {"command": "sed -i 's/v1/v2/' shared.txt && echo n > new.txt"})
        assert not r.is_error, text_of(r)
        last = (await alice.call_tool("history", {})).structured_content["entries"][-1]
        (ws / "shared.txt").write_text("v2, and the user's line\n")
        blocked = await alice.call_tool("undo", {"entry": last["id"]})
        assert blocked.is_error and "shared.txt" in text_of(blocked) and "CONFLICT" in text_of(blocked)
        assert (ws / "shared.txt").read_text() == "v2, and the user's line\n" and (ws / "new.txt").exists()


async def test_without_history_the_tools_say_how_to_turn_it_on(oh):
    oh.start("local")
    async with mcp_session(oh, client="alice") as s:
        r = await s.call_tool("history", {})
        assert r.is_error and "HISTORY_OFF" in text_of(r) and "--history" in text_of(r)
