"""The action-kind table: every trait of every action kind in one place (docs/protocol.md §3).

Pure. Each layer reads its answer here instead of keeping a list of its own: the validator (which kinds
exist, which argument check each runs), the one-line summary of the live view and the trace, branch mode
(what may change files), review mode (what becomes a proposal), the consent gate (which class of consent
a kind needs), repetition control (which kinds leave a streak alone), the vscode runtime (which capability
an editor must advertise) and the local runtime (which kinds it executes). The VS Code extension keeps its
own lists in TypeScript; tests/contract/action-kinds.json, written from this table by
tests/contract/gen_protocol_fixtures.py, holds them equal (extension/test/contract.test.ts).

Fail closed: a name not in the table is refused by the validator (TOOL_UNSUPPORTED), and its consent class
is ``unknown``, which the gate asks about and never allows. A new kind is one entry here, its check, its
executors (local runtime, extension) and its documentation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from . import argcheck
from .arbiter import check_claim_args, check_release_args
from .ensure import check_ensure_args
from .knowledge import check_knowledge_args, summarize_knowledge

# command: a new command or input typed into one; change: a file change; read: reveals content the agent
# did not have (a file, the editor's selection, symbols, a path's existence); none: nothing of the
# above (job bookkeeping, showing a file to the user). "unknown" is the answer for a name not in TABLE.
ConsentClass = Literal["command", "change", "read", "none", "unknown"]
CONSENT_CLASSES = ("command", "change", "read", "none")

Args = dict[str, Any]
Check = Callable[[Args, int], None]

WAIT_SUMMARY = "wait for output"  # the summary of an empty `run` (`oh run --wait`): not an empty cell


def _never(args: Args) -> bool:
    return False


def _always(args: Args) -> bool:
    return True


def _edit_changes(args: Args) -> bool:
    return args.get("command") != "view"


def _new_command(args: Args) -> bool:
    return not args.get("is_input") and str(args.get("command") or "").strip() != ""


def _fixed(cls: ConsentClass) -> Callable[[Args], ConsentClass]:
    return lambda args: cls


def _edit_consent(args: Args) -> ConsentClass:
    return "read" if args.get("command") == "view" else "change"


def _knowledge(kind: str) -> Check:
    return lambda args, cause: check_knowledge_args(kind, args, cause)


def _summary_run(args: Args) -> str:
    command = str(args.get("command") or "")
    if not args.get("is_input") and not command.strip() and not args.get("reset"):
        return WAIT_SUMMARY  # a follow-up: wait for more output of the command still running
    return ("input: " if args.get("is_input") else "") + ("background: " if args.get("background") else "") + command


def _summary_path(args: Args) -> str:
    return str(args.get("path") or "")


def _summary_edit(args: Args) -> str:
    return f"{args.get('command')} {args.get('path') or ''}"


def _summary_job(args: Args) -> str:
    return f"job {args.get('op')} {args.get('job_id') or ''}".strip()


def _summary_stat(args: Args) -> str:
    return f"stat {args.get('path') or ''}"


def _summary_ensure(args: Args) -> str:
    where = f" in {args['path']}" if args.get("path") else ""
    return "ensure " + " ".join(args.get("targets") or ["environment"]) + where


def _summary_claim(args: Args) -> str:
    paths = args.get("paths")
    return "claim " + " ".join(str(p) for p in paths) if isinstance(paths, list) else "claim"


def _summary_release(args: Args) -> str:
    return f"release {args.get('claim_id') or ''}".strip()


def _summary_knowledge(kind: str) -> Callable[[Args], str]:
    return lambda args: summarize_knowledge(kind, args)


@dataclass(frozen=True, slots=True)
class Kind:
    """One action kind's traits. Callables take the action's (validated) ``args``."""

    name: str
    check: Check  # raises ProtocolError(BAD_REQUEST) saying what to send
    summary: Callable[[Args], str]  # one line for humans, never file contents
    consent: Callable[[Args], ConsentClass]
    changes: Callable[[Args], bool] = _never  # may change files: branch mode switches first
    proposal: Callable[[Args], bool] = _never  # becomes a proposal in review mode
    path_fields: tuple[str, ...] = ()  # args that name a path (resolved, contained, shown relative)
    path_summary: bool = False  # the summary is a path: shown relative, cut from the left
    neutral: bool = False  # leaves a repetition streak alone (protocol/repetition.py)
    # The capability an editor advertises to execute it; None: the backend executes it (no editor).
    capability: str | None = None
    knowledge: bool = False  # an editor-knowledge kind (§3.6): needs a language server
    observation_extras: tuple[str, ...] = ()  # what its observation's extras must hold
    example: Args = field(default_factory=dict)  # valid args (docs, the contract fixture, tests of every layer)


def _knowledge_kind(name: str, consent: ConsentClass, example: Args, path_fields: tuple[str, ...] = ("path",)) -> Kind:
    return Kind(
        name,
        _knowledge(name),
        _summary_knowledge(name),
        _fixed(consent),
        path_fields=path_fields,
        capability=name,
        knowledge=True,
        example=example,
    )


_AT = {"path": "/w/a.py", "line": 1, "column": 1}


_KINDS = (
    Kind(
        "run",
        argcheck.check_run_args,
        _summary_run,
        _fixed("command"),
        changes=_new_command,
        path_fields=("cwd",),
        neutral=True,  # repetition counts new commands itself; follow-ups are neutral
        capability="run",
        observation_extras=("command",),
        example={"command": "ls"},
    ),
    Kind(
        "read",
        argcheck.check_read_args,
        _summary_path,
        _fixed("read"),
        path_fields=("path",),
        path_summary=True,
        capability="read",
        observation_extras=("path",),
        example={"path": "/w/a.py"},
    ),
    Kind(
        "write",
        argcheck.check_write_args,
        _summary_path,
        _fixed("change"),
        changes=_always,
        proposal=_always,
        path_fields=("path",),
        path_summary=True,
        capability="write",
        observation_extras=("path",),
        example={"path": "/w/a.py", "content": "x\n"},
    ),
    Kind(
        "edit",
        argcheck.check_edit_args,
        _summary_edit,
        _edit_consent,
        changes=_edit_changes,
        proposal=_edit_changes,
        path_fields=("path",),
        path_summary=True,
        capability="edit",
        observation_extras=("path",),
        example={"path": "/w/a.py", "command": "view"},
    ),
    Kind(
        "job",
        argcheck.check_job_args,
        _summary_job,
        _fixed("none"),  # the output of a command consent already let run
        neutral=True,
        capability="job",
        observation_extras=("op",),
        example={"op": "list"},
    ),
    Kind(
        "stat",
        argcheck.check_stat_args,
        _summary_stat,
        _fixed("read"),  # whether a path exists, its size and time: content the agent did not have
        path_fields=("path",),
        path_summary=True,
        neutral=True,
        capability="stat",
        observation_extras=("path", "exists"),
        example={"path": "/w/a.py"},
    ),
    Kind(
        "ensure",
        check_ensure_args,
        _summary_ensure,
        # Answered outside the consent gate (runtimes/stack.py); its installs are ordinary runs through it.
        _fixed("none"),
        # what it writes (dependencies, virtual environments) is ignored by git: no branch needed first
        changes=_never,
        path_fields=("path",),
        capability=None,  # the backend's ensure wrapper executes it (runtimes/ensure.py)
        example={},
    ),
    # issue 37 (§3.18): claims on paths, kept and enforced by the backend's arbiter (runtimes/arbiter.py)
    Kind(
        "claim",
        check_claim_args,
        _summary_claim,
        _fixed("none"),  # changes nothing; another agent's write inside it is refused
        neutral=True,
        capability=None,
        example={"paths": ["/w/a.py"], "ttl": 60},
    ),
    Kind(
        "release",
        check_release_args,
        _summary_release,
        _fixed("none"),
        neutral=True,
        capability=None,
        example={},
    ),
    _knowledge_kind("diagnostics", "read", {}),
    _knowledge_kind("open", "read", {"path": "/w/a.py"}),  # shows a file to the user; asked under `all`
    _knowledge_kind("editors", "read", {}, ()),  # the text selected in the user's editors
    _knowledge_kind("symbols", "read", {"query": ""}, ()),
    _knowledge_kind("definition", "read", _AT),
    _knowledge_kind("references", "read", _AT),
)

TABLE: dict[str, Kind] = {k.name: k for k in _KINDS}
NAMES: tuple[str, ...] = tuple(TABLE)
KNOWLEDGE: tuple[str, ...] = tuple(k.name for k in _KINDS if k.knowledge)
# What an editor may advertise for kinds (frames.KNOWN_CAPABILITIES adds the opt-in features).
KIND_CAPABILITIES: tuple[str, ...] = tuple(k.capability for k in _KINDS if k.capability is not None)
PATH_SUMMARY: frozenset[str] = frozenset(k.name for k in _KINDS if k.path_summary)


def get(kind: str) -> Kind | None:
    return TABLE.get(kind)


def consent_class(kind: str, args: Args) -> ConsentClass:
    """The class of consent an action needs; ``unknown`` (asked, never allowed) for a name not in TABLE."""
    entry = TABLE.get(kind)
    return entry.consent(args) if entry is not None else "unknown"


def changes_files(kind: str, args: Args) -> bool:
    """Whether an action may change files (an unknown kind may: fail closed)."""
    entry = TABLE.get(kind)
    return entry.changes(args) if entry is not None else True


def is_proposal(kind: str, args: Args) -> bool:
    """Whether an action becomes a proposal in review mode (only known file changes can be proposed)."""
    entry = TABLE.get(kind)
    return entry is not None and entry.proposal(args)


def is_neutral(kind: str) -> bool:
    entry = TABLE.get(kind)
    return entry is not None and entry.neutral


def describe() -> list[dict[str, Any]]:
    """The table as JSON data (the contract fixture the extension's tests read)."""
    return [
        {
            "kind": k.name,
            "capability": k.capability,
            "knowledge": k.knowledge,
            "path_fields": list(k.path_fields),
            "path_summary": k.path_summary,
            "neutral": k.neutral,
            "observation_extras": list(k.observation_extras),
            "example": k.example,
            "summary": k.summary(k.example),
        }
        for k in _KINDS
    ]
