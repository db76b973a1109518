"""The approvals page's decisions (issue 40, docs/security.md §12), pure: which requests the page's server
answers (Host, Origin, the pairing header, the device cookie), the pairing codes' state machine (single use,
short-lived, rate-limited), the devices and their credentials, and agent-written text made inert and visible.
The page itself is ``protocol.approvalpage``; the I/O shell is ``backend.approvalweb``. Clocks are arguments.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import re
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

COOKIE = "oh_device"
PAIR_HEADER = "X-OH-Pair-Code"
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read off a terminal, typed on a phone
CODE_LENGTH = 10  # 32**10 = 2**50 codes
CODE_TTL = 120.0  # seconds a pairing code is valid
MAX_CODES = 4  # outstanding codes; a new one past this drops the oldest
FAIL_WINDOW = 60.0  # seconds of the failed-attempt window
MAX_FAILS = 5  # failed redeems per window; past it every redeem is refused (even a right code) until it passes
DEVICE_MAX_AGE = 30 * 24 * 3600  # the cookie's Max-Age
MAX_DEVICES = 32
MAX_NAME = 80

# What an agent may not smuggle into what the user reads: C0/C1 controls (ANSI escapes), bidi overrides and
# isolates, zero-width characters, line/paragraph separators. Each is shown as its code point.
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def visible(value: Any, limit: int = 0) -> str:
    """Agent-written text as the page shows it: newlines and tabs kept, every other control, bidi or invisible
    character replaced by ``<U+XXXX>``. HTML is made inert by the page itself (text nodes only, never markup)."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    if limit and len(text) > limit:
        text = text[:limit] + f" [... {len(text) - limit} more characters]"
    return _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def summary(row: dict[str, Any], limit: int = 200) -> str:
    """One line for a notification: who asks what, controls and newlines made visible."""
    line = f"{row.get('agent') or row.get('agent_id') or 'agent'}: {row.get('what') or row.get('kind') or ''}"
    return visible(" ".join(line.split()), limit)


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL (the ``approvals_origin`` setting), lower-cased; None if not one."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        return None
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    default = {"http": 80, "https": 443}[parts.scheme]
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


@dataclass(frozen=True)
class Site:
    """Where the page is: the loopback port it listens on and the public origin the user set (a tunnel)."""

    port: int
    public: str | None = None  # an origin_of() value

    def hosts(self) -> frozenset[str]:
        names = {f"{h}:{self.port}" for h in ("127.0.0.1", "localhost", "[::1]")}
        if self.public:
            names.add(self.public.split("://", 1)[1])
        return frozenset(names)

    def origins(self) -> frozenset[str]:
        names = {f"http://{h}" for h in self.hosts() if not self.public or h != self.public.split("://", 1)[1]}
        if self.public:
            names.add(self.public)
        return frozenset(names)

    def secure(self) -> bool:
        return bool(self.public and self.public.startswith("https://"))

    def url(self) -> str:
        return (self.public or f"http://127.0.0.1:{self.port}") + "/"


def _one(headers: Any, name: str) -> str | None:
    values = headers.get_all(name)
    return values[0] if len(values) == 1 else None


def check_host(headers: Any, site: Site) -> str | None:
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends ``Host: evil.example:PORT``."""
    host = _one(headers, "Host")
    if host is None or host.lower() not in site.hosts():
        return "Host is not this page's (DNS rebinding?)"
    return None


def check_origin(headers: Any, site: Site, required: bool) -> str | None:
    """Same origin only (or the ``approvals_origin``). A WebSocket handshake always carries Origin in a browser,
    so ``required``; a plain GET may lack it, but a browser's cross-site fetch says so in Sec-Fetch-Site."""
    values = headers.get_all("Origin")
    if len(values) > 1 or (required and not values):
        return "Origin missing or repeated"
    if values and values[0].lower() not in site.origins():
        return "cross-origin request"
    fetch_site = headers.get_all("Sec-Fetch-Site")
    if fetch_site and fetch_site[0].lower() not in ("same-origin", "none"):
        return "cross-site request"
    return None


def cookie_value(headers: Any) -> str | None:
    """The ``oh_device`` cookie of a request (the last one if repeated: never a guess between two)."""
    found = None
    for header in headers.get_all("Cookie"):
        for part in header.split(";"):
            name, sep, value = part.strip().partition("=")
            if sep and name == COOKIE:
                found = value.strip()
    return found


def set_cookie(value: str, site: Site, max_age: int = DEVICE_MAX_AGE) -> str:
    secure = "; Secure" if site.secure() else ""
    return f"{COOKIE}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}"


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).digest()


@dataclass
class Device:
    device_id: str
    name: str
    digest: bytes  # sha256 of its secret: the secret itself is kept only by the browser
    created: float
    last_seen: float

    def row(self) -> dict[str, Any]:
        return {"id": self.device_id, "name": self.name, "created": self.created, "last_seen": self.last_seen}


@dataclass
class Pairing:
    """Pairing codes and devices. ``redeem`` turns a live code into a device credential exactly once."""

    ttl: float = CODE_TTL
    codes: dict[str, float] = field(default_factory=dict)  # code -> expiry
    fails: list[float] = field(default_factory=list)
    devices: dict[str, Device] = field(default_factory=dict)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def new_code(self, now: float) -> str:
        self._expire(now)
        while len(self.codes) >= MAX_CODES:
            self.codes.pop(next(iter(self.codes)))
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        self.codes[code] = now + self.ttl
        return code

    def _expire(self, now: float) -> None:
        for code, until in list(self.codes.items()):
            if until <= now:
                del self.codes[code]
        self.fails = [t for t in self.fails if t > now - FAIL_WINDOW]

    def redeem(self, typed: str, name: str, now: float) -> tuple[Device, str] | str:
        """The device and its cookie value, or why not (a wrong/used/expired code, or too many attempts)."""
        self._expire(now)
        if len(self.fails) >= MAX_FAILS:
            return "too many wrong pairing codes: wait a minute, then ask `oh approvals pair` for a new one"
        code = re.sub(r"[\s-]", "", typed or "").upper()[:64]
        match = next((c for c in self.codes if hmac.compare_digest(c.encode(), code.encode())), None)
        if match is None:
            self.fails.append(now)
            return "wrong, used or expired pairing code (`oh approvals pair` prints a new one)"
        del self.codes[match]  # single use
        if len(self.devices) >= MAX_DEVICES:
            self.devices.pop(min(self.devices.values(), key=lambda d: d.last_seen).device_id)
        secret = secrets.token_urlsafe(32)
        device = Device(
            f"d{next(self._ids)}", visible(" ".join(name.split()), MAX_NAME) or "browser", _digest(secret), now, now
        )
        self.devices[device.device_id] = device
        return device, f"{device.device_id}.{secret}"

    def device(self, cookie: str | None, now: float) -> Device | None:
        """The device a cookie value names, if its secret matches (constant-time), else None."""
        if not cookie:
            return None
        device_id, _, secret = cookie.partition(".")
        device = self.devices.get(device_id)
        if device is None or not hmac.compare_digest(device.digest, _digest(secret)):
            return None
        device.last_seen = now
        return device

    def revoke(self, device_id: str) -> bool:
        return self.devices.pop(device_id, None) is not None

    def revoke_all(self) -> int:
        n = len(self.devices)
        self.devices.clear()
        self.codes.clear()
        return n


DECISION_OPS = ("allow", "reject")


def parse_decision(obj: Any) -> dict[str, Any] | str:
    """A page's ``{"op": "allow"|"reject", "id", "always"?, "reason"?}`` as an ``approvals`` control frame
    (``via`` "web"), or what is wrong with it."""
    if not isinstance(obj, dict) or obj.get("op") not in DECISION_OPS:
        return "op must be allow or reject"
    aid = obj.get("id")
    if not isinstance(aid, str) or not re.fullmatch(r"c[0-9]{1,12}", aid):
        return "id must be an approval id like c3"
    frame: dict[str, Any] = {"type": "approvals", "op": obj["op"], "id": aid, "via": "web"}
    if obj["op"] == "allow" and obj.get("always") is True:
        frame["always"] = True
    if obj["op"] == "reject" and isinstance(obj.get("reason"), str):
        frame["reason"] = obj["reason"]
    return frame


_ROW_TEXT = ("agent", "agent_id", "kind", "what", "reason", "detail", "command", "cwd", "security_risk", "created_at")


def page_row(row: dict[str, Any]) -> dict[str, Any]:
    """A pending question as the page gets it: every agent-written string through ``visible``; the whole
    command (never cut: it scrolls), the rule "always" would save exactly as it will be saved."""
    out: dict[str, Any] = {k: visible(row.get(k)) for k in _ROW_TEXT if row.get(k) is not None}
    out["id"] = str(row.get("id", ""))
    out["always"] = [visible(r) for r in row.get("always") or []]
    out["parts"] = [visible(p) for p in row.get("parts") or []]
    out["env"] = {visible(k): visible(v) for k, v in (row.get("env") or {}).items()}
    return out


def recent_row(fields: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "agent_id", "kind", "what", "decision", "by", "at", "reason", "rule")
    return {k: visible(fields.get(k), 2000) for k in keys if fields.get(k) is not None}
