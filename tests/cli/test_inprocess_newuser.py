"""Issue 18 (B5, C7-C17): what a new user hit, called in-process (``run_*``) against real backends.

What needs a real ``oh`` process (exit status of ``oh`` itself, a terminal, signals) is in
test_newuser.py.
"""

from __future__ import annotations

import json

from oh.commands.start import run_start

from .inprocess import here, invoke  # noqa: F401 - `here` is a fixture


# B5: `--allow ''` and a relative `--allow`
def test_empty_allow_is_refused_before_anything_starts(here):
    for empty in ("", "  "):
        r = invoke(run_start, runtime="local", workspace=str(here.workspace), detach=True, allow=[empty])
        assert r.code == 2 and "--allow '' names no directory" in r.err, r
    assert not (here.home / "sessions").exists() or not list((here.home / "sessions").glob("*.json"))


def test_relative_allow_says_what_it_resolved_to(here):
    (here.workspace / "scratch").mkdir()
    r = invoke(run_start, runtime="local", workspace=str(here.workspace), detach=True, json_=True, open_=False, allow=["scratch"])
    assert r.code == 0, r
    info = json.loads(r.out)
    here.started.append(info)
    notes = {w["id"]: w["message"] for w in info["warnings"]}
    assert notes["allow_relative"] == (f"note: --allow scratch is relative: it allows {here.workspace / 'scratch'} "
                                       "(resolved against the current directory).")
    assert here.session(info["instance_id"])["allowed_roots"] == [str(here.workspace), str(here.workspace / "scratch")]
