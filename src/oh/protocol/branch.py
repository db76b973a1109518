"""Git-branch mode (docs/protocol.md §3.12), the pure part: which actions are changes, the branch
name, and what to do given the repository's state and the user's choices.

Both places that switch branches use it: the local runtime (``oh.gitrepo`` runs git) and the
backend's request to an editor (the ``branch`` frame); the VS Code extension mirrors ``decide`` in
``extension/src/branch.ts``. ``oh start`` uses ``question`` to ask before the backend starts.

No I/O: the caller inspects the repository and carries out the steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import kinds

# What to do with uncommitted changes when the branch is created. "ask": the editor asks the user (a
# modal in VS Code); without an editor there is nobody to ask, so it is refused with the flag to pass.
ON_DIRTY = ("ask", "stash", "carry", "abort")
# A folder that is not a git repository: ask (the editor's modal), init, or abort.
ON_NOT_GIT = ("ask", "init", "abort")
# What `oh start` also takes for both (the settings on_dirty / on_not_git): "review" = start in review
# mode, without a branch, when the tree is dirty / not a repository at start. The backend gets "ask" then.
START_ONLY = ("review",)
# The answers of the interactive prompts (terminal and VS Code modal). "review" (fall back to proposal
# mode, §3.11) is settled before the backend starts, so only `oh start`'s prompt and flags offer it: a
# running backend cannot turn review on (its editor learnt the mode when it registered).
CHOICES = {
    "stash": "Stash the changes, then switch to the new branch",
    "carry": "Carry the changes to the new branch (git checkout -b keeps them)",
    "init": "Run `git init` here, then create the branch",
    "review": "Use review mode instead of a branch (you accept or reject each change the agent proposes)",
    "nobranch": "Don't use a branch for this session (changes go to the current branch)",
    "cancel": "Cancel (the agent's action is refused; nothing changes)",
}

BRANCH_PREFIX = "oh/"
_SLUG_BAD = re.compile(r"[^a-z0-9]+")
# A subset of git check-ref-format that is easy to state and covers every name we generate.
_NAME_OK = re.compile(r"^(?!/)(?!.*//)(?!.*\.\.)(?!.*@\{)(?!.*\.lock(/|$))[A-Za-z0-9._/+-]{1,200}(?<![/.])$")


def is_change(kind: str, args: dict[str, Any]) -> bool:
    """Whether an action may change files, so the branch must be in place before it runs.

    write and edit (except ``view``), every new command (a command can change anything) and ``ensure``;
    not reads, knowledge actions, job ops, input to a running command or an empty ``run`` (the kind
    table's ``changes``; an unknown kind may change files).
    """
    return kinds.changes_files(kind, args)


def valid_name(name: str) -> bool:
    """What git's check-ref-format --branch accepts, for the characters we allow: besides ``_NAME_OK``,
    no path component may start with '.' (``.a``, ``a/.b``) and ``HEAD`` names no branch."""
    return (
        bool(_NAME_OK.match(name))
        and not name.startswith("-")
        and not name.endswith(".")
        and not any(part.startswith(".") for part in name.split("/"))
        and name != "HEAD"
    )


def auto_name(agent: str, now: datetime) -> str:
    """``oh/<date>-<time>-<agent>``: readable in VS Code's branch picker and sorted by time."""
    slug = _SLUG_BAD.sub("-", agent.lower()).strip("-")[:30].strip("-") or "agent"
    return f"{BRANCH_PREFIX}{now:%Y%m%d-%H%M}-{slug}"


def unique_name(base: str, existing: set[str]) -> str:
    """``base``, else ``base-2``, ``base-3``... : an existing branch is never clobbered."""
    if base not in existing:
        return base
    n = 2
    while f"{base}-{n}" in existing:
        n += 1
    return f"{base}-{n}"


@dataclass(frozen=True)
class Plan:
    """The user's branch-mode settings as the backend received them."""

    name: str | None = None  # None: an automatic oh/<slug> name
    on_dirty: str = "ask"
    on_not_git: str = "ask"

    def args(self, agent: str, now: datetime, reuse: str | None = None) -> dict[str, Any]:
        """The ``branch`` frame's args (§3.12): the name to use and the choices already made."""
        named = self.name is not None
        return {
            "name": self.name if named else auto_name(agent, now),
            "named": named,
            "reuse": reuse,
            "on_dirty": self.on_dirty,
            "on_not_git": self.on_not_git,
        }


@dataclass(frozen=True)
class RepoState:
    is_repo: bool
    branch: str | None = None  # current branch; None when detached
    dirty: bool = False  # uncommitted changes (staged, unstaged or untracked)
    branches: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Decision:
    """What to do. ``ask`` set: a question (``dirty``/``not_git``) must be answered first; ``refuse``
    set: the message of a BRANCH_FAILED error; ``off``: no branch this session; otherwise the steps, in order."""

    target: str | None = None
    init: bool = False
    stash: bool = False
    create: bool = False  # else: switch to the existing ``target`` (or stay, when already on it)
    ask: str | None = None
    refuse: str | None = None
    off: bool = False  # the user chose "don't use a branch": branch mode ends for this session
    steps: list[str] = field(default_factory=list)


def decide(state: RepoState, args: dict[str, Any], answer: str | None = None) -> Decision:
    """The steps for ``args`` (a ``branch`` frame's) in ``state``. ``answer``: the user's choice
    (one of CHOICES) to the question a previous call returned."""
    name, reuse = args["name"], args.get("reuse")
    if not valid_name(name):
        return Decision(refuse=f"'{name}' is not a valid git branch name; choose another with --branch-name.")
    init = False
    if not state.is_repo:
        choice = answer or {"init": "init", "abort": "abort"}.get(args.get("on_not_git", "ask"))
        if choice is None:
            return Decision(ask="not_git")
        if choice != "init":
            return Decision(off=True) if choice == "nobranch" else Decision(refuse=_refusal("not_git", choice))
        init, state = True, RepoState(is_repo=True, branch=None)
    if reuse and state.branch == reuse:
        return Decision(target=reuse)  # the branch this session created: already on it
    if args.get("named") and state.branch == name:
        return Decision(target=name)  # the user's named branch, already checked out: use it
    if args.get("named") and name in state.branches:
        target, create = name, False  # the user named an existing branch: switch to it
    elif reuse and reuse in state.branches:
        target, create = reuse, False  # ours from earlier in this session (the user switched away)
    else:
        target, create = unique_name(name, set(state.branches)), True
    stash = False
    if state.dirty:
        choice = answer if answer in ("stash", "carry", "nobranch", "cancel") else None
        choice = choice or {"stash": "stash", "carry": "carry", "abort": "abort"}.get(args.get("on_dirty", "ask"))
        if choice is None:
            return Decision(ask="dirty")
        if choice not in ("stash", "carry"):
            return Decision(off=True) if choice == "nobranch" else Decision(refuse=_refusal("dirty", choice))
        stash = choice == "stash"
    steps = (["init"] if init else []) + (["stash"] if stash else []) + ["create" if create else "switch"]
    return Decision(target=target, init=init, stash=stash, create=create, steps=steps)


def _refusal(question: str, choice: str) -> str:
    if choice == "cancel":
        return "The user cancelled the branch switch; the action was not executed and nothing changed."
    if question == "not_git":
        return (
            "The workspace is not a git repository, so branch mode cannot put the changes on a branch; the action "
            "was not executed. Restart with `oh start --branch --git-init` (creates a repository), or without --branch."
        )
    return (
        "The workspace has uncommitted changes, so branch mode will not switch branches silently; the action was "
        "not executed. Restart with `oh start --branch --on-dirty stash` (stash them) or `--on-dirty carry` (take them "
        "to the new branch), or commit them first."
    )


def question_text(question: str, workspace: str, at_start: bool = False) -> tuple[str, list[str]]:
    """The prompt for ``question`` and its choices (keys of CHOICES), for the terminal and the modal.
    ``at_start``: `oh start`'s prompt, which can also fall back to review mode."""
    review = ["review"] if at_start else []
    if question == "not_git":
        return f"{workspace} is not a git repository. Branch mode needs one.", ["init", *review, "nobranch", "cancel"]
    return (
        f"{workspace} has uncommitted changes. Branch mode switches to a new branch before the agent's first change.",
        ["stash", "carry", *review, "nobranch", "cancel"],
    )


def note(result: dict[str, Any]) -> str:
    """The line the first change's observation carries (the agent learns where its changes go)."""
    branch = result.get("branch")
    if not branch:
        return ""
    bits = []
    if result.get("initialized"):
        bits.append("after `git init`")
    if result.get("stashed"):
        bits.append("uncommitted changes stashed (`git stash list`)")
    elif result.get("carried"):
        bits.append("uncommitted changes carried over")
    previous = result.get("previous")
    if result.get("created"):
        head = f"[oh] Branch mode: switched to the new git branch '{branch}'" + (
            f" (from '{previous}')" if previous else ""
        )
    elif result.get("switched"):
        head = f"[oh] Branch mode: switched to the git branch '{branch}'" + (
            f" (from '{previous}')" if previous else ""
        )
    else:
        head = f"[oh] Branch mode: changes go to the current git branch '{branch}'"
    return head + ("; " + ", ".join(bits) if bits else "") + "."
