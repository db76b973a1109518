"""Numbers two processes agree on, in one place each: WebSocket close codes the backend sends
(docs/protocol.md), and the exit codes of the backend process (`python -m oh.backend`) that its
launcher reads. The CLI's own exit codes are ``oh.fastpath.exits`` (the fast path loads nothing else).

Namespaces of plain ints rather than ``enum.IntEnum``: the fast path imports this module, and
``enum`` (or ``typing``) alone would cost it more than the rest of its imports: no imports here.
"""

from __future__ import annotations


class Close:
    GOING_AWAY = 1001  # the backend is shutting down: do not reconnect
    INTERNAL_ERROR = 1011  # the backend hit an internal error
    TOKEN_ROTATED = 4001  # the connection's token was rotated: re-read the session file, reconnect at once
    BAD_REGISTRATION = 4400  # an editor's register frame was missing or invalid


class BackendExit:
    CANNOT_SERVE = 2  # could not listen on the host/port, or the configuration is unusable (an allowed root is missing)
    DUPLICATE = 3  # a backend already serves this workspace (its flock is held)
    USAGE = 4  # bad arguments, a non-loopback host, an unusable workspace or oh directory
