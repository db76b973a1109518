"""Which oh and which VS Code extension work together (docs/protocol.md §4, "Versions"). Pure.

At registration the extension sends its version and the protocol versions it speaks
(``protocol_range: [lo, hi]``; an older extension only ``protocol: N``, i.e. ``[N, N]``); the backend
answers with its own (``oh_version``, ``protocol_range``) and, when the pair is not a clean match, this
module's verdict, so every surface (live view, ``oh status``, ``oh doctor``, VS Code's status bar and
notification) shows the same sentence and the same fix:

- the ranges share no version: ``refuse`` (the registration is refused with PROTOCOL_MISMATCH);
- they share one but the releases differ: ``warn`` (it works; the fix makes them one release again);
- same release: ``ok``.

The fix names the side that is behind: an older extension is replaced by ``oh vscode install`` (it
installs the extension that ships with this oh); an older oh is upgraded, or ``oh vscode install``
puts this oh's own extension back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Commands that work today (issue 30 #3): oh is not on PyPI yet, so a clone or a wheel built from one.
UPGRADE_OH = (
    "upgrade oh (from a clone: `git pull`; from a wheel: build the new one and `pipx install --force` it, "
    'README "Install")'
)
INSTALL_EXT = (
    "run `oh vscode install` (it installs the extension that ships with this oh), then reload the VS Code window"
)


@dataclass(frozen=True)
class Verdict:
    status: str  # "ok" | "warn" | "refuse"
    protocol: int | None  # the protocol both speak (the highest shared); None when refused
    message: str = ""
    fix: str = ""

    def describe(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, "fix": self.fix}


def parse_version(v: str) -> tuple[int, ...] | None:
    """``0.1.0`` -> (0, 1, 0); a pre-release tail is ignored (``0.2.0rc1`` -> (0, 2, 0)); None if not numeric."""
    parts: list[int] = []
    for piece in v.strip().lstrip("v").split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break
    return tuple(parts) or None


def peer_range(protocol: Any, protocol_range: Any) -> tuple[int, int] | None:
    """The range a register frame declares: ``protocol_range: [lo, hi]`` when valid, else ``[protocol,
    protocol]`` (an extension from before ranges). None when neither is usable."""

    def is_int(x: Any) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and 0 < x < 1_000_000

    if (
        isinstance(protocol_range, list)
        and len(protocol_range) == 2
        and all(map(is_int, protocol_range))
        and protocol_range[0] <= protocol_range[1]
    ):
        return protocol_range[0], protocol_range[1]
    if is_int(protocol):
        return protocol, protocol
    return None


def _span(r: tuple[int, int]) -> str:
    return str(r[0]) if r[0] == r[1] else f"{r[0]}-{r[1]}"


def check(oh_version: str, oh_range: tuple[int, int], ext_version: str, ext_range: tuple[int, int]) -> Verdict:
    """The verdict on this backend (``oh_*``) and this extension (``ext_*``). ``ext_version`` "" = unknown."""
    lo, hi = max(oh_range[0], ext_range[0]), min(oh_range[1], ext_range[1])
    ext = f"the oh extension {ext_version}" if ext_version else "the oh extension"
    if lo > hi:
        if ext_range[1] < oh_range[0]:
            return Verdict(
                "refuse",
                None,
                (
                    f"{ext} is too old for oh {oh_version}: it speaks protocol {_span(ext_range)}, oh speaks "
                    f"{_span(oh_range)}."
                ),
                INSTALL_EXT[0].upper() + INSTALL_EXT[1:] + ".",
            )
        return Verdict(
            "refuse",
            None,
            (
                f"oh {oh_version} is too old for {ext}: oh speaks protocol {_span(oh_range)}, the extension "
                f"speaks {_span(ext_range)}."
            ),
            UPGRADE_OH[0].upper() + UPGRADE_OH[1:] + "; or " + INSTALL_EXT + ".",
        )
    if not ext_version or ext_version == oh_version:
        return Verdict("ok", hi)
    mine, theirs = parse_version(oh_version), parse_version(ext_version)
    pair = f"oh {oh_version} and {ext} are from different releases (they still work together, protocol {hi})"
    if mine is not None and theirs is not None and theirs > mine:
        return Verdict(
            "warn",
            hi,
            pair + "; the extension is newer.",
            UPGRADE_OH[0].upper() + UPGRADE_OH[1:] + "; or " + INSTALL_EXT + ".",
        )
    return Verdict("warn", hi, pair + "; the extension is older.", INSTALL_EXT[0].upper() + INSTALL_EXT[1:] + ".")
