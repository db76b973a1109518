"""Where a new foreground ``run`` goes when its agent's shells are all busy (issue 18 item 3;
docs/protocol.md §3.8). Pure: both runtimes (runtimes/local/group.py; the extension's run.ts mirrors
it in extension/src/shellqueue.ts) ask it.

Agents send parallel tool calls as a matter of course: a ``run`` beyond ``max_shells`` waits, in
arrival order, for a shell of its agent to come free, instead of failing with ``BUSY``. The queue is
bounded (``QUEUE_LIMIT`` waiting runs per agent shell): only a run that finds it full is ``BUSY``. The
wait counts toward the run's own ``timeout`` (it runs with what is left of it; a run whose timeout
passes while it waits is not executed and gets ``TIMEOUT``); a run without a timeout waits at most
``max_wait`` (the local runtime's 240 s), always within the backend's deadline for the action.
"""

from __future__ import annotations

from typing import Literal

QUEUE_LIMIT = 64  # runs of one agent shell key waiting for a free shell

Placement = Literal["run", "wait", "busy"]


def place(in_use: int, max_shells: int, waiting: int, queue_limit: int = QUEUE_LIMIT) -> Placement:
    """``run`` now (a shell is free and nobody waits before it), ``wait`` in the queue, or ``busy``."""
    if in_use < max_shells and waiting == 0:
        return "run"
    if waiting < queue_limit:
        return "wait"
    return "busy"


def left(timeout: float | None, waited: float) -> float | None:
    """What remains of a run's ``timeout`` after ``waited`` seconds in the queue (None: no timeout)."""
    return None if timeout is None else timeout - waited


def queue_full_message(command: str, in_use: int, max_shells: int, waiting: int) -> str:
    return (
        f'Your command "{command[:200]}" was NOT executed: {in_use} command(s) already run in this agent\'s shells '
        f"(max_shells = {max_shells}) and {waiting} more wait for a free shell (the queue holds {waiting}). "
        'Wait for some to finish, interrupt one (is_input "C-c" with its args.job_id, or job op cancel), '
        "or raise the max_shells setting."
    )


def waited_out_message(command: str, waited: float, max_shells: int) -> str:
    return (
        f'Your command "{command[:200]}" was NOT executed: it waited {waited:.3g} s for one of this agent\'s '
        f"{max_shells} shells (max_shells) to come free, which used up its timeout. Send it again with a longer "
        "timeout, or wait for the running commands first."
    )
