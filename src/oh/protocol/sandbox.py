"""The agent shell's sandbox, decided without I/O (README "Sandbox", docs/security.md §10).

What this module decides: the levels, which paths a level makes writable or hides, and whether a ``run``
action asks to leave the sandbox. ``runtimes/local/sandbox.py`` checks what exists and turns the plan into
bubblewrap's command line (the wall is bubblewrap: mount, pid and network namespaces, never code of ours).

Levels:

- ``workspace-write`` (the default): the system, HOME and the host's /tmp read-only; the workspace, the
  allowed roots and the cache directories writable; a private writable $TMPDIR (/var/tmp); secrets hidden; no
  view of other processes; network off unless ``sandbox_network`` is on.
- ``read-only``: the same, but only the private $TMPDIR (and oh's own scratch files) is writable.
- ``off``: the shell runs as you, unconfined.
"""

from __future__ import annotations

import dataclasses
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

# Path-bound Unix sockets of processes outside the sandbox (docs/security.md §10). With the network off every
# one that the sandbox would show is covered when a shell starts (runtimes/local/unixsocks.py lists them from
# /proc/net/unix): connect() to a path needs no network, and behind such a socket may be anything that acts
# as you outside (an IDE's IPC that runs commands, a proxy, a container engine). Kept visible: the account
# lookups that glibc's name service switch makes through a daemon (sssd's NSS pipe, systemd's userdb): they
# answer who a uid is (the prompt, `ls -l`, `id`, ssh and git need it where accounts come from a directory),
# and run nothing. nscd is not kept: it also resolves host names (a way out by DNS); glibc falls back to
# its own lookups when its socket refuses.
KEEP_SOCKETS = ("/var/lib/sss/pipes/nss", "/run/systemd/userdb")
# Each cover is one mount in bubblewrap's argv, and bubblewrap's start grows with the square of their number
# (it reads the mount table again for each: +280-410 ms for 500, 4.6-4.9 s for 2,000 here,
# docs/benchmarks.md). So a directory that holds COLLAPSE_AT sockets or more and nothing but sockets is covered
# whole (one empty read-only tmpfs), and past MAX_SOCKETS covers the directory holding the most sockets is
# covered whole, again until they fit (never a top-level one, nor one holding HOME, the workspace or a bind);
# what is still left stays visible, and the shell's first observation says how many.
COLLAPSE_AT = 8
MAX_SOCKETS = 64

# What a `run` action says to ask for the unsandboxed shell (docs/protocol.md §3.17).
ESCALATE_ARG = "sandbox"
ESCALATE_VALUE = "off"  # outside the sandbox, as the user
NETWORK_VALUE = "network"  # the same sandbox with the network on (installs: they need nothing else)
ESCALATE_VALUES = (ESCALATE_VALUE, NETWORK_VALUE)
REASON_ARG = "reason"
MAX_REASON = 500


# What the kernel says when the sandbox refused (issue 41: refusals looked like plain OS errors). Matched in a
# failed command's output; the hint names the way out for the agent (args) and for a person (`oh run` flags).
_WRITE_REFUSED = ("Read-only file system",)
_NETWORK_REFUSED = (
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Name or service not known",
    "Network is unreachable",
    "getaddrinfo failed",
    "Failed to establish a new connection",
    "Couldn't connect to server",
)


def _hidden_named(text: str, home: str) -> str:
    """The first hidden secret (HIDDEN) ``text`` names, as ``~/…``; "" when none."""
    for path in HIDDEN:
        forms = (path, expand(path, home), path.replace("~", "$HOME", 1)) if home else (path,)
        if any(f + suffix in text for f in forms for suffix in ("/", ":", "'", '"', " ", "\n")) or text.endswith(forms):
            return path
    return ""


def refusal_hint(output: str, network: bool, command: str = "", home: str = "") -> str:
    """A note for a failed command whose output shows what the sandbox refuses ("" when it shows nothing): a write
    outside the writable places, the network while it is off, or a hidden secret that "does not exist" (``command``
    or the output names one; ``home`` is the user's). Only a hint: the same words can have other causes."""
    secret = _hidden_named(output + "\n" + command, home) if "No such file or directory" in output else ""
    if secret:
        return (
            f"Sandbox: {secret} is hidden here (oh hides credentials and keys from the agent's shell: it looks empty "
            'or missing). If the command truly needs it, send the run with args sandbox "off" and a reason '
            "(`oh run --unsandboxed REASON`): the user is asked."
        )
    if any(w in output for w in _WRITE_REFUSED):
        return (
            "Sandbox: the write was refused (outside the workspace and its writable directories; $TMPDIR is "
            'writable). To run it outside the sandbox, send the run with args sandbox "off" and a reason '
            "(`oh run --unsandboxed REASON`): the user is asked."
        )
    if not network and any(w in output for w in _NETWORK_REFUSED):
        return (
            'Sandbox: the network is off here. To run it with the network, send the run with args sandbox "network" '
            "and a reason (`oh run --network REASON`): the user is asked."
        )
    return ""


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
        what = "workspace writable" if self.level == "workspace-write" else "nothing writable but $TMPDIR"
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


def resolve(spec: Spec, home: str) -> Spec:
    """``spec`` as the backend resolves it once for every runtime (docs/protocol.md §3.17): each writable path
    absolute (``~`` against ``home``), a relative one dropped (it would mean a different place per shell)."""
    writable = (expand(p, home) for p in spec.writable)
    return dataclasses.replace(spec, writable=tuple(dict.fromkeys(p for p in writable if os.path.isabs(p))))


def to_wire(spec: Spec, hidden: tuple[str, ...] = ()) -> dict[str, Any]:
    """The resolved sandbox as the ``registered`` frame sends it (docs/protocol.md §3.17): everything the
    editor's engine host needs to build the same bubblewrap command line as the local runtime; ``hidden``:
    oh's own directories (the engine hides them besides the ones it knows)."""
    return {
        "level": spec.level,
        "network": spec.network,
        "writable": list(spec.writable),
        "fallback": spec.fallback,
        "bwrap": spec.bwrap,
        "hidden": list(hidden),
    }


def from_wire(obj: Any) -> tuple[Spec, tuple[str, ...]]:
    """``to_wire``'s object back (the engine host's ``--sandbox-spec``), checked: SandboxError names the field."""
    if not isinstance(obj, dict):
        raise SandboxError("the sandbox spec must be a JSON object")
    paths: dict[str, tuple[str, ...]] = {}
    for key in ("writable", "hidden"):
        value = obj.get(key, [])
        if not isinstance(value, list) or not all(isinstance(p, str) and os.path.isabs(p) for p in value):
            raise SandboxError(f"the sandbox spec's {key} must be a list of absolute paths")
        paths[key] = tuple(value)
    if not isinstance(obj.get("network", False), bool) or not isinstance(obj.get("bwrap", ""), str):
        raise SandboxError("the sandbox spec's network must be true or false and its bwrap a string")
    fallback = obj.get("fallback", "refuse")
    if fallback not in FALLBACKS:
        raise SandboxError(f"the sandbox spec's fallback must be one of {', '.join(FALLBACKS)} (got {fallback!r})")
    spec = Spec(level(obj.get("level", DEFAULT_LEVEL)), obj.get("network", False), paths["writable"], fallback)
    return dataclasses.replace(spec, bwrap=obj.get("bwrap", "")), paths["hidden"]


def expand(path: str, home: str) -> str:
    if path == "~":
        return home
    if path.startswith("~/"):
        return os.path.join(home, path[2:])
    return path


@dataclass(frozen=True)
class Plan:
    """The mounts of one sandbox, in the order they are applied (later ones win on the same path)."""

    readonly: tuple[str, ...] = ()  # bound read-only again (HOME when the private $TMPDIR's tmpfs covered it)
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
    # oh's scratch files come last: they may live in /tmp (read-only there) or in oh's state.
    # Paths under the private $TMPDIR (/var/tmp) vanish under its tmpfs: HOME, and at read-only the workspace
    # and roots, come back read-only (the host's /tmp is shown read-only as it is).
    readonly = tuple(p for p in (home, workspace, *roots) if p and _under(p, PRIVATE_TMP))
    return Plan(
        readonly,
        tuple(dict.fromkeys(writable)),
        tuple(dict.fromkeys(hidden)),
        tuple(dict.fromkeys(scratch)),
        spec.network,
        notes,
    )


# ------------------------------------------------------------------------------ temporary files
# The host's /tmp stays visible, read-only (docs/security.md §10 "/tmp"): tools and venvs that live there run.
# Temporary files go to a private, writable $TMPDIR: an empty tmpfs at PRIVATE_TMP (the host's /var/tmp is not
# shown). A write to /tmp itself fails loudly ("Read-only file system"), never silently into a private copy.
PRIVATE_TMP = "/var/tmp"


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


# ------------------------------------------------------------------------------ sockets
def _layers(plan: Plan) -> list[tuple[str, bool]]:
    """The mounts of ``plan`` in the order ``runtimes/local/sandbox.mounts`` applies them: (path, whether the
    host's files show there)."""
    layers = [("/", True), (PRIVATE_TMP, False)]
    layers += [(p, True) for p in (*plan.readonly, *plan.writable)]
    return layers + [(p, False) for p in plan.hidden] + [(p, True) for p in plan.scratch]


def _shown(path: str, layers: list[tuple[str, bool]]) -> bool:
    depth, host = 0, True
    for root, shows in layers:
        size = len(root.rstrip("/"))
        if size >= depth and _under(path, root):
            depth, host = size, shows
    return host


def shown(path: str, plan: Plan) -> bool:
    """Whether a sandbox with ``plan``'s mounts shows the host's ``path``: the mount over its deepest
    ancestor decides (the later one on the same path), in the order ``runtimes/local/sandbox.mounts``
    applies them (``plan.hidden`` as real paths, the way it binds them)."""
    return _shown(path, _layers(plan))


def _visible(live: list[str], plan: Plan) -> list[str]:
    """``live`` as far as the sandbox shows it, KEEP_SOCKETS aside; one decision per directory (only a hidden
    file's cover can be the socket's own path: binds and tmpfs are directories)."""
    layers, files = _layers(plan), set(plan.hidden)
    by_dir: dict[str, bool] = {}
    out = []
    for p in dict.fromkeys(live):
        d = os.path.dirname(p)
        if d not in by_dir:
            by_dir[d] = _shown(d, layers) and not any(_under(d, k) for k in KEEP_SOCKETS)
        if by_dir[d] and p not in files and p not in KEEP_SOCKETS:
            out.append(p)
    return out


@dataclass(frozen=True)
class Covers:
    """What a shell covers so that the Unix sockets of programs outside are out of reach."""

    dirs: tuple[str, ...] = ()  # covered whole: an empty read-only tmpfs
    files: tuple[str, ...] = ()  # covered one by one: /dev/null bound over the socket
    left: tuple[str, ...] = ()  # visible and not covered (past MAX_SOCKETS, in a directory holding a bind)


def _ancestors(path: str) -> list[str]:
    out, d = [], os.path.dirname(path)
    while d not in ("/", ""):
        out.append(d)
        d = os.path.dirname(d)
    return out


def _climb(files: list[str], dirs: list[str], keep: tuple[str, ...], limit: int) -> tuple[list[str], list[str]]:
    """Past ``limit`` covers, the directory holding the most of ``files`` is covered whole, again until they
    fit: never a top-level one (/run, /etc, /home) or one holding a path of ``keep`` (the binds, HOME, the
    workspace)."""
    while files and len(files) + len(dirs) > limit and len(dirs) < limit:
        counts: dict[str, int] = {}
        for f in files:
            for a in _ancestors(f):
                if a.count("/") >= 2 and not any(_under(k, a) for k in keep):
                    counts[a] = counts.get(a, 0) + 1
        if not counts:
            break
        best = max(counts, key=lambda a: (counts[a], a.count("/")))  # ties: the deepest
        dirs = [d for d in dirs if not _under(d, best)] + [best]
        files = [f for f in files if not _under(f, best)]
    return files, dirs


def sockets_to_cover(
    live: list[str],
    plan: Plan,
    only_sockets: frozenset[str] = frozenset(),
    keep: tuple[str, ...] = (),
    limit: int = MAX_SOCKETS,
) -> Covers:
    """Which of the ``live`` sockets (real paths of path-bound sockets of processes outside) a shell with
    ``plan`` covers: with the network on only those under /tmp (name lookups may need a resolver's socket);
    else each one the sandbox would show, but the name-service ones (KEEP_SOCKETS). ``only_sockets``: directories
    that hold nothing but sockets (covered whole from COLLAPSE_AT on); ``keep``: directories never covered whole (HOME,
    the workspace, the shell's directory; the binds are added). Sockets under the writable roots are covered
    too: one there may be a dev server's or an IDE's that runs outside (a socket the agent binds itself lives
    in its own network namespace and is never in the list). At most ``limit`` covers in all."""
    if plan.network:
        # Name lookups may need a resolver's socket; but none listens under /tmp, and /tmp was the sandbox's
        # private one before it was shown: its sockets (tmux's, an ssh agent's, X11's) stay covered, but those in
        # HOME, the workspace and the binds (under /tmp too in a CI checkout), reachable with the network on as
        # anywhere else. The sandbox off has no cover at all (plan() gives it the network and hides nothing).
        shown_before = (*keep, *plan.readonly, *plan.writable, *plan.scratch)
        live = [p for p in live if _under(p, "/tmp") and not any(_under(p, b) for b in shown_before)]
        live = live if plan.hidden else []
    visible = _visible(live, plan)
    by_dir: dict[str, int] = {}
    for p in visible:
        by_dir[os.path.dirname(p)] = by_dir.get(os.path.dirname(p), 0) + 1
    dirs = [d for d, n in by_dir.items() if n >= COLLAPSE_AT and d in only_sockets]
    files = [p for p in visible if os.path.dirname(p) not in dirs]
    files, dirs = _climb(files, dirs, (*keep, *plan.readonly, *plan.writable, *plan.scratch), limit)
    room = max(0, limit - len(dirs))
    return Covers(tuple(dirs), tuple(files[:room]), tuple(files[room:]))
