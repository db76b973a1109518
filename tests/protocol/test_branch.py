"""Branch mode's pure rules (docs/protocol.md §3.12); the extension mirrors them (extension/test/branch.test.ts)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from oh.protocol.branch import Plan, RepoState, auto_name, decide, is_change, note, unique_name, valid_name


@pytest.mark.parametrize(
    ("kind", "args", "change"),
    [
        ("write", {"path": "a"}, True),
        ("edit", {"command": "str_replace"}, True),
        ("edit", {"command": "view"}, False),
        ("run", {"command": "ls"}, True),
        ("run", {"command": "  "}, False),  # an empty run only reads more output
        ("run", {"command": "y", "is_input": True}, False),  # input to the command that already triggered it
        ("read", {"path": "a"}, False),
        ("diagnostics", {}, False),
        ("job", {"op": "list"}, False),
    ],
)
def test_which_actions_are_changes(kind, args, change) -> None:
    assert is_change(kind, args) is change


def test_names() -> None:
    when = datetime(2026, 11, 25, 8, 5, tzinfo=timezone.utc)
    assert auto_name("Claude Code!", when) == "oh/20261125-0805-claude-code"
    assert auto_name("***", when) == "oh/20261125-0805-agent"
    assert unique_name("oh/x", {"oh/x", "oh/x-2"}) == "oh/x-3"
    assert all(valid_name(n) for n in ("main", "feature/x", "oh/20261125-0805-a", "v1.2+fix"))
    assert not any(valid_name(n) for n in ("", "-x", "a..b", "a//b", "/a", "a/", "a.lock", "a b", "a~1", "x@{1}", "a."))


ARGS = Plan(None).args("coder", datetime(2026, 11, 25, 8, 5, tzinfo=timezone.utc))
CLEAN = RepoState(is_repo=True, branch="main", dirty=False, branches=frozenset({"main"}))


def test_decisions() -> None:
    assert decide(CLEAN, ARGS).steps == ["create"] and decide(CLEAN, ARGS).target == "oh/20261125-0805-coder"
    taken = RepoState(True, "main", False, frozenset({"main", "oh/20261125-0805-coder"}))
    assert decide(taken, ARGS).target == "oh/20261125-0805-coder-2"
    named = Plan("feature/x").args("coder", datetime.now(timezone.utc))
    assert decide(RepoState(True, "main", False, frozenset({"main", "feature/x"})), named).steps == ["switch"]
    assert (
        decide(RepoState(True, "feature/x", True, frozenset({"feature/x"})), named).steps == []
    )  # already there: dirty is fine
    reused = {**ARGS, "reuse": "oh/mine"}
    assert decide(RepoState(True, "oh/mine", False, frozenset({"oh/mine"})), reused).steps == []
    assert decide(RepoState(True, "main", False, frozenset({"main", "oh/mine"})), reused).target == "oh/mine"
    dirty = RepoState(True, "main", True, frozenset({"main"}))
    assert decide(dirty, ARGS).ask == "dirty"
    assert decide(dirty, ARGS, "stash").steps == ["stash", "create"]
    assert decide(dirty, ARGS, "carry").steps == ["create"]
    assert decide(dirty, ARGS, "nobranch").off
    assert "cancelled" in decide(dirty, ARGS, "cancel").refuse
    assert "--on-dirty stash" in decide(dirty, {**ARGS, "on_dirty": "abort"}).refuse
    nogit = RepoState(is_repo=False)
    assert decide(nogit, ARGS).ask == "not_git"
    assert decide(nogit, {**ARGS, "on_not_git": "init"}).steps == ["init", "create"]
    assert "--git-init" in decide(nogit, {**ARGS, "on_not_git": "abort"}).refuse
    assert "not a valid git branch name" in decide(CLEAN, {**ARGS, "name": "a..b"}).refuse


def test_notes() -> None:
    assert note({"branch": "oh/x", "created": True, "previous": "main", "stashed": True}) == (
        "[oh] Branch mode: switched to the new git branch 'oh/x' (from 'main'); uncommitted changes stashed "
        "(`git stash list`)."
    )
    assert (
        note({"branch": "f", "switched": True, "previous": "main"})
        == "[oh] Branch mode: switched to the git branch 'f' (from 'main')."
    )
    assert note({"branch": "f"}) == "[oh] Branch mode: changes go to the current git branch 'f'."
    assert note({"off": True}) == ""
