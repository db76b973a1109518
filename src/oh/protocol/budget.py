"""How long an action may take before the backend answers TIMEOUT for it: the pure sum.

The action's own ``timeout`` (or the backend's ``action_timeout``), plus what the runtime adds
before the work starts (the vscode runtime: waiting up to ``editor_timeout`` for an editor), plus
the user's review time for a proposal in review mode (§3.11), plus a grace period so a runtime
that enforces the action's own timeout answers first.
"""

from __future__ import annotations


def action_deadline(
    timeout: float | None,
    default: float,
    *,
    runtime_allowance: float = 0.0,
    review_time: float = 0.0,
    grace: float = 0.0,
) -> float:
    """Seconds from the start of the action to its deadline.

    ``review_time`` is the review timeout when the action is a proposal in review mode, else 0."""
    base = timeout if timeout is not None else default
    return base + runtime_allowance + review_time + grace


def editor_wait(editor_timeout: float, timeout: float | None) -> float:
    """How long the vscode runtime waits for an editor: ``editor_timeout``, but never beyond the
    action's own ``timeout`` (``oh run --timeout 5`` with no editor answers NO_EDITOR after 5 s, not 30)."""
    return editor_timeout if timeout is None else min(editor_timeout, timeout)


def after_editor_wait(timeout: float | None, waited: float) -> float | None:
    """The ``timeout`` the editor gets after ``waited`` seconds of waiting for it: what is left, so the
    action's timeout bounds the whole action (None: no timeout given). Never 0, which means "none"."""
    if timeout is None or waited <= 0:
        return timeout
    return max(timeout - waited, 0.001)
