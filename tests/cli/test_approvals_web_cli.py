"""`oh approvals --web | pair | devices | revoke` through real `oh` processes (issue 40): the settings reach the
backend through `oh start` (approvals_port, approval_notify), a printed code pairs a browser over real HTTP
(urllib), the device is listed and revoked, and the notifier the user configured receives the question."""

from __future__ import annotations

import json
import re
import socket
import sys
import urllib.error
import urllib.request

from .conftest import wait_for

RECORDER = "import os, sys, json\nopen(sys.argv[1], 'a').write(json.dumps(dict(os.environ)) + '\\n')\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, headers: dict[str, str]) -> tuple[int, dict, str]:
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def test_pair_devices_revoke_and_the_notifier_through_oh_start(oh, tmp_path):
    port = _free_port()
    script, calls = tmp_path / "rec.py", tmp_path / "calls.jsonl"
    script.write_text(RECORDER)
    oh("config", "set", "approvals_port", str(port), check=0)
    oh.env["OH_APPROVAL_NOTIFY"] = f"{sys.executable} {script} {calls}"
    info = oh.start("local", None, "--consent", "commands")
    page = oh("approvals", "--web", check=0).stdout
    assert f"http://127.0.0.1:{port}/" in page
    out = oh("approvals", "pair", check=0).stdout
    code = re.search(r"pairing code: (\w{5})-(\w{5})", out)
    assert code, out
    status, headers, body = _get(f"http://127.0.0.1:{port}/api/pair", {"X-OH-Pair-Code": "".join(code.groups())})
    assert status == 200 and "HttpOnly" in headers["Set-Cookie"], body
    cookie = headers["Set-Cookie"].split(";")[0]
    assert json.loads(_get(f"http://127.0.0.1:{port}/api/me", {"Cookie": cookie})[2])["paired"]
    devices = oh.json("approvals", "devices", "--json")["devices"]
    assert [d["id"] for d in devices] == ["d1"]
    assert "revoked d1" in oh("approvals", "revoke", "d1", check=0).stdout
    assert not json.loads(_get(f"http://127.0.0.1:{port}/api/me", {"Cookie": cookie})[2])["paired"]
    assert oh("approvals", "revoke", check=2).returncode == 2  # usage: revoke needs an id
    assert oh("approvals", "bogus", check=2).returncode == 2

    agent = oh.agent("run", "echo notified")
    [row] = oh.pending()
    wait_for(lambda: calls.exists() and calls.read_text().strip(), 20, what="the notifier's call")
    [env] = [json.loads(line) for line in calls.read_text().splitlines()]
    assert env["OH_APPROVAL_ID"] == row["id"] and "echo notified" in env["OH_APPROVAL_SUMMARY"]
    sess = oh.session(info["instance_id"])
    assert not any(sess[k] in v for v in env.values() for k in ("token", "decider_token", "editor_token"))
    oh("reject", row["id"], check=0)
    agent.communicate(timeout=60)


def _matrix_from_half_blocks(text: str) -> list[list[bool]]:
    """The modules of a half-block drawing (True = dark). It is inverted (the light modules are drawn, so it reads on
    a dark terminal): '█' two light modules, '▄' a dark one above a light one, '▀' the reverse, a no-break space
    two dark ones."""
    rows: list[list[bool]] = []
    for line in text.split("\n")[:-1]:
        top = [ch in "\xa0▄" for ch in line]
        bottom = [ch in "\xa0▀" for ch in line]
        rows += [top, bottom]
    return rows


def test_the_pairing_qr_code_draws_exactly_the_address():
    import qrcode

    from oh.commands.approvals import qr_text

    url = "https://phone.example.ts.net/"
    drawn = _matrix_from_half_blocks(qr_text(url))
    ref = qrcode.QRCode(border=2, error_correction=qrcode.constants.ERROR_CORRECT_M)
    ref.add_data(url)
    ref.make(fit=True)
    want = ref.get_matrix()
    assert drawn[: len(want)] == want  # an odd count leaves one padding row
    assert url not in qr_text(url) and "pair" not in qr_text(url).lower()


def test_pair_on_a_terminal_shows_a_qr_code_and_piped_none(oh):
    import pexpect

    oh.start("local", None, "--consent", "commands")
    piped = oh("approvals", "pair", check=0).stdout
    assert "█" not in piped and "pairing code:" in piped
    child = pexpect.spawn(
        sys.executable, ["-m", "oh", "approvals", "pair"], cwd=str(oh.workspace), env=oh.env, encoding="utf-8"
    )
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    assert child.exitstatus == 0, child.before
    assert "pairing code:" in child.before and child.before.count("█") > 50, child.before
