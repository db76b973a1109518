"""``oh start --branch``: settle branch mode's questions before the backend starts (docs/protocol.md §3.12).

A dirty tree or a folder that is not a git repository is never switched silently. On a terminal the
user is asked here (the same choices as VS Code's dialog); without one (--detach, --json, no TTY)
the answer must come from a flag (--on-dirty, --git-init) or, with --runtime vscode, from the
dialog VS Code shows at the agent's first change. Otherwise `oh start` refuses, naming the flag.
"""

from __future__ import annotations

import os
import sys

from ..protocol import runtimenames
from ..protocol.branch import CHOICES, Plan, decide, question_text
from ._common import ERROR, USAGE, die, err

REVIEW = "review"  # settle's answer: no branch, start in review mode instead (§3.11)


def settle(workspace: str, runtime: str, plan: Plan, interactive: bool) -> Plan | str | None:
    """The plan to start the backend with; None = the user chose no branch; REVIEW = review mode instead."""
    from .. import gitrepo

    workspace = os.path.realpath(workspace)
    try:
        state = gitrepo.inspect(workspace)
    except gitrepo.GitError as exc:
        die(str(exc), ERROR, "Start without --branch, or install git.")
    args = {**plan.args("agent", _now()), "name": plan.name or "oh/check"}
    decision = decide(state, args)
    while decision.ask is not None:
        if (plan.on_dirty if decision.ask == "dirty" else plan.on_not_git) == "review":
            return _review_instead(decision.ask)
        if not interactive:
            if runtimenames.uses_editor(runtime):
                return plan  # VS Code asks with a dialog at the agent's first change
            die(*_needs_flag(decision.ask, workspace))
        answer = _prompt(decision.ask, workspace)
        if answer == "nobranch":
            err("branch mode is off for this session: changes go to the current branch.")
            return None
        if answer == "cancel":
            die("cancelled: the backend was not started.", ERROR)
        if answer == "review":
            return _review_instead(decision.ask)
        plan = Plan(
            plan.name,
            answer if answer in ("stash", "carry") else plan.on_dirty,
            "init" if answer == "init" else plan.on_not_git,
        )
        decision = decide(state, {**args, "on_dirty": plan.on_dirty, "on_not_git": plan.on_not_git})
    if decision.refuse is not None:
        die(decision.refuse, USAGE)
    return plan


def _review_instead(question: str) -> str:
    why = "uncommitted changes" if question == "dirty" else "no git repository"
    err(
        f"branch mode is off for this session ({why}): review mode instead, every write/edit waits for your "
        "accept/reject."
    )
    return REVIEW


def _needs_flag(question: str, workspace: str) -> tuple[str, int, str]:
    if question == "not_git":
        return (
            f"{workspace} is not a git repository, and branch mode needs one.",
            USAGE,
            (
                "Pass --git-init to create it (`git init`), or --review to review each change instead, or start "
                "without --branch."
            ),
        )
    return (
        (
            f"{workspace} has uncommitted changes; branch mode will not switch branches without being told what "
            "to do with them."
        ),
        USAGE,
        "Pass --on-dirty stash (stash them first), --on-dirty carry (take them to the new branch) or --on-dirty review "
        "(review each change instead of a branch), or commit them.",
    )


def _prompt(question: str, workspace: str) -> str:
    """Ask on the terminal; end of input or five wrong answers = cancel (never a hang)."""
    text, keys = question_text(question, workspace, at_start=True)
    sys.stderr.write(f"oh: {text}\n" + "".join(f"  {i}) {CHOICES[key]}\n" for i, key in enumerate(keys, 1)))
    for _ in range(5):
        sys.stderr.write(f"choose 1-{len(keys)}: ")
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            return "cancel"
        pick = line.strip().lower()
        if pick.isdigit() and 1 <= int(pick) <= len(keys):
            return keys[int(pick) - 1]
        if pick in keys:
            return pick
        err(f"answer with a number from 1 to {len(keys)}.")
    return "cancel"


def _now():
    from datetime import datetime, timezone

    return datetime.now(timezone.utc)


def flags(plan: Plan | None) -> dict[str, str]:
    """The backend's flags for ``plan`` (it reads no settings itself)."""
    if plan is None:
        return {}
    # "review" was settled here, before the start; past it (a tree that turns dirty later) the backend asks.
    out = {
        "branch": "on",
        "on_dirty": "ask" if plan.on_dirty == "review" else plan.on_dirty,
        "on_not_git": "ask" if plan.on_not_git == "review" else plan.on_not_git,
    }
    if plan.name:
        out["branch_name"] = plan.name
    return out


def complete_on_dirty(incomplete: str):
    """Shell completion of `--on-dirty`: the values with what they do."""
    values = (
        ("stash", "stash the changes, then switch"),
        ("carry", "take the changes to the new branch"),
        ("review", "review mode instead of a branch (at start)"),
        ("abort", "refuse (start, or the first change)"),
        ("ask", "the terminal prompt / VS Code's dialog"),
    )
    return [(v, h) for v, h in values if v.startswith(incomplete)]


def interactive(detach: bool, json_: bool) -> bool:
    try:
        return not detach and not json_ and sys.stdin.isatty()
    except (ValueError, OSError):
        return False
