"""No headless stall (issue 40): with a paired device, a backend nobody watches no longer refuses oh's own
request to leave the sandbox at once (an `ensure` install needing the network); it waits, the user approves on
the approvals page (a real HTTP pairing and the page's WebSocket), and the install runs: its .venv appears."""

from __future__ import annotations

import json
import urllib.request

from websockets.sync.client import connect

from sandboxed import needs_bwrap

from .helpers import AGENT_WAIT

pytestmark = needs_bwrap


def _pair(oh) -> tuple[str, str]:
    answer = json.loads(oh("approvals", "pair", "--json").stdout)
    url = answer["url"].rstrip("/")
    req = urllib.request.Request(url + "/api/pair", headers={"X-OH-Pair-Code": answer["code"]})
    with urllib.request.urlopen(req, timeout=10) as r:
        return url, r.headers["Set-Cookie"].split(";")[0]


def test_ensure_install_waits_for_a_paired_device_and_runs_once_approved_there(oh):
    (oh.workspace / "requirements.txt").write_text("# nothing to fetch: the install creates .venv, the marker\n")
    venv = oh.workspace / ".venv"
    oh.start()  # sandboxed, network off; nobody watches
    url, cookie = _pair(oh)
    proc = oh.agent("ensure", "--only", "python", "--json")
    [row] = oh.pending()  # asked, not refused as unattended
    assert "needs the network" in row["reason"] and not venv.exists(), row
    ws_url = url.replace("http://", "ws://") + "/live"
    with connect(ws_url, origin=url, additional_headers={"Cookie": cookie}) as page:  # type: ignore[arg-type]
        state = json.loads(page.recv(timeout=10))
        assert [q["id"] for q in state["pending"]] == [row["id"]]
        page.send(json.dumps({"op": "allow", "id": row["id"]}))
        for _ in range(20):
            msg = json.loads(page.recv(timeout=30))
            if msg["type"] == "result":
                assert msg["ok"], msg
                break
    out, err = proc.communicate(timeout=AGENT_WAIT * 2)
    assert (venv / "bin" / "python").exists(), (out, err)
