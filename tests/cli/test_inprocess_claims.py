"""Several agents (issue 37, docs/protocol.md §3.18) from the command line, in-process against a real backend:
`oh read --json` gives the version, `oh write --if-version` refuses a stale write with the diff (exit 6),
`--force` writes anyway; `oh claims` lists an agent's claim and `oh claims release` (the user) ends it."""

from __future__ import annotations

import json

from oh import sessions
from oh.client import SyncClient
from oh.commands import agent, claims

from .inprocess import here, invoke  # noqa: F401 - `here` is a fixture


def test_write_if_version_force_and_claims(here):
    here.start("local")
    f = here.workspace / "app.txt"
    f.write_text("v1\n")
    r = invoke(agent.run_read, path="app.txt", json_=True)
    v1 = json.loads(r.out)["extras"]["version"]
    f.write_text("v2 by the user\n")
    stale = invoke(agent.run_write, path="app.txt", content="mine\n", if_version=v1)
    assert stale.code == 6 and "STALE" in (stale.out + stale.err) and "+v2 by the user" in (stale.out + stale.err)
    assert f.read_text() == "v2 by the user\n"
    assert invoke(agent.run_write, path="app.txt", content="mine\n", if_version=v1, force=True).code == 0
    assert f.read_text() == "mine\n"

    s = sessions.for_workspace(str(here.workspace))
    with SyncClient.connect(s.url, s.token, name="holder") as c:
        assert c.claim(["app.txt"], ttl=600).extras["claim_id"] == "k1"
        listed = invoke(claims.run_claims)
        assert listed.code == 0 and "k1  holder" in listed.out and "app.txt" in listed.out
        refused = invoke(agent.run_write, path="app.txt", content="other\n", force=True)
        assert refused.code == 6 and "CLAIMED" in (refused.out + refused.err) and f.read_text() == "mine\n"
        done = invoke(claims.run_release, claim_id="k1")
        assert done.code == 0 and "k1" in done.out
        assert invoke(claims.run_claims).out == "No claims.\n"
        assert invoke(agent.run_write, path="app.txt", content="other\n").code == 0
    assert invoke(claims.run_release).code == 2  # neither an id nor --all
