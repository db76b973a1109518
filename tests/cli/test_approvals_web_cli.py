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
