"""The ``claim`` and ``release`` tools (several agents, issue 37, docs/protocol.md §3.18). Pure: schemas, the
action a call becomes, and the result an observation gives."""

from __future__ import annotations

from typing import Any, Callable

from ..protocol import actions

NAMES = ("claim", "release")

CLAIM_DESCRIPTION = """Claim files, directories or globs for a while, so that other agents working in the same \
workspace cannot write or edit them until the claim ends (their writes there are refused with CLAIMED).

Claim what you are about to change across several steps (a module you refactor); release it when done. A claim \
ends with its ttl, your `release`, your disconnection, or the user's `oh claims release`. The user's own edits are \
never blocked: if the file changes anyway, your next write is refused with STALE and the diff."""

RELEASE_DESCRIPTION = "Release your claims (one by claim_id, or all of them): other agents may write there again."

TOOLS: list[dict[str, Any]] = [
    {
        "name": "claim",
        "title": "Claim paths",
        "description": CLAIM_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "paths": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": 64,
                    "description": "Files, directories (everything beneath) or globs, relative to the workspace.",
                },
                "ttl": {"type": "number", "description": "Seconds the claim holds (default 600, at most 86400)."},
            },
            "required": ["paths"],
            "additionalProperties": False,
        },
        "annotations": {
            "title": "Claim paths",
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": False,
        },
    },
    {
        "name": "release",
        "title": "Release claims",
        "description": RELEASE_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {"claim_id": {"type": "string", "description": "A claim id (k1); none = all yours."}},
            "additionalProperties": False,
        },
        "annotations": {
            "title": "Release claims",
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    },
]


def build_action(name: str, a: dict[str, Any], resolve_path: Callable[[str], str], error: type) -> dict[str, Any]:
    """The oh action for a checked call. ``error``: the ArgumentError class."""
    if name == "claim":
        paths = a["paths"]
        if not paths or len(paths) > 64 or not all(isinstance(p, str) and p for p in paths):
            raise error("claim: 'paths' must list 1 to 64 non-empty paths or globs.")
        return actions.claim([resolve_path(p) for p in paths], ttl=a.get("ttl"))
    return actions.release(a.get("claim_id"))


def result(obs: dict[str, Any], make: Callable[..., Any]) -> Any:
    """A ``claim``/``release`` observation as the tool's result (``make``: tools.ToolResult)."""
    extras = obs.get("extras") or {}
    keep = ("claim_id", "paths", "until", "released")
    return make(str(obs.get("content") or ""), {k: extras[k] for k in keep if k in extras})
