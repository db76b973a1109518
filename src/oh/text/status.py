"""The text of ``oh status``: one renderer for the fast path (``oh.fastpath.status``) and the typer
command (``oh.commands.status``), so the two can never drift apart. Everything a backend reports
(editor labels, agent names, paths) is backend-, editor- or agent-controlled: every line goes through
``sanitize.visible`` before it is printed."""

from __future__ import annotations

from typing import Any, Callable

from .fmt import editor_label, fmt_duration
from .sanitize import visible

NONE_RUNNING = "no backend is running. Start one with `oh start` (or `oh start --detach`)."


def render_text(
    rows: list[dict[str, Any]], dead: list[dict[str, Any]] | None = None, *, uses_editor: Callable[[Any], bool]
) -> str:
    """``rows``: status entries (reachable or not); ``dead``: backends found dead and cleaned up; ``uses_editor``:
    whether a runtime name sends actions to an editor (``protocol.runtimenames.uses_editor``)."""
    lines = [
        f"✗ {d['instance_id']} died (pid {d['pid']}, workspace {d['workspace']}); log {d['log']}" for d in dead or []
    ]
    if not rows:
        lines.append(NONE_RUNNING)
    for d in rows:
        mark = "●" if d.get("reachable", True) else "○"
        lines.append(
            f"{mark} {d['instance_id']}  {d['runtime']}  {d['url']}  pid {d['pid']}  up "
            f"{fmt_duration(d.get('uptime_s'))}"
        )
        lines.append(f"  workspace  {d['workspace']}")
        if not d.get("reachable", True):
            lines.append(f"  problem    {d.get('error')}")
        editors = d.get("editors") or []
        if uses_editor(d["runtime"]) or editors:
            lines.append(
                "  editors    " + ("none connected (waiting for VS Code)" if not editors else editor_label(editors[0]))
            )
            for e in editors[1:]:
                lines.append("             " + editor_label(e))
            for e in editors:  # oh and the extension from different releases (protocol/versions.py)
                vc = e.get("version_check")
                if isinstance(vc, dict) and vc.get("message"):
                    lines.append(f"  warning    {vc['message']} Fix: {vc.get('fix', '')}")
            refused = d.get("editor_refused")
            if not editors and isinstance(refused, dict) and refused.get("message"):
                lines.append(f"  refused    {refused['message']}")
        if isinstance(d.get("branch"), dict):
            lines.append("  branch     " + branch_label(d["branch"]))
        if isinstance(d.get("sandbox"), dict):
            lines.append("  sandbox    " + sandbox_label(d["sandbox"]))
        if d.get("reachable", True) and "review" in d:
            lines.append("  protects   " + protections(d))
        agents = d.get("agents") or []
        lines.append(
            f"  agents     {len(agents)}"
            + (f" ({', '.join(str(a.get('name', '?')) for a in agents)})" if agents else "")
        )
        for a in agents:  # a worktree per agent (issue 37, §3.19)
            if isinstance(a, dict) and isinstance(a.get("worktree"), dict):
                lines.append(f"  worktree   {a.get('name')} ({a.get('agent_id')}): {a['worktree'].get('branch')}")
        st = d.get("stats") or {}
        if st:
            errors = st.get("errors", 0)
            lines.append(
                f"  actions    {st.get('done', 0)} done, {st.get('pending', 0)} pending, {errors} "
                f"error{'' if errors == 1 else 's'}"
            )
        for c in d.get("claims") or []:  # several agents (§3.18)
            if isinstance(c, dict):
                paths = " ".join(str(p) for p in c.get("paths") or [])
                lines.append(f"  claim      {c.get('claim_id')} {c.get('name')} ({c.get('agent_id')}): {paths}")
        lines += remote_lines(d)
        if d.get("trace"):
            lines.append(f"  trace      {d['trace']}")
        if d.get("trace_warning"):  # read-only or full trace directory: the backend keeps serving
            lines.append(f"  warning    {d['trace_warning']}")
        lines.append(f"  token      fingerprint {d['token_fingerprint']}")
    return "\n".join(visible(line) for line in lines)


def remote_lines(d: dict[str, Any]) -> list[str]:
    """The Unix socket and the shares (issue 28): where agents elsewhere connect, and who may."""
    import time

    lines = []
    if d.get("socket"):
        lines.append(f"  socket     unix:{d['socket']}")
    elif d.get("socket_error"):
        lines.append(f"  socket     none: {d['socket_error']}")
    for s in d.get("shares") or []:
        left = (
            f"expires in {fmt_duration(max(0.0, s['expires_at'] - time.time()))}"
            if s.get("expires_at")
            else "no expiry"
        )
        link = s.get("link") or {}
        state = f" · link {link.get('state')}" + (f" ({link['reason']})" if link.get("reason") else "") if link else ""
        maps = f" · map {', '.join(s['map'])}" if s.get("map") else ""
        lines.append(f"  share      {s['share_id']} {s['where']} · {left}{maps}{state}")
    return lines


def branch_label(b: dict[str, Any]) -> str:
    """Git-branch mode's state (docs/protocol.md §3.12) in a few words; shared with the live view."""
    state = b.get("state")
    if state == "on":
        made = "new" if b.get("created") else "existing"
        return f"{b.get('name')} ({made}" + (f", from {b['previous']})" if b.get("previous") else ")")
    if state == "off":
        return "off (the user chose no branch; changes go to the current branch)"
    target = b.get("name") or "a new oh/<date>-<time>-<agent>"
    line = f"pending: {target} before the first change"
    return line + (f" (last attempt failed: {b['error']})" if b.get("error") else "")


def sandbox_label(sb: dict[str, Any]) -> str:
    """The agent shell's sandbox, one line (README "Sandbox")."""
    text = visible(str(sb.get("summary") or sb.get("level") or "?"))
    if sb.get("fix"):
        text += f" (fix: {visible(str(sb['fix']))})"
    return text


def history_line(hist: Any) -> str | None:
    """`oh start`'s line about history (issue 39: on by default, and how to turn it off), with what it fell back
    to when the workspace is too large or inotify ran out of watches; None when the backend did not say."""
    if not isinstance(hist, dict):
        return None
    if not hist.get("on"):
        return "history: off (`oh config set history true` to turn it on)"
    line = "history: on (`oh config set history false` or `oh start --no-history` to turn it off)"
    note = hist.get("note")
    return visible(line + (f"; {note}" if isinstance(note, str) and note else ""))


def protections(d: dict[str, Any]) -> str:
    """The protections a backend runs with, one line (issue 41: "you cannot see which protections are on"):
    consent level, sandbox (level, network), review, history and branch mode, from its ``status`` answer."""
    consent = d.get("consent")
    parts = [f"consent {consent.get('level', '?')}" if isinstance(consent, dict) else "consent off (nothing asked)"]
    sb = d.get("sandbox")
    if isinstance(sb, dict):
        confined = sb.get("confined", sb.get("level") != "off")
        net = "network on" if sb.get("network") else "network off"
        parts.append(
            f"sandbox {sb.get('level', '?')} ({net})" if confined else f"sandbox {sb.get('level', '?')} (not confining)"
        )
    elif d.get("runtime") == "local":
        parts.append("sandbox off")
    parts.append("review on" if d.get("review") else "review off")
    hist = d.get("history")
    if isinstance(hist, dict):
        use = hist.get("store_bytes")
        top = hist.get("max_bytes")
        size = (
            f" ({use / 1048576:.1f} of {top / 1048576:g} MiB)" if isinstance(use, int) and isinstance(top, int) else ""
        )
        parts.append(("history on" + size) if hist.get("on") else "history off")
        if isinstance(hist.get("note"), str):
            parts.append(f"history: {hist['note']}")
    branch = d.get("branch")
    parts.append(f"branch {branch.get('state', '?')}" if isinstance(branch, dict) else "branch off")
    return visible(" · ".join(str(p) for p in parts))
