"""Path maps for agents that see the workspace elsewhere (issue 28, docs/protocol.md §2.2): pure, a battery."""

from __future__ import annotations

import pytest

from oh.protocol.pathmap import MapError, PathMap, parse_map

MAP = PathMap(
    [parse_map("/workspace=/home/me/proj"), parse_map("/workspace/vendor=/opt/vendor"), parse_map("/data=/srv/d")]
)

TO_HOST = [
    ("/workspace", "/home/me/proj"),
    ("/workspace/", "/home/me/proj"),
    ("/workspace/src/a.py", "/home/me/proj/src/a.py"),
    ("/workspace/vendor/x", "/opt/vendor/x"),  # the longest prefix wins
    ("/workspaces/other", "/workspaces/other"),  # a prefix of a name is not a prefix of the path
    ("/data", "/srv/d"),
    ("/etc/passwd", "/etc/passwd"),  # outside every map: left for the allowed roots to judge
    ("relative/x", "relative/x"),
]


@pytest.mark.parametrize("agent, host", TO_HOST)
def test_to_host(agent, host):
    assert MAP.to_host(agent) == host


@pytest.mark.parametrize(
    "host, agent",
    [
        ("/home/me/proj/src", "/workspace/src"),
        ("/opt/vendor", "/workspace/vendor"),
        ("/home/me/projX", "/home/me/projX"),
    ],
)
def test_to_agent(host, agent):
    assert MAP.to_agent(host) == agent


def test_action_and_observation_fields_both_ways():
    frame = {"id": 1, "action": "run", "args": {"command": "cat /workspace/a", "cwd": "/workspace/src"}}
    mapped = MAP.action_in(frame)
    assert mapped["args"]["cwd"] == "/home/me/proj/src"
    assert mapped["args"]["command"] == "cat /workspace/a"  # command text is never rewritten (documented)
    assert frame["args"]["cwd"] == "/workspace/src"  # the agent's frame is not changed in place
    obs = {"observation": "read", "extras": {"path": "/home/me/proj/a", "metadata": {"working_dir": "/home/me/proj"}}}
    out = MAP.observation_out(obs)
    assert out["extras"]["path"] == "/workspace/a" and out["extras"]["metadata"]["working_dir"] == "/workspace"
    assert MAP.action_in("not a dict") == "not a dict" and MAP.observation_out({"extras": None}) == {"extras": None}


@pytest.mark.parametrize("spec", ["", "/a", "=/b", "/a=", "rel=/b", "/a=rel", "/a=/b\x00"])
def test_bad_maps_are_refused(spec):
    with pytest.raises(MapError):
        parse_map(spec)
