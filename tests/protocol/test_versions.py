"""protocol/versions.py: which oh and which extension work together, and the fix each message names."""

from __future__ import annotations

import pytest

from oh import PROTOCOL_VERSION, __version__
from oh.protocol import frames, versions


@pytest.mark.parametrize(
    "oh_v, oh_r, ext_v, ext_r, status, protocol, says, fix",
    [
        # same release, same protocol
        ("0.1.0", (1, 1), "0.1.0", (1, 1), "ok", 1, "", ""),
        # unknown extension version (an old extension that sent none): nothing to compare
        ("0.1.0", (1, 1), "", (1, 1), "ok", 1, "", ""),
        # overlapping ranges: the highest shared protocol
        ("0.3.0", (1, 3), "0.3.0", (2, 5), "ok", 3, "", ""),
        # different releases, shared protocol: a warning naming the side that is behind
        ("0.2.0", (1, 2), "0.1.0", (1, 1), "warn", 1, "the extension is older", "oh vscode install"),
        ("0.1.0", (1, 1), "0.2.0", (1, 2), "warn", 1, "the extension is newer", "Upgrade oh (from a clone"),
        ("0.10.0", (1, 1), "0.9.0", (1, 1), "warn", 1, "older", "oh vscode install"),  # numeric, not string, order
        # disjoint ranges: refused, both directions
        ("0.5.0", (3, 4), "0.1.0", (1, 2), "refuse", None, "too old for oh 0.5.0", "oh vscode install"),
        ("0.1.0", (1, 1), "0.5.0", (2, 3), "refuse", None, "oh 0.1.0 is too old", "from a clone: `git pull`"),
    ],
)
def test_check_table(oh_v, oh_r, ext_v, ext_r, status, protocol, says, fix):
    v = versions.check(oh_v, oh_r, ext_v, ext_r)
    assert (v.status, v.protocol) == (status, protocol)
    assert says in v.message and fix in v.fix
    if status != "ok":
        assert v.fix.endswith(".") and v.message and "oh vscode install" in v.fix  # every problem names the one command


@pytest.mark.parametrize(
    "protocol, rng, expect",
    [
        (1, None, (1, 1)),
        (1, [1, 3], (1, 3)),
        (2, [3, 1], (2, 2)),
        (1, [True, 2], (1, 1)),
        (1, "1-2", (1, 1)),
        (None, None, None),
        (0, None, None),
        (True, None, None),
    ],
)
def test_peer_range(protocol, rng, expect):
    assert versions.peer_range(protocol, rng) == expect


@pytest.mark.parametrize(
    "text, expect", [("0.1.0", (0, 1, 0)), ("v1.2", (1, 2)), ("0.2.0rc1", (0, 2, 0)), ("abc", None), ("", None)]
)
def test_parse_version(text, expect):
    assert versions.parse_version(text) == expect


def _register(**kw):
    return {"type": "register", "protocol": PROTOCOL_VERSION, "workspace_folders": ["/w"], "session": None, **kw}


def test_registration_carries_the_verdict_both_ways():
    # same release: no warning anywhere
    reg = frames.parse_registration(_register(extension_version=__version__, protocol_range=[1, 1]), "i")
    assert "version_check" not in reg.describe()
    answer = frames.registered("e1", "i", "/w", version_check=reg.version_check)
    assert (
        answer["oh_version"] == __version__
        and answer["protocol_range"] == list(frames.PROTOCOL_RANGE)
        and "version_check" not in answer
    )
    # an older release of the extension: registered, with the warning in describe() and in the answer
    reg = frames.parse_registration(_register(extension_version="0.0.1"), "i")
    assert (
        reg.describe()["version_check"]["status"] == "warn"
        and "oh vscode install" in reg.describe()["version_check"]["fix"]
    )
    assert frames.registered("e1", "i", "/w", version_check=reg.version_check)["version_check"]["status"] == "warn"


def test_registration_refused_both_directions():
    # the extension is newer than this backend: upgrade oh
    hi = frames.PROTOCOL_RANGE[1]
    with pytest.raises(frames.RegistrationError) as newer:
        frames.parse_registration(
            _register(protocol=hi + 1, protocol_range=[hi + 1, hi + 2], extension_version="9.0.0"), "i"
        )
    assert newer.value.error_id == "PROTOCOL_MISMATCH" and "upgrade oh" in newer.value.message.lower()
    # the backend is newer than the extension (a backend that dropped protocol 1): oh vscode install
    with pytest.raises(frames.RegistrationError) as older:
        frames.parse_registration(_register(extension_version="0.0.1"), "i", backend=("9.0.0", (hi + 1, hi + 1)))
    assert (
        older.value.error_id == "PROTOCOL_MISMATCH"
        and "oh vscode install" in older.value.message
        and "too old for oh 9.0.0" in older.value.message
    )
