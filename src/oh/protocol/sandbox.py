"""The agent shell's sandbox, decided without I/O (README "Sandbox", docs/security.md §10).

What this module decides: the levels, which paths a level makes writable or hides, and whether a ``run``
action asks to leave the sandbox. ``runtimes/local/sandbox.py`` checks what exists and turns the plan into
bubblewrap's command line (the wall is bubblewrap: mount, pid and network namespaces, never code of ours).

Levels:

- ``workspace-write`` (the default): the system and HOME read-only; the workspace, the allowed roots and
  the cache directories writable; a private /tmp; secrets hidden; no view of other processes; network off
  unless ``sandbox_network`` is on.
- ``read-only``: the same, but only the private /tmp (and oh's own scratch files) is writable.
- ``off``: the shell runs as you, unconfined.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import WireError
from .sandbox_defaults import DEFAULT_WRITABLE  # noqa: F401 - re-exported

LEVELS = ("workspace-write", "read-only", "off")
DEFAULT_LEVEL = "workspace-write"
FALLBACKS = ("refuse", "unconfined")  # where bubblewrap cannot run


# Hidden at every sandboxed level: an empty, read-only directory (or an empty file) in their place.
HIDDEN = (
    "~/.ssh",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker/config.json",
    "~/.gnupg",
    "~/.password-store",
    "~/.local/share/keyrings",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.pypirc",
    # credential-only files (redteam: all were readable in the sandbox); nothing but a login reads them
    "~/.config/git/credentials",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.gem/credentials",
    "~/.config/hub",
    "~/.vault-token",
    "~/.pgpass",
    "~/.my.cnf",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.config/containers/auth.json",
    "~/.config/composer/auth.json",
    "~/.composer/auth.json",
    "~/.s3cfg",
    "~/.boto",
    "~/.config/rclone",
    "~/.databrickscfg",
    "~/.oci",
    "~/.config/doctl",
    "~/.config/op",
    "~/.huggingface/token",
    "~/.cache/huggingface/token",
    # container engines' sockets: connect() needs no network (a Unix socket at a visible path is reachable
    # with --unshare-net) and the Docker API is root on the host (redteam)
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/podman",
    "/run/containerd",
    "/run/buildkit",
    "~/.docker/run",
    "~/.docker/desktop",
    "~/.colima",
    "~/.lima",
    "~/.rd",
    "~/.orbstack",
)

# What a `run` action says to ask for the unsandboxed shell (docs/protocol.md §3.17).
ESCALATE_ARG = "sandbox"
ESCALATE_VALUE = "off"  # outside the sandbox, as the user
NETWORK_VALUE = "network"  # the same sandbox with the network on (installs: they need nothing else)
ESCALATE_VALUES = (ESCALATE_VALUE, NETWORK_VALUE)
REASON_ARG = "reason"
MAX_REASON = 500


class SandboxError(WireError, ValueError):
    """A bad sandbox setting or escalation request; the message says what is allowed."""


@dataclass(frozen=True)
class Spec:
    """The user's sandbox settings, as the backend, ``oh attach`` and the engine host get them."""

    level: str = DEFAULT_LEVEL
    network: bool = False
    writable: tuple[str, ...] = DEFAULT_WRITABLE
    fallback: str = "refuse"
    bwrap: str = ""  # "" = bwrap on PATH; else this program (tests, unusual installs)

    @property
    def on(self) -> bool:
        return self.level != "off"

    def describe(self) -> str:
        """One line for `oh status`, the live view and the first observation."""
        if not self.on:
            return "off (commands run unconfined, as you)"
        net = "network on" if self.network else "network off"
        what = "workspace writable" if self.level == "workspace-write" else "nothing writable but /tmp"
        return f"{self.level} ({what}, {net}, secrets hidden)"


def level(value: Any) -> str:
    text = str(value).strip().lower()
    if text not in LEVELS:
        raise SandboxError(f"sandbox must be one of {', '.join(LEVELS)} (got {value!r})")
    return text


def spec_from(values: dict[str, Any]) -> Spec:
    """A ``Spec`` from settings-like values (``sandbox``, ``sandbox_network``, ``sandbox_writable``,
    ``sandbox_fallback``, ``sandbox_bwrap``); missing keys take the defaults."""
    lv = level(values.get("sandbox") or DEFAULT_LEVEL)
    net = values.get("sandbox_network", False)
    if isinstance(net, str):
        net = net.strip().lower() in ("1", "true", "yes", "on")
    writable = values.get("sandbox_writable")
    if writable is None:
        writable = DEFAULT_WRITABLE
    elif isinstance(writable, str):
        writable = tuple(p for p in writable.split(os.pathsep) if p.strip())
    fallback = str(values.get("sandbox_fallback") or "refuse").strip().lower()
    if fallback not in FALLBACKS:
        raise SandboxError(f"sandbox_fallback must be one of {', '.join(FALLBACKS)} (got {fallback!r})")
    return Spec(lv, bool(net), tuple(writable), fallback, str(values.get("sandbox_bwrap") or ""))


def expand(path: str, home: str) -> str:
    if path == "~":
        return home
    if path.startswith("~/"):
        return os.path.join(home, path[2:])
    return path


@dataclass(frozen=True)
class Plan:
    """The mounts of one sandbox, in the order they are applied (later ones win on the same path)."""

    readonly: tuple[str, ...] = ()  # bound read-only again (HOME when /tmp's tmpfs covered it)
    writable: tuple[str, ...] = ()  # bound read-write if they exist
    hidden: tuple[str, ...] = ()  # then covered (a directory by an empty one, a file by an empty file)
    scratch: tuple[str, ...] = ()  # last: oh's own files the shell writes, wherever they are
    network: bool = False
    notes: tuple[str, ...] = field(default=())


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/")


def plan(
    spec: Spec,
    *,
    home: str,
    workspace: str,
    roots: tuple[str, ...] = (),
    scratch: tuple[str, ...] = (),
    oh_dirs: tuple[str, ...] = (),
    runtime_dir: str = "",
) -> Plan:
    """The mounts for ``spec``. ``scratch``: oh's own files the shell must write (its run files and
    exports snapshot); ``oh_dirs``: oh's state and config (sessions, token, decider credential);
    ``runtime_dir``: $XDG_RUNTIME_DIR (the session bus, keyring, ssh and gpg agents listen there)."""
    if not spec.on:
        return Plan(network=True)
    hidden = [expand(p, home) for p in HIDDEN] + [d for d in oh_dirs if d]
    if runtime_dir:
        hidden.append(runtime_dir)
    writable: list[str] = []
    if spec.level == "workspace-write":
        writable += [expand(p, home) for p in spec.writable]
        writable += [workspace, *roots]
    # One cover per tree: a hidden path inside another hidden one is hidden already.
    hidden = [h for h in hidden if not any(o != h and _under(h, o) for o in hidden)]
    # A writable path inside a hidden one would reopen it (a cache under ~/.config/gh): refused.
    writable = [w for w in writable if w and not any(_under(w, h) for h in hidden)]
    notes: tuple[str, ...] = ()
    if any(_under(workspace, h) for h in hidden):
        notes = (f"The workspace {workspace} lies in a hidden directory: it is not visible in the sandbox.",)
    # Hidden paths are covered after the writable binds (a workspace that is HOME must not show ~/.ssh);
    # oh's scratch files come last: they may live in /tmp (under the private /tmp) or in oh's state.
    # Paths under /tmp vanish under the private /tmp: HOME, and at read-only the workspace and roots, come back
    # read-only.
    readonly = tuple(p for p in (home, workspace, *roots) if p and (_under(p, "/tmp") or _under(p, "/var/tmp")))
    return Plan(
        readonly,
        tuple(dict.fromkeys(writable)),
        tuple(dict.fromkeys(hidden)),
        tuple(dict.fromkeys(scratch)),
        spec.network,
        notes,
    )


# ------------------------------------------------------------------------------ escalation
def wants_escalation(args: dict[str, Any]) -> bool:
    """A ``run`` action asking for more than the sandbox gives (``args.sandbox`` "off" or "network")."""
    return args.get(ESCALATE_ARG) in ESCALATE_VALUES


def network_only(args: dict[str, Any]) -> bool:
    """The request is for the network alone (``args.sandbox == "network"``): still confined otherwise."""
    return args.get(ESCALATE_ARG) == NETWORK_VALUE


def check_escalation(args: dict[str, Any]) -> str:
    """The reason of an escalation request, checked; SandboxError says how to ask."""
    value = args.get(ESCALATE_ARG)
    if value is None:
        return ""
    if value not in ESCALATE_VALUES:
        raise SandboxError(
            'args.sandbox may only be "network" (this command in the sandbox with the network on) or "off" (outside '
            f"the sandbox), each with the user's consent; got {value!r}"
        )
    reason = args.get(REASON_ARG)
    if not isinstance(reason, str) or not reason.strip():
        raise SandboxError(
            f'args.sandbox "{value}" needs args.reason: say why the command needs more than the sandbox gives '
            '(e.g. "npm ci needs the network")'
        )
    if args.get("is_input"):
        raise SandboxError(f'args.sandbox "{value}" starts a new command; it cannot be input to a running one')
    return reason.strip()[:MAX_REASON]


def unavailable_message(problem: str, fix: str) -> str:
    """The one-time message when bubblewrap cannot run (names the fix and the way to run unconfined)."""
    return (
        f"The agent's shell cannot be sandboxed: {problem}. Fix: {fix}. "
        "Or run it unconfined, knowingly: `oh config set sandbox off` (or `oh config set sandbox_fallback unconfined` "
        "to fall back only where the sandbox cannot run)."
    )
