"""``oh share ssh [USER@]HOST [-- SSH OPTIONS]`` (issue 28): an agent on another machine reaches this backend
through the user's own ``ssh`` (their config, keys, agent, known_hosts, ProxyJump): a remote forward of the
backend's Unix socket, never a port and never a relay of ours.

1. A probe (one ``ssh`` command) finds the remote oh state dir (``OH_HOME``, ``XDG_STATE_HOME/oh`` or
   ``~/.local/state/oh``, the rule the remote ``oh`` discovers by), makes its ``sock`` directory 0700, checks
   that ``oh`` is installed, and the socket path fits the 108-byte limit.
2. The link: ``ssh -R REMOTE_SOCK:LOCAL_SOCK -o ExitOnForwardFailure=yes -o ServerAliveInterval=..
   -o StreamLocalBindUnlink=yes HOST sh -c SCRIPT``. Over the same connection the script waits for the
   forwarded socket, writes the connect file (``<state>/connect.json``, 0600) from one line on its stdin (the
   credential never appears in any argv), says ``oh-link: up``, and waits for stdin to close; then it removes
   the socket and the connect file if they are still its own (a newer link's are left alone).
3. The link is kept: when ``ssh`` exits (network gone, killed, host rebooted) it is started again with backoff,
   and its state (up / reconnecting / down, with the reason) is reported to the backend (``oh status``, the
   live view). Failures that retrying cannot fix (host key mismatch, refused authentication, no ``oh`` on the
   remote, a path over the limit) end the command at once with what to do.
4. Ctrl-C (or SIGTERM, the backend stopping, the share revoked): stdin closes, the remote side cleans up, the
   share is revoked.

In-flight actions when the link drops: the agent's connection breaks, so the backend ends them as for any agent
that disconnects (a running command gets Ctrl-C); the agent gets a clear connection error and decides whether to
send again. oh never re-sends an action by itself, so none runs twice (docs/protocol.md §2.2).
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Any

from .. import programs
from ..errors import CliError
from ..fastpath.streams import Streams
from ..sessions import Session, is_alive
from . import share as shares

SUN_PATH_MAX = 107
KEEPALIVE = ("-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3")
# Nothing of the user's but the share's one socket rides along (docs/security.md §11.6): no agent, no X11, and none of
# the ssh config's LocalForward/RemoteForward/DynamicForward. `-o` values: the first one given wins, so these come
# before the config and the user's options; `-a -x` come last (a flag's last one wins over a `-A` after `--`).
# ClearAllForwardings also clears the command line's `-R` (checked with OpenSSH 9.2), so the share's socket is
# forwarded through the connection's control socket once it is up (`ssh -O forward`, without any config).
NO_FORWARDING = (
    "-o", "ForwardAgent=no", "-o", "ForwardX11=no", "-o", "ForwardX11Trusted=no", "-o", "ClearAllForwardings=yes",
    "-o", "PermitLocalCommand=no", "-o", "Tunnel=no",
)  # fmt: skip
NO_FORWARDING_LAST = ("-a", "-x")
BACKOFF = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
SHARE_CHECK = 5.0  # seconds between checks that the share still exists while the link is up
UP_TIMEOUT = 30.0  # seconds for a link to come up (the connection, the forward, the connect file)

# Prints: the state dir, then "oh=<path of oh or empty>". Makes <state>/sock 0700.
PROBE = r"""
d="${OH_HOME:-}"
if [ -n "$d" ]; then :
elif [ -n "${XDG_STATE_HOME:-}" ]; then d="$XDG_STATE_HOME/oh"
else d="$HOME/.local/state/oh"; fi
if [ -n "$1" ]; then d="$1"; fi
umask 077; mkdir -p "$d/sock" && chmod 700 "$d" "$d/sock" || { echo "oh-probe: cannot-mkdir $d"; exit 0; }
echo "oh-probe: dir=$d"
echo "oh-probe: oh=$(command -v oh || true)"
"""

LINK = r"""
sock="$1"; file="$2"; ino=""
mine() { [ -n "$ino" ] && set -- $(ls -di "$sock" 2>/dev/null) && [ "$1" = "$ino" ]; }
cleanup() { if mine; then rm -f "$sock" "$file"; fi; }
trap 'cleanup; exit 0' HUP INT TERM
i=0
while [ ! -S "$sock" ]; do
  i=$((i+1)); if [ $i -gt 100 ]; then echo "oh-link: no-socket"; exit 3; fi; sleep 0.1
done
set -- $(ls -di "$sock"); ino="$1"
umask 077
IFS= read -r line || exit 4
tmp="$file.$$.tmp"
printf '%s\n' "$line" > "$tmp" && mv -f "$tmp" "$file" || { echo "oh-link: cannot-write $file"; exit 5; }
echo "oh-link: up"
cat > /dev/null
cleanup
"""


class LinkFailed(CliError):
    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def classify(stderr: str, destination: str) -> LinkFailed | None:
    """A failure retrying cannot fix, from ssh's own words; None for a transient one (retry)."""
    low = stderr.lower()
    if "remote host identification has changed" in low or "host key verification failed" in low:
        return LinkFailed(
            f"ssh refused {destination}'s host key (it changed, or is not known yet).",
            "Check it with `ssh " + destination + "` and fix known_hosts (ssh-keygen -R HOST) before sharing.",
        )
    if "permission denied" in low or "too many authentication failures" in low:
        return LinkFailed(
            f"{destination} refused the authentication.",
            "Make `ssh "
            + destination
            + " true` work without a prompt (a key in ssh-agent); oh runs ssh with BatchMode.",
        )
    if "could not resolve hostname" in low:
        return LinkFailed(f"ssh cannot resolve {destination}.", "Check the name (or your ssh config's Host entry).")
    if "remote port forwarding failed" in low or "forwarding failed" in low:
        return LinkFailed(
            f"{destination} refused the socket forward.",
            (
                "The remote sshd needs AllowStreamLocalForwarding yes (and StreamLocalBindUnlink yes to replace a "
                "stale socket)."
            ),
        )
    return None


def _ssh(options: list[str], destination: str, *tail: str) -> list[str]:
    return [_ssh_program(), "-o", "BatchMode=yes", *options, destination, *tail]


def _ssh_program() -> str:
    ssh = programs.find("ssh")
    if ssh is None:
        why = programs.refusals.get("ssh")
        raise LinkFailed(f"no usable `ssh` on this machine{f' ({why})' if why else ''}.", "Install OpenSSH's client.")
    return ssh


def probe(destination: str, options: list[str], remote_dir: str | None) -> tuple[str, str]:
    """(remote state dir, remote oh path or "") or LinkFailed."""
    cmd = _ssh(
        [*NO_FORWARDING, *options, *NO_FORWARDING_LAST],
        destination,
        "sh -c " + shlex.quote(PROBE) + " oh-probe " + shlex.quote(remote_dir or ""),
    )
    try:
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=programs.env()
        )
    except FileNotFoundError:
        raise LinkFailed("no `ssh` on this machine.", "Install OpenSSH's client.") from None
    except subprocess.TimeoutExpired:
        raise LinkFailed(
            f"ssh to {destination} did not answer within 60 s.", "Check `ssh " + destination + " true`."
        ) from None
    fields = dict(
        line[len("oh-probe: ") :].split("=", 1)
        for line in out.stdout.splitlines()
        if line.startswith("oh-probe: ") and "=" in line
    )
    if "dir" not in fields:
        known = classify(out.stderr, destination)
        raise known or LinkFailed(
            (
                f"ssh {destination} failed (exit {out.returncode}): "
                f"{out.stderr.strip()[-300:] or out.stdout.strip()[-300:]}"
            ),
            "Check `ssh " + destination + " true`.",
        )
    return fields["dir"], fields.get("oh", "")


def remote_paths(state_dir: str, share_id: str) -> tuple[str, str]:
    sock = f"{state_dir}/sock/{share_id}.sock"
    if len(os.fsencode(sock)) > SUN_PATH_MAX:
        raise LinkFailed(
            f"the remote socket path {sock} is {len(os.fsencode(sock))} bytes, over the limit of {SUN_PATH_MAX}.",
            (
                "Give a shorter remote directory with --remote-dir (e.g. /tmp/oh-$USER), and point the agent at "
                "it with OH_CONNECT."
            ),
        )
    return sock, f"{state_dir}/connect.json"


class Link:
    """One share kept alive over ssh (restarted with backoff); the state goes to the backend."""

    def __init__(
        self,
        io: Streams,
        session: Session,
        destination: str,
        options: list[str],
        made: shares.Made,
        rsock: str,
        rfile: str,
    ) -> None:
        self.io, self.session, self.destination, self.options = io, session, destination, options
        self.made, self.rsock, self.rfile = made, rsock, rfile
        self.stopping = False
        self.revoked = False
        self.proc: subprocess.Popen | None = None
        self.last_stderr = ""
        self.last_forward = ""  # why the last `ssh -O forward` of the share's socket failed

    def _state(self, state: str, reason: str = "") -> None:
        self.io.note(f"link {state}" + (f": {reason}" if reason else ""))
        shares.report_link(
            self.session,
            self.made.share["share_id"],
            state=state,
            reason=reason,
            host=self.destination,
            since=str(round(time.time())),
        )

    def _line(self) -> str:
        s = self.made.share
        return json.dumps(
            {
                "oh_connect": 1,
                "url": f"unix:{self.rsock}",
                "token": self.made.token,
                "workspace": self.made.agent_workspace,
                "share_id": s["share_id"],
                "where": s["where"],
                "expires_at": s.get("expires_at"),
            }
        )

    def attempt(self) -> tuple[bool, str]:
        """One ssh connection, until it ends: (whether it came up, why it ended)."""
        self.last_forward = ""
        ctl_dir = tempfile.mkdtemp(prefix="oh-ssh-")  # 0700: the connection's control socket
        ctl = os.path.join(ctl_dir, "c")
        cmd = _ssh(
            [
                *NO_FORWARDING,
                "-o",
                "ControlMaster=yes",
                "-o",
                f"ControlPath={ctl}",
                "-o",
                "ControlPersist=no",
                "-o",
                "StreamLocalBindUnlink=yes",
                *KEEPALIVE,
                *self.options,
                *NO_FORWARDING_LAST,
            ],
            self.destination,
            "sh -c " + shlex.quote(LINK) + " oh-link " + shlex.quote(self.rsock) + " " + shlex.quote(self.rfile),
        )
        try:
            self.proc = proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=programs.env(),
            )
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write((self._line() + "\n").encode())  # the credential: on stdin, never in argv
                proc.stdin.flush()
            except OSError:
                pass
            up = self._forward(proc, ctl) and self._wait_up(proc)
        finally:
            shutil.rmtree(ctl_dir, ignore_errors=True)  # forwarded (or failed): nothing else may use the connection
        if up:
            self._state("up")
            checked = time.monotonic()
            while proc.poll() is None and not self.stopping and self._backend_alive() and not self.revoked:
                time.sleep(0.2)
                if time.monotonic() - checked > SHARE_CHECK:  # `oh share revoke` / rotation from elsewhere
                    checked = time.monotonic()
                    self.revoked = not shares.still_active(self.session, self.made.share["share_id"])
        reason = self._end(proc)
        if self.last_forward:
            self.last_stderr += "\n" + self.last_forward
            reason = self.last_forward.splitlines()[-1][:200]
        return up, reason

    def _forward(self, proc: subprocess.Popen, ctl: str) -> bool:
        """The share's socket forwarded over the connection ``proc`` makes, through its control socket ``ctl``, as soon
        as the connection is up (the control socket appears then). False: ssh ended, or the forward was refused
        (its words in ``last_forward``), or it did not come up in UP_TIMEOUT."""
        argv = [
            _ssh_program(), "-F", "/dev/null", "-S", ctl, "-O", "forward", "-R", f"{self.rsock}:{self.made.socket}",
            self.destination,
        ]  # fmt: skip
        deadline = time.monotonic() + UP_TIMEOUT
        while time.monotonic() < deadline and not self.stopping and proc.poll() is None:
            if not os.path.exists(ctl):
                time.sleep(0.05)  # bounded by the deadline: the connection is being made
                continue
            try:
                done = subprocess.run(
                    argv, capture_output=True, text=True, timeout=UP_TIMEOUT, stdin=subprocess.DEVNULL,
                    env=programs.env(),
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                return False
            if done.returncode == 0:
                return True
            self.last_forward = done.stderr.strip()[-300:]
            if proc.poll() is None and "forwarding failed" in self.last_forward.lower():
                os.killpg(proc.pid, signal.SIGTERM)  # the share's socket cannot be forwarded: this link is over
                return False
            time.sleep(0.05)  # the control socket is not listening yet
        return False

    def _wait_up(self, proc: subprocess.Popen) -> bool:
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
        deadline, buf = time.monotonic() + UP_TIMEOUT, b""
        try:
            while time.monotonic() < deadline and not self.stopping:
                if not sel.select(timeout=0.2):
                    if proc.poll() is not None:
                        return False
                    continue
                chunk = os.read(proc.stdout.fileno(), 4096)  # type: ignore[union-attr]
                if not chunk:
                    return False
                buf += chunk
                if b"oh-link: up" in buf:
                    return True
                if b"oh-link: " in buf and b"\n" in buf.split(b"oh-link: ", 1)[1]:
                    return False
            return False
        finally:
            sel.close()

    def _end(self, proc: subprocess.Popen) -> str:
        """Close stdin (the remote side cleans up), wait briefly, kill if needed; ssh's last words."""
        try:
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
        out = proc.stdout.read().decode("utf-8", "replace") if proc.stdout else ""
        self.last_stderr = err
        lines = [ln for ln in (err + out).splitlines() if ln.strip() and "warning: permanently added" not in ln.lower()]
        return lines[-1].strip()[:200] if lines else f"ssh exited ({proc.returncode})"

    def _backend_alive(self) -> bool:
        return is_alive(self.session) and os.path.exists(self.made.socket)

    def keep(self) -> int:
        """Keep the link until stopped; 0 when stopped by the user, 1 when it cannot go on."""
        tries = 0
        while not self.stopping:
            up, reason = self.attempt()
            if self.stopping:
                break
            if not self._backend_alive():
                self._state("down", "the backend stopped")
                return 1
            if self.revoked:
                self.io.note("the share was revoked (`oh share revoke` or `oh token rotate`): link closed.")
                return 1
            known = classify(getattr(self, "last_stderr", ""), self.destination)
            if known is not None and not up:
                self._state("down", str(known))
                raise known
            tries = 0 if up else tries + 1
            delay = BACKOFF[min(tries, len(BACKOFF) - 1)]
            self._state("reconnecting", f"{reason}; again in {delay:g} s")
            end = time.monotonic() + delay
            while time.monotonic() < end and not self.stopping:
                time.sleep(0.1)
        return 0


def run(
    io: Streams,
    session: Session,
    destination: str,
    *,
    ssh_options: list[str],
    ttl: float | None,
    remote_dir: str | None,
    maps: list[str],
    resume: str | None = None,
) -> int:
    if not session.socket:
        raise LinkFailed(
            "this backend has no Unix socket to forward.", "Restart it (`oh stop`, `oh start`); see `oh status`."
        )
    options = [o for o in ssh_options if o != "--"]
    placeholder = "s" + "0" * 8  # a share id's length: paths are checked before anything is made
    if remote_dir:
        remote_paths(remote_dir, placeholder)
    state_dir, remote_oh = probe(destination, options, remote_dir)
    remote_paths(state_dir, placeholder)
    if not remote_oh:
        raise LinkFailed(
            f"{destination} has no `oh` on its PATH: the agent there could not use the share.",
            'Install it there first (README "Install": e.g. copy a wheel built here and `pipx install` it), then run '
            "`oh share ssh` again.",
        )
    agent_ws = next(
        (m.partition("=")[0] for m in maps if m.partition("=")[2].rstrip("/") == session.workspace), session.workspace
    )
    # Before anything of the share is touched (one link per share).
    held = _hold(shares.shares_dir() / resume) if resume and resume.isalnum() else None
    try:
        made = shares.resume(session, resume, "ssh") if resume else None
        made = made or shares.create(
            session,
            where=f"ssh {destination}",
            ttl=ttl,
            maps=maps,
            agent_workspace=agent_ws,
            kind="ssh",
            host=destination,
        )
    except shares.ShareFailed as exc:
        raise LinkFailed(f"{exc}.") from None
    link = Link(io, session, destination, options, made, *remote_paths(state_dir, made.share["share_id"]))

    def stop(*_: Any) -> None:
        link.stopping = True

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    io.note(
        f"share {made.share['share_id']} over ssh to {destination}: the agent there finds it on its own "
        f"({link.rfile}). Ctrl-C ends it."
    )
    try:
        return link.keep()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if link.proc is not None and link.proc.poll() is None:
            link._end(link.proc)
        try:
            shares.revoke(session, made.share["share_id"])
        except shares.ShareFailed:
            pass
        io.note(f"share {made.share['share_id']} ended.")
        if held is not None:
            os.close(held)


def _hold(directory: Any) -> int | None:
    """One link per share: a second `oh share ssh --resume ID` beside a running one would take over the remote
    socket (StreamLocalBindUnlink), the first would take it back when it reconnects, and so on. The lock is held
    for the link's life (released by the kernel if the process dies); None: no such share directory here (the
    backend's answer then says what is wrong)."""
    import fcntl

    try:
        fd = os.open(os.path.join(directory, "link.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LinkFailed(
            "this share is linked already by another `oh share ssh` (still running): two links would take the "
            "remote socket from each other.",
            "End the other one (Ctrl-C where it runs) first, or leave it running: it reconnects by itself.",
        ) from None
    return fd
