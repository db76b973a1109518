"""The backend's whole configuration, resolved once from the user's settings (issue 38 item 3): what ``oh start``
and ``oh mcp`` (starting a backend) hand ``launcher.process.start_backend``, which sends it as JSON on the
backend's private stdin. A setting the backend takes as it is needs only its ``setting=`` metadata on
``protocol.backendconfig.BackendConfig``; the few derived ones (sandbox, consent, branch, history) are here."""

from __future__ import annotations

import os
from typing import Any

from .. import sessions
from ..config import backendstate
from ..protocol.backendconfig import BackendConfig, copied_settings
from ..protocol.branch import Plan
from ..protocol.consent import Policy, RuleError, parse_rules
from ..protocol.sandbox import spec_from
from .process import StartError

SANDBOX_SETTINGS = ("sandbox", "sandbox_network", "sandbox_writable", "sandbox_fallback", "sandbox_bwrap")


def _policy(consent: Any, workspace: str) -> Policy | None:
    """The consent plan (``launcher.consent.ConsentPlan``) as the backend's policy; a bad rule: StartError."""
    if consent is None:
        return None
    rules = consent.rules
    try:
        parsed = parse_rules(rules.get("allow", ()), rules.get("ask", ()), rules.get("deny", ()))
    except RuleError as exc:
        raise StartError(f"consent rules: {exc}") from None
    return Policy(consent.level, parsed, workspace, os.path.expanduser("~"), backendstate.oh_dirs())


def _branch(flags: dict[str, Any] | None) -> Plan | None:
    """Branch mode as ``commands/_branch.flags`` settled it (None: off)."""
    if not flags or flags.get("branch") != "on":
        return None
    return Plan(flags.get("branch_name") or None, flags.get("on_dirty", "ask"), flags.get("on_not_git", "ask"))


def resolve(
    s: Any,
    workspace: str,
    *,
    allowed_roots: list[str] | None = None,
    review: bool = False,
    consent: Any = None,
    branch: dict[str, Any] | None = None,
) -> BackendConfig:
    """The configuration of a new backend for ``workspace`` from settings ``s`` (config.settings.Settings),
    the allowed roots (settings + --allow), review mode, the consent plan and branch mode's settled flags."""
    workspace = os.path.realpath(workspace)
    config = BackendConfig(
        **{name: s.get(key) for name, key in copied_settings().items()},
        workspace=workspace,
        instance_id=sessions.new_instance_id(),
        allowed_roots=list(allowed_roots) if allowed_roots else None,
        review=review,
        sandbox=spec_from({k: s.get(k) for k in SANDBOX_SETTINGS}),
        branch=_branch(branch),
        consent=_policy(consent, workspace),
        approvals_origin=(consent.origin or None) if consent is not None else None,
        approval_notify=tuple(consent.notify) if consent is not None else (),
        history_max_file=int(s.get("history_max_file") * 1024 * 1024),
        history_max_bytes=int(s.get("history_max_mb") * 1024 * 1024),
    )
    return backendstate.finish(config, trace=bool(s.get("trace")), history=bool(s.get("history")))
