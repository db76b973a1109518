"""The agent shell's output, parsed: ``MarkerParser.feed(bytes) -> events``. Pure (no I/O, no clock).

The shell's pty carries three things interleaved: what programs print, oh's markers (OSC sequences
``ESC ] 6973 ; <nonce> ; <kind> ... BEL`` that the init scripts in ``shellinit/`` print), and the
terminal's echo of what oh typed (the trigger line, ``is_input`` text, a key's ``^C``). The parser
splits them into events, whatever the byte boundaries of the reads: any split of the same stream gives
the same events (adjacent ``View``/``Output`` chunks joined), which tests/runtimes/test_markers.py checks
for every split point of each sample.

- ``View(data)``: bytes for the live view (everything but markers and the trigger line's echo);
- ``Output(data)``: bytes of the running command's output (between its ``S`` and ``D`` markers, the echo
  of typed input removed when the output really starts with it);
- ``Ready(eu, rc_status)``, ``Started()``, ``Done(status, cwd, path, ended)``, ``Exited(status, cwd)``,
  ``Exec()`` and ``Boot()`` (an ``exec`` in a command, a shell it started that took over).
"""

from __future__ import annotations

from dataclasses import dataclass

OSC = b"\x1b]6973;"
SEP = "\x1f"
STARTUP_KEEP = 4096  # bytes of the rc files' output kept for the log when the shell fails to start


@dataclass(frozen=True)
class View:
    data: bytes


@dataclass(frozen=True)
class Output:
    data: bytes


@dataclass(frozen=True)
class Ready:
    eu: bool  # the rc files had turned on `set -e` / `set -u` (oh turned them off)
    rc_status: str  # the status the user's rc file ended with


@dataclass(frozen=True)
class Started:
    pass


@dataclass(frozen=True)
class Done:
    status: int
    cwd: str
    path: str | None
    ended: bool  # a command was running and this ends it (else: a prompt with nothing running)


@dataclass(frozen=True)
class Exited:
    status: int
    cwd: str


@dataclass(frozen=True)
class Exec:
    """The running command is about to ``exec`` a program (the shell may be replaced); ``token`` is in that
    program's environment (``__oh_boot``)."""

    token: str


@dataclass(frozen=True)
class Boot:
    """A shell that the command exec'd took over (oh's hooks are in it): its output so far was its startup."""


Event = View | Output | Ready | Started | Done | Exited | Exec | Boot


def prefix_hold(data: bytes, needle: bytes) -> int:
    """Length of the longest tail of ``data`` that is a proper prefix of ``needle``."""
    for k in range(min(len(needle) - 1, len(data)), 0, -1):
        if data.endswith(needle[:k]):
            return k
    return 0


class MarkerParser:
    """State: ``startup`` -> ``idle`` (ready) <-> ``command`` (between S and D)."""

    def __init__(self, nonce: bytes) -> None:
        self.head = OSC + nonce + b";"
        self.state = "startup"
        self.startup_out = b""  # what the rc files printed (bounded)
        self._buf = b""  # an unfinished marker (or a tail that may start one)
        self._echo_view = b""  # the trigger line's echo, still expected
        self._view_hold = b""
        self._echo_agent = b""  # typed input's echo, still expected at the start of the output
        self._agent_hold = b""

    # ------------------------------------------------------------------ what oh typed
    def expect_trigger(self, echo: bytes) -> None:
        """A trigger line was typed: remove its echo from the view until the command starts."""
        self._echo_view = echo
        self._view_hold = b""
        self._echo_agent = b""
        self._agent_hold = b""

    def expect_input(self, echo: bytes) -> None:
        """Input was typed into the running command: drop its echo if the output starts with it."""
        self._echo_agent = echo

    def release(self, final: bool = False) -> list[Output]:
        """Output held back as a possible echo, given up: ``final``, or nothing is expected any more."""
        if self.state != "command" or not self._agent_hold or (self._echo_agent and not final):
            return []
        data, self._agent_hold = self._agent_hold, b""
        return [Output(data)]

    # ------------------------------------------------------------------ parsing
    def feed(self, data: bytes) -> list[Event]:
        out: list[Event] = []
        buf = self._buf + data if self._buf else data
        self._buf = b""
        head = self.head
        while buf:
            i = buf.find(b"\x1b]")
            while i >= 0 and not head.startswith(buf[i : i + len(head)]) and not buf.startswith(head, i):
                i = buf.find(b"\x1b]", i + 2)
            if i < 0:  # no marker start: hold back a tail that could begin one
                hold = prefix_hold(buf, head)
                self._text(buf[: len(buf) - hold], out)
                self._buf = buf[len(buf) - hold :]
                return out
            if i > 0:
                self._text(buf[:i], out)
                buf = buf[i:]
            end = buf.find(b"\x07", len(head)) if len(buf) >= len(head) else -1
            if end < 0:
                self._buf = buf
                return out
            self._marker(buf[len(head) : end].decode("utf-8", "surrogateescape"), out)
            buf = buf[end + 1 :]
        return out

    def _text(self, data: bytes, out: list[Event]) -> None:
        if not data:
            return
        if self.state == "startup" and len(self.startup_out) < STARTUP_KEEP:
            self.startup_out += data[: STARTUP_KEEP - len(self.startup_out)]
        if self.state != "command":
            self._view_text(data, out)
            return
        out.append(View(data))
        if self._echo_agent:
            # The echo of typed input comes first (the line discipline echoes before the program reads);
            # drop it from the agent's copy only if the output really starts with it.
            data = self._agent_hold + data
            self._agent_hold = b""
            want = self._echo_agent
            if data.startswith(want):
                data = data[len(want) :]
                self._echo_agent = b""
            elif want.startswith(data):
                self._agent_hold = data
                return
            else:
                self._echo_agent = b""
        if data:
            out.append(Output(data))

    def _view_text(self, data: bytes, out: list[Event]) -> None:
        if self._echo_view:
            data = self._view_hold + data
            self._view_hold = b""
            j = data.find(self._echo_view)
            if j >= 0:
                data = data[:j] + data[j + len(self._echo_view) :]
                self._echo_view = b""
            else:
                hold = prefix_hold(data, self._echo_view)
                if hold:
                    self._view_hold, data = data[-hold:], data[:-hold]
        if data:
            out.append(View(data))

    def _marker(self, body: str, out: list[Event]) -> None:
        kind, _, rest = body.partition(";")
        if kind == "R":
            eu, _, rcst = rest.partition(";")
            self.state = "idle"
            out.append(Ready(eu == "1", rcst))
        elif kind == "S":
            if self._view_hold:
                out.append(View(self._view_hold))
                self._view_hold = b""
            self._echo_view = b""
            self.state = "command"
            out.append(Started())
        elif kind == "E":
            out.append(Exec(rest))
        elif kind == "B":
            out.append(Boot())
        elif kind in ("D", "X"):
            fields = rest.split(SEP)
            try:
                status = int(fields[0] or "-1")
            except ValueError:
                status = -1
            cwd = fields[1] if len(fields) > 1 else ""
            if kind == "X":
                out.append(Exited(status, cwd))
                return
            ended = self.state == "command"
            if ended:
                out.extend(self.release(final=True))
                self._echo_agent = b""
                self.state = "idle"
            out.append(Done(status, cwd, fields[2] if len(fields) > 2 else None, ended))
