"""Consent settings as ``oh start`` (and ``oh mcp`` starting a backend) pass them to the backend (issue 19),
and "always allow" rules written back to the user's config.

Where rules come from: the user's settings (config.toml, env ``OH_CONSENT_*``). A workspace file
``.oh/consent.toml`` may only tighten them: its ``ask`` and ``deny`` lists are added, its ``allow``
list (and anything else) is ignored with one warning -- a cloned repository must never approve itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

WORKSPACE_FILE = os.path.join(".oh", "consent.toml")


@dataclass
class ConsentPlan:
    level: str = "never"
    rules: dict[str, list[str]] = field(default_factory=lambda: {"allow": [], "ask": [], "deny": []})
    review: bool = False
    timeout: float = 600.0
    # The approvals page (issue 40): only from the user's own settings, never from a workspace file.
    notify: list[str] = field(default_factory=list)
    origin: str = ""
    port: int = 0
    warnings: list[tuple[str, str]] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.level != "never" or any(self.rules.values())


def plan(settings: Any, workspace: str, review: bool) -> ConsentPlan:
    """The effective consent of a new backend. ``review``: the review setting/flag (an alias of the
    ``changes`` level: with never or risky it becomes changes)."""
    level = settings.consent
    if review and level in ("never", "risky"):
        level = "changes"
    rules = {
        "allow": list(settings.consent_allow),
        "ask": list(settings.consent_ask),
        "deny": list(settings.consent_deny),
    }
    out = ConsentPlan(level, rules, review or level in ("changes", "all"), settings.approval_timeout)
    out.notify = list(settings.approval_notify)
    out.origin, out.port = settings.approvals_origin, settings.approvals_port
    _workspace_rules(workspace, out)
    return out


def _workspace_rules(workspace: str, out: ConsentPlan) -> None:
    import tomllib

    from ..protocol.consent import RuleError, parse_rule

    path = os.path.join(workspace, WORKSPACE_FILE)
    try:
        with open(path, "rb") as f:
            table = tomllib.load(f)
    except FileNotFoundError:
        return
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        out.warnings.append(
            ("consent_file", f"warning: {path} was not read ({exc}); only your own consent settings apply.")
        )
        return
    ignored = sorted(k for k in table if k not in ("ask", "deny"))
    if ignored:
        out.warnings.append(
            (
                "consent_file",
                f"warning: {path} may only tighten your consent rules: its {', '.join(ignored)} "
                "entries are ignored (a workspace never allows anything by itself).",
            )
        )
    for verdict in ("ask", "deny"):
        items = table.get(verdict, [])
        if not isinstance(items, list):
            out.warnings.append(("consent_file", f"warning: {path}: {verdict} must be a list of rules; ignored."))
            continue
        for item in items:
            try:
                text = parse_rule(item, verdict).text
            except RuleError as exc:
                out.warnings.append(("consent_file", f"warning: {path}: {exc}; ignored."))
                continue
            if text not in out.rules[verdict]:
                out.rules[verdict].append(text)


def request(session: Any, frame: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """One approvals frame on the control leg with the decider credential (``oh approvals``/``approve``/
    ``reject`` and the live view's y/n/a keys); raises ``launcher.control.BackendUnreachable``."""
    from .control import control

    return control(session, {"type": "approvals", **frame}, token=session.decider_token or None, timeout=timeout)


def remember(rules: list[str]) -> str | None:
    """Append "always allow" rules to the user's ``consent_allow`` (config.toml). Returns the file, or
    None when nothing was new."""
    from ..config import settings as s

    current = list(s.parse_value("consent_allow", s.read_file().get("consent_allow", [])))
    new = [r for r in s.parse_value("consent_allow", list(rules)) if r not in current]  # checked like any setting
    if not new:
        return None
    return str(s.set_in_file("consent_allow", current + new))


# The settings a running backend takes live (`oh config set`): the consent level and rules (issue 41).
LIVE_KEYS = ("consent", "consent_allow", "consent_ask", "consent_deny")


def apply_live(running: list[Any], key: str) -> list[tuple[Any, str | None]]:
    """Send the user's current consent setting ``key`` to each running backend of ``running`` (the level alone, or
    the rules alone: what a backend was started with otherwise stays). Returns (session, None when applied, else
    why not) per backend."""
    from ..config.settings import Settings
    from .control import BackendUnreachable

    out: list[tuple[Any, str | None]] = []
    for session in running:
        p = plan(Settings.load({}), session.workspace, review=False)
        try:
            change = {"level": p.level} if key == "consent" else {"rules": p.rules}
            answer = request(session, {"op": "policy", **change})
        except BackendUnreachable as exc:
            out.append((session, f"unreachable ({exc})"))
            continue
        out.append((session, None if answer.get("type") == "approvals" else str(answer.get("message", answer))))
    return out
