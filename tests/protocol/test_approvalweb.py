"""The approvals page's pure decisions (issue 40): escaping, Host/Origin/cookie checks, the pairing state
machine (single use, TTL, rate limit, revocation) and the page's CSP hashes, with a clock of our own."""

from __future__ import annotations

import base64
import hashlib
import re

from websockets.datastructures import Headers

from oh.protocol import approvalpage as page
from oh.protocol import approvalweb as web


def H(**kv: str) -> Headers:
    h = Headers()
    for k, v in kv.items():
        h[k.replace("_", "-")] = v
    return h


def test_visible_keeps_newlines_and_shows_every_control_bidi_and_invisible_character():
    text = "a\n\tb\x1b[31mred\x07\u202egnp.exe\u2066x\u200by\x00\x9b"
    out = web.visible(text)
    assert out.startswith("a\n\tb<U+001B>[31mred<U+0007><U+202E>gnp.exe<U+2066>x<U+200B>y<U+0000><U+009B>")
    assert web.visible("<b>&</b>") == "<b>&</b>"  # HTML is inert in the page (text nodes), not rewritten here
    assert web.visible("x" * 20, 5) == "xxxxx [... 15 more characters]"
    assert web.visible(None) == ""


def test_summary_is_one_line():
    line = web.summary({"agent": "bot", "what": "rm -rf x\nshutdown\x1b[2J"})
    assert "\n" not in line and line.startswith("bot: rm -rf x shutdown<U+001B>")


def test_origin_of_and_the_site_it_allows():
    assert web.origin_of("https://Box.tailnet.ts.net/") == "https://box.tailnet.ts.net"
    assert web.origin_of("http://h:8080") == "http://h:8080" and web.origin_of("https://h:443") == "https://h"
    for bad in ("ftp://h", "javascript:alert(1)", "https://u:p@h", "h", "https://h:99999"):
        assert web.origin_of(bad) is None, bad
    site = web.Site(4000, "https://box.ts.net")
    assert "127.0.0.1:4000" in site.hosts() and "box.ts.net" in site.hosts()
    assert (
        site.origins() >= {"http://127.0.0.1:4000", "https://box.ts.net"} and "http://box.ts.net" not in site.origins()
    )
    assert site.secure() and site.url() == "https://box.ts.net/"
    assert web.Site(4000).url() == "http://127.0.0.1:4000/"


def test_host_and_origin_checks():
    site = web.Site(4000)
    assert web.check_host(H(Host="127.0.0.1:4000"), site) is None
    assert web.check_host(H(Host="evil.example:4000"), site)
    assert web.check_host(H(), site)
    assert web.check_origin(H(Origin="http://localhost:4000"), site, required=True) is None
    assert web.check_origin(H(), site, required=True)  # a WebSocket always carries Origin in a browser
    assert web.check_origin(H(), site, required=False) is None  # curl with the code may pair
    assert web.check_origin(H(Origin="http://evil.example"), site, required=False)
    assert web.check_origin(H(Origin="null"), site, required=False)
    assert web.check_origin(H(Sec_Fetch_Site="cross-site"), site, required=False)
    assert web.check_origin(H(Sec_Fetch_Site="same-origin"), site, required=False) is None


def test_cookies():
    h = Headers()
    h["Cookie"] = "a=1; oh_device=d1.x"
    h["Cookie"] = "oh_device=d2.y"
    assert web.cookie_value(h) == "d2.y"
    assert web.cookie_value(H(Cookie="other=1")) is None
    plain = web.set_cookie("v", web.Site(1))
    assert "HttpOnly" in plain and "SameSite=Strict" in plain and "Secure" not in plain
    assert "; Secure" in web.set_cookie("v", web.Site(1, "https://x"))


def test_pairing_codes_are_single_use_expire_and_guessing_locks():
    p = web.Pairing(ttl=10)
    code = p.new_code(0)
    assert re.fullmatch(f"[{web.CODE_ALPHABET}]{{{web.CODE_LENGTH}}}", code)
    device, cookie = p.redeem(code[:5].lower() + "-" + code[5:], "Firefox\x1b[2J", 1)  # as typed on a phone
    assert p.device(cookie, 2) is device and device.name == "Firefox<U+001B>[2J"
    assert isinstance(p.redeem(code, "x", 2), str)  # used
    late = p.new_code(0)
    assert isinstance(p.redeem(late, "x", 11), str)  # expired
    good = p.new_code(20)
    for i in range(web.MAX_FAILS - 2):  # the used and expired tries counted as fails too
        assert "wrong" in p.redeem(f"WRONG{i}", "x", 21)
    assert "too many" in p.redeem(good, "x", 22)  # locked, even for the right code
    later = 22 + web.FAIL_WINDOW  # the window passed: a new code works again
    assert not isinstance(p.redeem(p.new_code(later), "x", later + 1), str)


def test_devices_revoke_and_forged_cookies():
    p = web.Pairing(ttl=1000)
    _, cookie = p.redeem(p.new_code(0), "a", 0)
    device_id, _, secret = cookie.partition(".")
    assert p.device(f"{device_id}.{secret}x", 1) is None
    assert p.device(f"d99.{secret}", 1) is None and p.device("", 1) is None and p.device(None, 1) is None
    assert p.revoke(device_id) and p.device(cookie, 2) is None and not p.revoke(device_id)
    p.redeem(p.new_code(0), "b", 0)
    p.new_code(0)
    assert p.revoke_all() == 1 and not p.devices and not p.codes


def test_codes_outstanding_are_bounded():
    p = web.Pairing()
    codes = [p.new_code(0) for _ in range(web.MAX_CODES + 2)]
    assert len(p.codes) == web.MAX_CODES and codes[0] not in p.codes and codes[-1] in p.codes


def test_parse_decision():
    assert web.parse_decision({"op": "allow", "id": "c3", "always": True}) == {
        "type": "approvals",
        "op": "allow",
        "id": "c3",
        "via": "web",
        "always": True,
    }
    assert web.parse_decision({"op": "reject", "id": "c3", "reason": "no", "always": True})["reason"] == "no"
    assert "always" not in web.parse_decision({"op": "reject", "id": "c3", "always": True})
    for bad in ({"op": "list"}, {"op": "allow", "id": "x"}, [], {"op": "pair", "id": "c1"}):
        assert isinstance(web.parse_decision(bad), str)


def test_the_page_csp_allows_exactly_its_inline_script_and_style():
    html = page.PAGE.decode()
    for tag, directive in (("script", "script-src"), ("style", "style-src")):
        body = re.search(f"<{tag}>(.*?)</{tag}>", html, re.S).group(1)
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"{directive} 'sha256-{digest}'" in page.CSP
    assert "unsafe" not in page.CSP and "frame-ancestors 'none'" in page.CSP
    assert "innerHTML" not in html and "eval(" not in html and " on" + "click=" not in html
    assert page.headers()["X-Frame-Options"] == "DENY"
